"""The one argv builder and runner for every git command this plugin runs.

Hardening in one place is hardening everywhere:

- the absolute path of `git` is resolved once, when the plugin loads; there is no shell;
- the environment is rebuilt: inherited `GIT_*` variables (GIT_DIR, GIT_CONFIG_*, GIT_SSH,
  GIT_EXTERNAL_DIFF, ...) are dropped, prompts and lazy fetches are off, and read-only
  commands take no optional locks;
- the same `-c` settings go on every command: no fsmonitor, no pager, no external diff, no
  credential helper, no transport, no automatic gc/maintenance;
- repository hooks are programs: every command gets `core.hooksPath=/dev/null` (no hook can be
  found there), set last so nothing before it can undo it, unless the command is one a user
  expects hooks from *and* the caller was found to hold `starts-process` for the repository
  (then, under a directory-confined grant, a directory of confining wrappers, `hookconfine`);
- values that come from a caller go after `--end-of-options` (refs, revisions, names) or after
  `--` (paths, with `--literal-pathspecs` so pathspec magic is not interpreted); literal
  options are written by this plugin only.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from meith_core import CancelToken, ErrorCode, PlantedGitReport, ToolError
from meith_plugins_git.discovery_cache import DiscoveryCache, system_config_candidates
from meith_plugins_git.process import Completed, run_program

#: `--end-of-options` appeared in git 2.24; older git cannot be run safely.
MIN_GIT_VERSION: Final = (2, 24)
#: Most bytes of git stdout read for one command.
MAX_OUTPUT_BYTES: Final = 64 * 1024 * 1024

#: Settings given to every git command, whatever the repository's config says.
BASE_CONFIG: Final[tuple[tuple[str, str], ...]] = (
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.quotepath", "false"),
    ("color.ui", "false"),
    ("diff.external", ""),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("maintenance.auto", "false"),
    ("gc.auto", "0"),
    # Each of these would make git start another program (or another git in a submodule,
    # whose own config was never looked at):
    ("log.showSignature", "false"),
    ("submodule.recurse", "false"),
    ("status.submoduleSummary", "false"),
    ("diff.submodule", "short"),
)

#: Where git finds no hooks: `<this>/pre-commit` is never an executable file.
NO_HOOKS: Final = "/dev/null"

#: Inherited GIT_* variables that only narrow what git does; every other one is dropped.
_KEPT_GIT_VARS: Final = frozenset({"GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"})


@dataclass(frozen=True, slots=True)
class Profile:
    """How much a git command may do besides its own job."""

    name: str
    #: False: GIT_OPTIONAL_LOCKS=0, so a read never rewrites the index behind the user.
    optional_locks: bool
    #: False: never runs hooks. True: runs them only where the caller may start processes.
    hooks: bool


READ_ONLY: Final = Profile("read-only", optional_locks=False, hooks=False)
#: Plumbing writes (index, refs, work tree files): never run hooks.
WRITE: Final = Profile("write", optional_locks=True, hooks=False)
#: Porcelain a user expects hooks from (commit, switch, worktree add): hooks run as git runs
#: them, when the command is also given `hooks=True` (the caller may start processes there).
WRITE_WITH_HOOKS: Final = Profile("write-with-hooks", optional_locks=True, hooks=True)


class GitUnavailable(RuntimeError):
    """git is missing or too old to be run safely; the plugin refuses to load."""


class GitFailed(ToolError):
    """A git command exited with a status the caller did not accept."""

    def __init__(self, command: str, result: Completed, message: str | None = None) -> None:
        err = result.stderr_text
        out = result.stdout.decode("utf-8", "replace").strip()
        text = message or _first_lines(err or out) or f"git {command} failed"
        super().__init__(
            ErrorCode.TOOL_FAILED,
            text,
            {"command": f"git {command}", "exitCode": result.returncode, "stderr": err[-4000:]},
        )
        self.result = result


def _first_lines(text: str, limit: int = 6) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return "\n".join(lines[:limit])


def parse_version(text: str) -> tuple[int, int, int]:
    match = re.search(r"git version (\d+)\.(\d+)(?:\.(\d+))?", text)
    if match is None:
        raise GitUnavailable(f"cannot read the git version from {text.strip()!r}")
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def hardened_environment(base: Mapping[str, str]) -> dict[str, str]:
    """The environment every git command starts from (profile variables are added per call)."""
    env = {k: v for k, v in base.items() if not k.startswith("GIT_") or k in _KEPT_GIT_VARS}
    # Messages in English so failures can be recognised, without changing the character set.
    if "LC_ALL" in env:
        env.setdefault("LANG", env.pop("LC_ALL"))
    env["LC_MESSAGES"] = "C"
    env["LANGUAGE"] = "C"
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_NO_LAZY_FETCH"] = "1"
    env["GIT_PROTOCOL_FROM_USER"] = "0"
    env["GIT_PAGER"] = "cat"
    env["PAGER"] = "cat"
    return env


def _probe_system_config(path: str, env: Mapping[str, str]) -> list[str]:
    """Where this git reads its system config (for the discovery cache to watch): git names
    the file as an origin, or as the one it could not read."""
    try:
        done = subprocess.run(
            [path, "config", "--system", "--list", "--show-origin", "--null"],
            env=env,
            cwd="/",
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return system_config_candidates(path, b"", "")
    return system_config_candidates(path, done.stdout, done.stderr.decode("utf-8", "replace"))


def _check_arg(value: str) -> None:
    if "\0" in value:
        raise ToolError(ErrorCode.VALIDATION_ERROR, "arguments must not contain NUL bytes")


class Git:
    """The git executable, resolved and checked once; builds and runs every command."""

    def __init__(
        self,
        path: str,
        version: tuple[int, int, int],
        env: Mapping[str, str],
        system_configs: Sequence[str] = ("/etc/gitconfig",),
    ) -> None:
        self.path = path
        self.version = version
        self._env = dict(env)
        #: What discovery learnt, per directory, while nothing it read has changed.
        self.discoveries = DiscoveryCache(self._env, system_configs)
        #: Paths a confined hook must not see besides meith's home: the runtime's socket (set
        #: when the runtime starts).
        self.hidden_paths: tuple[str, ...] = ()
        #: Where git metadata planted by confined hooks is reported (bound at start-up).
        self.report_planted: Callable[[PlantedGitReport, Mapping[str, Any]], None] | None = None

    @classmethod
    def locate(cls, environ: Mapping[str, str] | None = None) -> Git:
        """Find git on PATH and check its version, or raise GitUnavailable."""
        environ = dict(os.environ if environ is None else environ)
        # Only absolute PATH entries: "." (or any relative entry) would let the directory the
        # runtime happens to start in supply its own `git`.
        search = os.pathsep.join(
            p for p in environ.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(p)
        )
        found = shutil.which("git", path=search)
        if found is None:
            raise GitUnavailable("git was not found on PATH")
        path = os.path.abspath(found)
        env = hardened_environment(environ)
        try:
            done = subprocess.run(
                [path, "--version"], env=env, capture_output=True, timeout=10, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GitUnavailable(f"cannot run {path}: {exc}") from None
        version = parse_version(done.stdout.decode("utf-8", "replace"))
        if version[:2] < MIN_GIT_VERSION:
            have = ".".join(map(str, version))
            need = ".".join(map(str, MIN_GIT_VERSION))
            raise GitUnavailable(
                f"git {have} at {path} is older than {need} (no --end-of-options); the git "
                "tools refuse to run without it"
            )
        return cls(path, version, env, _probe_system_config(path, env))

    def at_least(self, major: int, minor: int) -> bool:
        return self.version[:2] >= (major, minor)

    # -- building -----------------------------------------------------------------------

    def argv(
        self,
        command: Sequence[str],
        options: Sequence[str] = (),
        *,
        operands: Sequence[str] = (),
        paths: Sequence[str] | None = None,
        profile: Profile,
        config: Iterable[tuple[str, str]] = (),
        end_of_options: bool = True,
        hooks: bool = False,
        hooks_path: str | None = None,
    ) -> list[str]:
        """`git <global options> <command> <options> --end-of-options <operands> -- <paths>`.

        `command` and `options` are literals written in this plugin; anything a caller
        supplied goes in `operands` or `paths`. `end_of_options=False` is for the few
        commands that do not parse `--end-of-options` (`check-ref-format`); their operands
        are then refused if they could be read as options. Hooks run only when both
        `profile.hooks` and `hooks` say so, and then from `hooks_path` when one is given
        (wrappers that confine them).
        """
        args = [self.path, "--no-pager"]
        if paths is not None:
            args.append("--literal-pathspecs")
        settings = list(BASE_CONFIG)
        settings.extend(config)
        if not (profile.hooks and hooks):
            settings.append(("core.hooksPath", NO_HOOKS))
        elif hooks_path is not None:
            settings.append(("core.hooksPath", hooks_path))
        for key, value in settings:
            args += ["-c", f"{key}={value}"]
        args += command
        args += options
        if operands:
            if end_of_options:
                args.append("--end-of-options")
            else:
                for value in operands:
                    if value.startswith("-"):
                        raise ToolError(
                            ErrorCode.VALIDATION_ERROR, f"{value!r} must not begin with '-'"
                        )
            args += operands
        if paths is not None:
            args.append("--")
            args += paths
        for value in args:
            _check_arg(value)
        return args

    def environment(
        self, profile: Profile, extra: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        env = dict(self._env)
        if not profile.optional_locks:
            env["GIT_OPTIONAL_LOCKS"] = "0"
        if extra:
            for key, value in extra.items():
                _check_arg(value)
                env[key] = value
        return env

    # -- running ------------------------------------------------------------------------

    async def run(
        self,
        command: Sequence[str],
        options: Sequence[str] = (),
        *,
        cwd: str,
        profile: Profile,
        operands: Sequence[str] = (),
        paths: Sequence[str] | None = None,
        config: Iterable[tuple[str, str]] = (),
        end_of_options: bool = True,
        hooks: bool = False,
        hooks_path: str | None = None,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
        max_output: int = MAX_OUTPUT_BYTES,
        ok_codes: Sequence[int] = (0,),
        cancel: CancelToken | None = None,
        on_kill: Callable[[], None] | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> Completed:
        """Run one git command; a status outside `ok_codes` raises GitFailed."""
        argv = self.argv(
            command,
            options,
            operands=operands,
            paths=paths,
            profile=profile,
            config=config,
            end_of_options=end_of_options,
            hooks=hooks,
            hooks_path=hooks_path,
        )
        result = await run_program(
            argv,
            cwd=cwd,
            env=self.environment(profile, env),
            stdin=stdin,
            max_stdout=max_output,
            cancel=cancel,
            on_kill=on_kill,
            pass_fds=pass_fds,
        )
        if result.returncode not in ok_codes:
            raise GitFailed(" ".join(command), result)
        return result
