"""Checks on caller-supplied paths, branch names and revisions, before git sees them."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Final

from meith_core import ErrorCode, PathEscapeError, ToolError, is_within, resolve_within
from meith_plugins_git.repo import Repo
from meith_plugins_git.runner import READ_ONLY

#: Branch names we create or switch to: a conservative allow-list on top of git's own rules.
BRANCH_NAME_RE: Final = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/+-]*$")
MAX_NAME = 255


def _invalid(message: str, **details: object) -> ToolError:
    return ToolError(ErrorCode.VALIDATION_ERROR, message, details or None)


def repo_path(repo: Repo, value: str) -> str:
    """A caller's path (relative to the work tree root, or absolute) as a root-relative path.

    Containment is decided on resolved paths, component by component (`meith_core.base.paths`):
    every directory on the way is resolved, so `..` and symbolic links that lead out are
    refused. The last component is not followed when it is a symbolic link: git stages,
    restores and removes the link itself, never what it points to.
    """
    if "\0" in value:
        raise _invalid("paths must not contain NUL bytes", path=value.replace("\0", "\\0"))
    if not value:
        raise _invalid("paths must not be empty")
    root = repo.root
    stripped = value.rstrip("/") or value
    leaf = os.path.basename(stripped)
    try:
        if leaf in ("", ".", "..") or stripped != value:
            resolved = str(resolve_within(root, value))
        else:
            parent = resolve_within(root, os.path.dirname(stripped) or ".")
            resolved = os.path.join(str(parent), leaf)
    except PathEscapeError:
        raise _invalid(
            f"path {value!r} resolves outside the repository work tree {root}", path=value
        ) from None
    relative = os.path.relpath(resolved, root)
    parts = relative.split(os.sep)
    if any(part.lower() == ".git" for part in parts) or any(
        is_within(resolved, d) for d in {repo.git_dir, repo.common_dir}
    ):
        raise _invalid(f"path {value!r} is inside a git directory", path=value)
    return relative


def repo_paths(repo: Repo, values: Sequence[str]) -> list[str]:
    return [repo_path(repo, v) for v in values]


def check_revision(value: str, what: str = "revision") -> str:
    """A revision or ref from a caller: it must not be readable as an option."""
    if "\0" in value:
        raise _invalid(f"{what} must not contain NUL bytes")
    if not value or value.startswith("-"):
        raise _invalid(f"{what} {value!r} must not begin with '-'", value=value)
    if any(ch.isspace() for ch in value) or len(value) > 1024:
        raise _invalid(f"{what} {value!r} is not a valid revision", value=value)
    return value


async def check_branch_name(repo: Repo, name: str) -> str:
    """Allow-list first (no `-`, `@`, `HEAD`, `refs/`...), then `git check-ref-format --branch`."""
    if "\0" in name:
        raise _invalid("branch name must not contain NUL bytes")
    problem = None
    if name.startswith("-"):
        problem = "must not begin with '-'"
    elif "@" in name:
        problem = "must not contain '@'"
    elif name == "HEAD" or name.upper() == "HEAD":
        problem = "must not be HEAD"
    elif name.startswith("refs/"):
        problem = "must not begin with 'refs/'"
    elif len(name) > MAX_NAME:
        problem = f"must be at most {MAX_NAME} characters"
    elif not BRANCH_NAME_RE.fullmatch(name):
        problem = "may use only letters, digits and . _ / + - (not first)"
    if problem is not None:
        raise _invalid(f"Invalid branch name {name!r}: {problem}", name=name)
    done = await repo.run(
        ["check-ref-format"],
        ["--branch"],
        operands=[name],
        end_of_options=False,
        profile=READ_ONLY,
        ok_codes=(0, 1, 128),
    )
    if done.returncode != 0:
        raise _invalid(f"Invalid branch name {name!r}: {done.stderr_text}", name=name)
    return name
