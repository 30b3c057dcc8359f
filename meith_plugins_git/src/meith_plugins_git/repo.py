"""`Repo`: one repository as one call sees it, and git run in it: with the repository's
neutralising settings, hooks confined when the holding grant is, and an `index.lock` that a
killed writer left behind removed."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import anyio.to_thread

from meith_core import CancelToken, ErrorCode, GitMetadataWatch, ToolError
from meith_plugins_git.hookconfine import HookConfinement, confined_hooks_dir
from meith_plugins_git.process import Completed
from meith_plugins_git.runner import MAX_OUTPUT_BYTES, Git, GitFailed, Profile

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


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
            fds: tuple[int, ...] = ()
            if confine:
                assert self.hook_confinement is not None
                hooks_path, watch, fds = stack.enter_context(
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
                    pass_fds=fds,
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
