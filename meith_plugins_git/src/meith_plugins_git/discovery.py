"""Finding the repository a call is about.

`cwd` may be any directory inside a work tree; git's own discovery finds the repository (one
`git rev-parse`, run alongside `git config --list` so the repository's program-valued
settings can be neutralised, see `repoconfig`). What they print is reused while nothing they
read has changed (`discovery_cache`). Then, on every call, the layout is checked (`layout`).

Hooks are decided here too: a command that would run them may do so only when the caller
already holds `starts-process` for the work tree (`hooks_allowed`), and then from the
repository's own hooks directory (or the user's `core.hooksPath`), never from one the
repository's config names; under a directory-confined `starts-process` grant they run
confined to that directory (`hookconfine`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Sequence

from meith_core import ErrorCode, ToolContext, ToolError
from meith_plugins_git.discovery_cache import Found
from meith_plugins_git.hookconfine import HookConfinement
from meith_plugins_git.layout import check_grant_scope, check_layout
from meith_plugins_git.process import Completed, gather
from meith_plugins_git.repo import Repo
from meith_plugins_git.repoconfig import (
    USER_SCOPES,
    ConfigEntry,
    neutralising_overrides,
    parse_config_list,
)
from meith_plugins_git.runner import BASE_CONFIG, Git, GitFailed, Profile

#: Said when a directory is not inside a repository, with the way out.
NOT_A_REPO = (
    "Not inside a git repository: {cwd} (nor any directory above it). Pass cwd: a directory "
    "inside a repository, or run git init there to start one."
)

_NOT_REPO_MESSAGES = ("not a git repository", "must be run in a work tree")

# Discovery reads only: no locks, no hooks (rev-parse and config run neither, this is belt
# and braces).
_DISCOVERY = Profile("discovery", optional_locks=False, hooks=False)


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
            sockets=held.sockets,
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
        raise ToolError(ErrorCode.TOOL_FAILED, NOT_A_REPO.format(cwd=cwd), {"cwd": cwd})
    return repo
