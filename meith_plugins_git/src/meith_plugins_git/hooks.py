"""Telling the caller which repository hooks a command did not run, and why.

Whether hooks run is decided once per call in `repo.discover` (`Repo.hooks_allowed`) and
enforced by the runner's argv builder; this module only reports what was skipped.
"""

from __future__ import annotations

import os
from typing import Any, Final

from meith_core import Diagnostic, ok_result
from meith_plugins_git.repo import Repo
from meith_plugins_git.runner import WRITE, WRITE_WITH_HOOKS, Profile

#: The hooks each hook-running command may start.
COMMIT_HOOKS: Final = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit")
CHECKOUT_HOOKS: Final = ("post-checkout",)


def profile_for(run_hooks: bool) -> Profile:
    """The profile of a command users expect hooks from (settings `git.runHooks`)."""
    return WRITE_WITH_HOOKS if run_hooks else WRITE


def skipped_hooks(repo: Repo, names: tuple[str, ...], run_hooks: bool) -> Diagnostic | None:
    """A notice naming the hooks present that the command did not run (or ran unconfined
    although the grant is confined to a directory, for want of Landlock), or None."""
    if run_hooks and repo.hooks_allowed:
        jail = repo.hook_confinement
        if jail is None or jail.enforced:
            return None
        ran = [n for n in names if _executable(os.path.join(repo.run_hooks_dir, n))]
        if not ran:
            return None
        return Diagnostic(
            level="warn",
            message=f"Repository hooks ran unconfined ({', '.join(ran)}): this kernel has no "
            f"Landlock, so they had the user's full access although the grant is limited to "
            f"{jail.scope}.",
        )
    present = [n for n in names if _executable(os.path.join(repo.hooks_dir, n))]
    if not present:
        return None
    if not run_hooks:
        why = "the setting git.runHooks is false"
    else:
        why = (
            "hooks are programs, and the caller holds no grant for starts-process in "
            f"{repo.root} (such a grant lets them run)"
        )
    return Diagnostic(
        level="warn",
        message=f"Repository hooks not run ({', '.join(present)}): {why}.",
    )


def with_notice(content: Any, notice: Diagnostic | None) -> Any:
    """The tool's content, wrapped in a result carrying the notice when there is one."""
    if notice is None:
        return content
    return ok_result(content, diagnostics=[notice])


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


__all__ = ["CHECKOUT_HOOKS", "COMMIT_HOOKS", "profile_for", "skipped_hooks", "with_notice"]
