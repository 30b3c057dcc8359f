"""Whether to trust a repository's layout, decided on every call, cached discovery or not:

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
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from meith_core import ErrorCode, ToolError, gitdir_of, is_within
from meith_plugins_git.repoconfig import ConfigEntry


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
