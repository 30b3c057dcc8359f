"""Finding the repository a call is about, and deciding whether to trust its layout.

`cwd` may be any directory inside a work tree; git's own discovery finds the repository (one
`git rev-parse`, run alongside `git config --list` so the repository's program-valued
settings can be neutralised, see `repoconfig`). What they print is reused while nothing they
read has changed (`discovery_cache`). Then, on every call, the layout is checked:

- the (symlink-resolved) `cwd` must lie inside the work tree git reports;
- **the `.git` rule**: the work tree must hold the `.git` that names the git dir. A `.git`
  directory must be the git dir itself (a symlinked `.git` that leads elsewhere is refused).
  A `.git` *file* is followed only when the git dir it names points back at this work tree:
  a linked worktree (`<common>/worktrees/<name>`, whose `gitdir` file names this `.git`) or a
  submodule / separate git dir (whose `core.worktree` is this directory). Any other `.git`
  file is refused, so a planted `.git` file cannot send reads or writes into another
  repository's objects, index and refs. A `core.worktree` that moves the work tree away from
  the `.git` is refused the same way;
- when the grant that allowed the call carries a `cwd_prefix` (`ctx.grant_scope`), the work
  tree, the git dir and the common dir must all lie inside it.

Hooks are decided here too: a command that would run them may do so only when the caller
already holds `starts-process` for the work tree (`hooks_allowed`), and then from the
repository's own hooks directory (or the user's `core.hooksPath`), never from one the
repository's config names; under a directory-confined `starts-process` grant they run
confined to that directory (`hookconfine`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

import anyio.to_thread

from meith_core import (
    CancelToken,
    ErrorCode,
    GitMetadataWatch,
    ToolContext,
    ToolError,
    gitdir_of,
    is_within,
)
from meith_plugins_git.discovery_cache import Found
from meith_plugins_git.hookconfine import HookConfinement, confined_hooks_dir
from meith_plugins_git.process import Completed, gather
from meith_plugins_git.repoconfig import (
    USER_SCOPES,
    ConfigEntry,
    neutralising_overrides,
    parse_config_list,
)
from meith_plugins_git.runner import BASE_CONFIG, MAX_OUTPUT_BYTES, Git, GitFailed, Profile

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
NOT_A_REPO = "Not inside a git repository."

_NOT_REPO_MESSAGES = ("not a git repository", "must be run in a work tree")


@dataclass(frozen=True, slots=True)
class Repo:
    """One repository as seen by one call: paths resolved, config overrides, cancellation."""

    git: Git
    root: str
    git_dir: str
    common_dir: str
    head: str | None
    config: tuple[tuple[str, str], ...] = ()
    cancel: CancelToken | None = field(default=None, compare=False)
    #: The caller holds `starts-process` for the work tree: hook-running commands run hooks.
    hooks_allowed: bool = False
    #: Where plain git would look for hooks here (to say which ones a command skipped).
    hooks_dir: str = ""
    #: Where hooks come from when they run (the repository's own, or the user's
    #: `core.hooksPath`), and how they are confined (None: the holding grant is not confined).
    run_hooks_dir: str = ""
    hook_confinement: HookConfinement | None = None

    @property
    def base(self) -> str:
        """What the work tree is compared with: HEAD, or the empty tree before the first commit."""
        return self.head or EMPTY_TREE

    async def run(
        self,
        command: Sequence[str],
        options: Sequence[str] = (),
        *,
        profile: Profile,
        operands: Sequence[str] = (),
        paths: Sequence[str] | None = None,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
        max_output: int = MAX_OUTPUT_BYTES,
        ok_codes: Sequence[int] = (0,),
        end_of_options: bool = True,
    ) -> Completed:
        """Run git in the work tree root with this repository's neutralising settings."""
        started = time.time()
        # A writer on the real index may leave index.lock behind if it has to be killed.
        on_kill = None
        if profile.optional_locks and not (env and "GIT_INDEX_FILE" in env):
            on_kill = lambda: self._remove_index_lock_since(started)  # noqa: E731
        confine = (
            profile.hooks
            and self.hooks_allowed
            and self.hook_confinement is not None
            and self.hook_confinement.enforced
        )
        with contextlib.ExitStack() as stack:
            hooks_path = None
            watch = None
            if confine:
                assert self.hook_confinement is not None
                hooks_path, watch = stack.enter_context(
                    confined_hooks_dir(self.hook_confinement, self.run_hooks_dir)
                )
            try:
                return await self.git.run(
                    command,
                    options,
                    cwd=self.root,
                    profile=profile,
                    operands=operands,
                    paths=paths,
                    config=self.config,
                    stdin=stdin,
                    env=env,
                    max_output=max_output,
                    ok_codes=ok_codes,
                    end_of_options=end_of_options,
                    hooks=self.hooks_allowed,
                    hooks_path=hooks_path,
                    cancel=self.cancel,
                    on_kill=on_kill,
                )
            except GitFailed as exc:
                if "index.lock': File exists" in exc.result.stderr_text:
                    raise (self.index_lock_error() or exc) from None
                raise
            finally:
                if watch is not None:
                    # What the confined hooks planted is neutralised before anyone runs git.
                    await self._scan_planted(watch, command)

    async def _scan_planted(self, watch: GitMetadataWatch, command: Sequence[str]) -> None:
        confinement = self.hook_confinement
        assert confinement is not None
        report = await anyio.to_thread.run_sync(watch.scan, abandon_on_cancel=True)
        if report and confinement.report is not None:
            subject = {
                "kind": "git-hooks",
                "cwd": self.root,
                "confinedTo": confinement.scope,
                "tool": f"git {' '.join(command[:1])}",
            }
            confinement.report(report, subject)

    def _remove_index_lock_since(self, started: float) -> None:
        """After a writer had to be stopped: git removes its index.lock on SIGTERM but not on
        SIGKILL. Only a lock created while our child ran is removed (the per-repository lock
        keeps other meith calls out; an older lock belongs to someone else)."""
        lock = os.path.join(self.git_dir, "index.lock")
        try:
            if os.stat(lock).st_mtime >= started - 1:
                os.unlink(lock)
        except OSError:
            pass

    def index_lock_error(self) -> ToolError | None:
        """A clear error when another git process holds (or a crashed one left) index.lock."""
        lock = os.path.join(self.git_dir, "index.lock")
        try:
            st = os.stat(lock)
        except OSError:
            return None
        age = max(0.0, time.time() - st.st_mtime)
        return ToolError(
            ErrorCode.TOOL_FAILED,
            f"The repository index is locked: {lock} exists (for {age:.0f}s). Another git "
            "process may be running in this repository; if none is, a git process crashed and "
            "left it behind - remove the file to continue.",
            {"lockPath": lock, "ageSeconds": round(age, 1), "stale": age > 60},
        )


def start_directory(ctx: ToolContext, cwd: str) -> str:
    """The real directory a call's `cwd` names (a file names its directory)."""
    if "\0" in cwd:
        raise ToolError(ErrorCode.VALIDATION_ERROR, "cwd must not contain NUL bytes")
    path = os.path.realpath(os.path.join(ctx.cwd, os.path.expanduser(cwd)))
    if not os.path.exists(path):
        raise ToolError(ErrorCode.TOOL_FAILED, f"cwd does not exist: {path}", {"cwd": path})
    if not os.path.isdir(path):
        path = os.path.dirname(path)
    return path


async def discover(git: Git, ctx: ToolContext, cwd: str) -> Repo | None:
    """The repository around `cwd`, or None when `cwd` is not inside a work tree."""
    start = start_directory(ctx, cwd)
    ticket = git.discoveries.check(start)
    found = ticket.found
    if found is None:
        found = await _ask_git(git, ctx, start)
        if found is None:
            return None
        git.discoveries.store(ticket, found)
    root, git_dir, common_dir, entries = found.root, found.git_dir, found.common_dir, found.entries
    # Decided on every call, cached discovery or not: the layout is read anew, and the grant
    # scope and held grants belong to this caller.
    check_layout(start, root, git_dir, common_dir, entries)
    check_grant_scope(ctx.grant_scope, root, git_dir, common_dir)
    overrides, hooks_dir, run_hooks_dir = _settings(entries, root, common_dir)
    held = ctx.held_grant("starts-process", cwd=root)
    confinement = None
    if held is not None and held.scope is not None:
        confinement = HookConfinement(
            held.scope,
            str(ctx.home.root),
            git.hidden_paths,
            git.report_planted,
            net=held.net,
            on_refused=ctx.refusal_recorder(),
        )
    return Repo(
        git,
        root,
        git_dir,
        common_dir,
        found.head,
        overrides,
        ctx.cancel_token,
        hooks_allowed=held is not None,
        hooks_dir=hooks_dir,
        run_hooks_dir=run_hooks_dir,
        hook_confinement=confinement,
    )


async def _ask_git(git: Git, ctx: ToolContext, start: str) -> Found | None:
    """Discovery proper: `git rev-parse` and `git config --list`, side by side."""
    config_options = ["--list", "--null", "--includes", "--show-origin"]
    with_scope = git.at_least(2, 26)
    if with_scope:
        config_options.append("--show-scope")

    def step(command: str, options: list[str]) -> Callable[[], Awaitable[Completed]]:
        return lambda: git.run(
            [command],
            options,
            cwd=start,
            profile=_DISCOVERY,
            ok_codes=(0, 1, 128),
            cancel=ctx.cancel_token,
            max_output=8 * 1024 * 1024,
        )

    found, config = await gather(
        step(
            "rev-parse",
            [
                "--show-toplevel",
                "--absolute-git-dir",
                "--git-common-dir",
                "--verify",
                "--quiet",
                "HEAD",
            ],
        ),
        step("config", config_options),
    )
    if found.returncode == 128:
        err = found.stderr_text
        if any(text in err for text in _NOT_REPO_MESSAGES):
            return None
        raise GitFailed("rev-parse", found)
    lines = found.stdout.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) < 3:
        raise GitFailed("rev-parse", found, f"Unexpected output from git rev-parse: {lines!r}")
    head = lines[3].strip() if found.returncode == 0 and len(lines) > 3 and lines[3] else None
    root, git_dir, common_dir = _real_paths(start, lines[0], lines[1], lines[2])

    if config.returncode != 0:
        raise GitFailed("config", config)
    entries = parse_config_list(config.stdout, with_scope=with_scope, with_origin=True)
    return Found(root, git_dir, common_dir, head, tuple(entries))


@functools.lru_cache(maxsize=256)
def _settings(
    entries: tuple[ConfigEntry, ...], root: str, common_dir: str
) -> tuple[tuple[tuple[str, str], ...], str, str]:
    """What a repository's config means for the commands run in it: the neutralising `-c`
    overrides, and the hooks directories (plain git's, and the one meith's git uses). A pure
    function of what discovery found, so a reused discovery reuses it too."""
    own_hooks = os.path.join(common_dir, "hooks")
    overrides = neutralising_overrides(
        entries, forced=(key for key, _ in BASE_CONFIG), neutral={"core.hooksPath": own_hooks}
    )
    return (
        tuple(overrides),
        _configured_hooks_dir(entries, root, own_hooks),
        _user_hooks_dir(entries, root, own_hooks),
    )


def _configured_hooks_dir(entries: Sequence[ConfigEntry], root: str, default: str) -> str:
    """The hooks directory plain git would use (a relative `core.hooksPath` is relative to the
    work tree)."""
    value = next(
        (
            e.value
            for e in reversed(entries)
            # "command" scope: our own `-c` settings on the discovery command itself.
            if e.key.lower() == "core.hookspath" and e.value and e.scope != "command"
        ),
        None,
    )
    if value is None:
        return default
    return os.path.join(root, os.path.expanduser(value))


def _user_hooks_dir(entries: Sequence[ConfigEntry], root: str, default: str) -> str:
    """The hooks directory meith's git uses: the user's own `core.hooksPath`, else the
    repository's own hooks directory (the repository's setting is neutralised)."""
    value = next(
        (
            e.value
            for e in reversed(entries)
            if e.key.lower() == "core.hookspath" and e.value and e.scope in USER_SCOPES
        ),
        None,
    )
    if value is None:
        return default
    return os.path.join(root, os.path.expanduser(value))


def _real_paths(start: str, top: str, git_dir: str, common: str) -> tuple[str, str, str]:
    # --git-common-dir may be relative to the directory rev-parse ran in.
    real = os.path.realpath
    return real(top), real(git_dir), real(os.path.join(start, common))


async def require_repo(git: Git, ctx: ToolContext, cwd: str) -> Repo:
    repo = await discover(git, ctx, cwd)
    if repo is None:
        raise ToolError(ErrorCode.TOOL_FAILED, NOT_A_REPO, {"cwd": cwd})
    return repo


# Discovery reads only: no locks, no hooks (rev-parse and config run neither, this is belt
# and braces).
_DISCOVERY = Profile("discovery", optional_locks=False, hooks=False)


def _refuse(message: str, **details: str) -> ToolError:
    return ToolError(ErrorCode.TOOL_FAILED, message, details)


def check_layout(
    start: str, root: str, git_dir: str, common_dir: str, entries: Sequence[ConfigEntry]
) -> None:
    """Apply the `.git` rule (module docstring); raise when the layout is not trusted."""
    if not is_within(start, root):
        raise _refuse(
            f"Refusing the repository: its work tree {root} does not contain cwd {start} "
            "(core.worktree points elsewhere)",
            workTree=root,
            cwd=start,
        )
    dotgit = os.path.join(root, ".git")
    if os.path.islink(dotgit):
        if os.path.realpath(dotgit) == git_dir and is_within(git_dir, root):
            return
        raise _refuse(
            f"Refusing the repository at {root}: its .git is a symbolic link to "
            f"{os.path.realpath(dotgit)}",
            workTree=root,
            gitDir=git_dir,
        )
    if os.path.isdir(dotgit):
        if os.path.realpath(dotgit) == git_dir and git_dir == common_dir:
            return
        raise _refuse(
            f"Refusing the repository at {root}: git uses the git dir {git_dir}, not its .git "
            "directory (core.worktree points elsewhere)",
            workTree=root,
            gitDir=git_dir,
        )
    if not os.path.isfile(dotgit):
        raise _refuse(
            f"Refusing the repository at {root}: it has no .git of its own (git dir {git_dir})",
            workTree=root,
            gitDir=git_dir,
        )
    target = gitdir_of(dotgit)
    if target is None:
        raise _refuse(f"Refusing the repository at {root}: unreadable .git file", workTree=root)
    if target != git_dir:
        raise _refuse(
            f"Refusing the repository at {root}: its .git file names {target}, but git uses "
            f"{git_dir}",
            workTree=root,
            gitDir=git_dir,
        )
    if git_dir != common_dir:
        # A linked worktree: <common>/worktrees/<name>, whose `gitdir` file names our .git.
        back = _read_text(os.path.join(git_dir, "gitdir"))
        if (
            os.path.dirname(git_dir) == os.path.join(common_dir, "worktrees")
            and back is not None
            and os.path.realpath(os.path.join(git_dir, back.strip())) == os.path.realpath(dotgit)
        ):
            return
        raise _refuse(
            f"Refusing the repository at {root}: its .git file points to {git_dir}, which is "
            "not a worktree of this directory (its gitdir file does not point back here)",
            workTree=root,
            gitDir=git_dir,
            commonDir=common_dir,
        )
    # A submodule or a separate git dir: its own config must name this work tree.
    worktree = next(
        (
            e.value
            for e in reversed(entries)
            if e.key.lower() == "core.worktree"
            and e.scope in ("local", "unknown")
            and e.value is not None
        ),
        None,
    )
    if worktree is not None and os.path.realpath(os.path.join(git_dir, worktree)) == root:
        return
    raise _refuse(
        f"Refusing the repository at {root}: its .git file points to {git_dir}, a git dir "
        "that does not belong to this work tree (it is neither a linked worktree nor a "
        "submodule of it). A planted .git file must not redirect git into another repository.",
        workTree=root,
        gitDir=git_dir,
    )


def check_grant_scope(scope: str | None, root: str, git_dir: str, common_dir: str) -> None:
    """With a `cwd_prefix` grant, everything git will touch must lie inside it."""
    if scope is None:
        return
    outside = {
        name: path
        for name, path in (("workTree", root), ("gitDir", git_dir), ("commonDir", common_dir))
        if not is_within(path, scope)
    }
    if outside:
        where = ", ".join(f"{name} {path}" for name, path in outside.items())
        raise ToolError(
            ErrorCode.PERMISSION_DENIED,
            f"The grant for this call is limited to {scope}; the repository's {where} "
            "lies outside it.",
            {"grantScope": scope, **outside},
        )


def _read_text(path: str, limit: int = 4096) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "surrogateescape")
    except OSError:
        return None


__all__ = [
    "EMPTY_TREE",
    "NOT_A_REPO",
    "Repo",
    "check_grant_scope",
    "check_layout",
    "discover",
    "require_repo",
    "start_directory",
]
