"""The six workspace tools: reading, listing and searching files, writing, patching and undoing."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Final

from meith_core import (
    ErrorCode,
    ToolContext,
    ToolDefinition,
    ToolError,
    ToolResult,
    ok_result,
    real_path,
    tool,
)
from meith_plugins_files import edits, render, rg_run, ripgrep
from meith_plugins_files.changes import commit_change, conflict, decoded, text_or_none
from meith_plugins_files.diffs import unified
from meith_plugins_files.locks import FileLocks
from meith_plugins_files.models import (
    ApplyPatchArgs,
    ListFilesArgs,
    ListFilesResult,
    PatchResult,
    ReadFileArgs,
    ReadFileResult,
    SearchArgs,
    SearchResult,
    UndoArgs,
    UndoResult,
    WriteFileArgs,
    WriteResult,
)
from meith_plugins_files.opened import open_for_read, open_for_walk, parent_for_write
from meith_plugins_files.reading import read_window
from meith_plugins_files.scope import (
    WorkspacePath,
    check_readable,
    check_writable,
    resolve,
    secret_excludes,
    workspace_root,
)
from meith_plugins_files.textio import encode, sha256_hex
from meith_plugins_files.undo import MAX_STEPS, UndoStore
from meith_plugins_files.writer import delete_file, read_current, replace_file

#: Under `$MEITH_HOME/state/`: this plugin's private directory.
STATE_DIR: Final = "files"
READ: Final = ["read-only"]
WRITES: Final = ["writes-files"]


class FileTools:
    """What the workspace tools share in one runtime (the per-file locks, the undo store,
    ripgrep) and the tools."""

    def __init__(self) -> None:
        self.locks = FileLocks()
        self._undo: UndoStore | None = None
        self._guard = threading.Lock()
        #: The `rg` the search tools run (None: not found yet).
        self.rg_path: str | None = rg_run.locate()

    def open_undo(self, state_dir: Path) -> None:
        """Open the undo store under the runtime's state directory."""
        self._undo = UndoStore(state_dir / STATE_DIR / "undo")

    def definitions(self) -> list[ToolDefinition]:
        return [
            tool(
                self.workspace_read_file,
                effect="reads",
                acts_on="path:cwd",
                capabilities=READ,
                idempotent=True,
                output=ReadFileResult,
                render=render.read_file,
            ),
            tool(
                self.workspace_write_file,
                effect="removes",
                acts_on="path:cwd",
                capabilities=WRITES,
                grant_scope="enforced",
                idempotent=True,
                output=WriteResult,
                render=render.write_file,
            ),
            tool(
                self.workspace_apply_patch,
                effect="updates",
                acts_on="path:cwd",
                capabilities=WRITES,
                grant_scope="enforced",
                output=PatchResult,
                render=render.apply_patch,
            ),
            tool(
                self.workspace_undo,
                effect="removes",
                acts_on="path:cwd",
                capabilities=WRITES,
                grant_scope="enforced",
                output=UndoResult,
                render=render.undo,
            ),
            tool(
                self.workspace_list_files,
                effect="reads",
                acts_on="path:cwd",
                capabilities=READ,
                idempotent=True,
                output=ListFilesResult,
                render=render.list_files,
            ),
            tool(
                self.workspace_search,
                effect="reads",
                acts_on="path:cwd",
                capabilities=READ,
                idempotent=True,
                output=SearchResult,
                render=render.search,
            ),
        ]

    def _store(self, ctx: ToolContext) -> UndoStore:
        with self._guard:
            if self._undo is None:
                self.open_undo(ctx.home.state_dir)
            assert self._undo is not None
            return self._undo

    def _rg(self) -> str:
        if self.rg_path is None:
            self.rg_path = rg_run.locate()
        if self.rg_path is None:
            raise ToolError(
                ErrorCode.TOOL_FAILED,
                "ripgrep is not installed: install the ripgrep package (pip install "
                "'ripgrep>=14.1,<14.2') into meith's environment, or put rg on PATH",
                {"reason": "no ripgrep"},
            )
        return self.rg_path

    def workspace_read_file(self, ctx: ToolContext, args: ReadFileArgs) -> ReadFileResult:
        """Read a text file by lines (1-based `offset`, `limit` lines; 2 MiB at most per read).

        Returns the lines with `totalLines`, `truncated`, the encoding and the file's `sha256`
        (pass it as `expectedSha256` when writing). Binary files are refused."""
        target = resolve(workspace_root(ctx, args.cwd), args.path)
        check_readable(ctx, target.path)
        fd, st = open_for_read(ctx, target)
        try:
            w = read_window(target, fd, st, args.offset, args.limit)
        finally:
            os.close(fd)
        return ReadFileResult(
            path=target.display,
            content=w.content,
            offset=args.offset,
            lineCount=w.line_count,
            totalLines=w.total_lines,
            truncated=w.truncated,
            sha256=w.sha256,
            size=w.size,
            encoding=w.encoding,
            lineEnding=w.line_ending,
        )

    def workspace_write_file(self, ctx: ToolContext, args: WriteFileArgs) -> WriteResult:
        """Create or replace a file atomically (its mode kept); keeps an undo step.

        With `expectedSha256` it refuses when the file is no longer that version. An existing
        file keeps its encoding. Returns the unified diff."""
        target = _target_for_write(ctx, args.cwd, args.path)
        with (
            self.locks.of(target.path),
            parent_for_write(ctx, target, create_dirs=args.createDirs) as opened,
        ):
            cur = read_current(opened)
            actual = sha256_hex(cur.data) if cur.data is not None else None
            if args.expectedSha256 is not None and args.expectedSha256 != actual:
                raise conflict(opened, args.expectedSha256, actual)
            old = decoded(opened, cur.data) if cur.data is not None else None
            enc = old.encoding if old is not None else "utf-8"
            try:
                data = encode(args.content, enc)
            except UnicodeEncodeError as exc:
                raise ToolError(
                    ErrorCode.VALIDATION_ERROR,
                    f"content cannot be written in the file's encoding {enc}: {exc.reason}",
                ) from None
            return commit_change(
                self._store(ctx),
                opened,
                cur,
                actual,
                old,
                args.content,
                data,
                tool_name="workspace_write_file",
            )

    def workspace_apply_patch(self, ctx: ToolContext, args: ApplyPatchArgs) -> PatchResult:
        """Edit one file, all or nothing, and return the unified diff.

        Each edit is an exact text `{oldText, newText, replaceAll?}` (oldText must match once,
        or every match with replaceAll) or a range `{start, end, newText}` in characters of
        the text as read. An edit that matches nowhere or more than once fails the whole
        patch and says how many matches and where. `dryRun` returns the diff only."""
        target = _target_for_write(ctx, args.cwd, args.path)
        with self.locks.of(target.path), parent_for_write(ctx, target) as opened:
            cur = read_current(opened)
            if cur.data is None:
                raise ToolError(
                    ErrorCode.TOOL_FAILED,
                    f"{target.display} does not exist (create it with workspace_write_file)",
                    {"reason": "not found"},
                )
            actual = sha256_hex(cur.data)
            if args.expectedSha256 is not None and args.expectedSha256 != actual:
                raise conflict(opened, args.expectedSha256, actual)
            old = decoded(opened, cur.data)
            spans = edits.locate(old.text, args.edits, target.display)
            text = edits.apply(old.text, spans)
            if args.dryRun:
                diff, cut = unified(old.text, text, target.display)
                return PatchResult(
                    path=target.display,
                    dryRun=True,
                    applied=len(spans),
                    sha256=actual,
                    previousSha256=actual,
                    diff=diff,
                    diffTruncated=cut,
                    undoSteps=self._store(ctx).count(opened.path),
                )
            try:
                data = encode(text, old.encoding)
            except UnicodeEncodeError as exc:
                raise ToolError(
                    ErrorCode.VALIDATION_ERROR,
                    f"the new text cannot be written in the file's encoding {old.encoding}: "
                    f"{exc.reason}",
                ) from None
            done = commit_change(
                self._store(ctx),
                opened,
                cur,
                actual,
                old,
                text,
                data,
                tool_name="workspace_apply_patch",
            )
            return PatchResult(
                path=done.path,
                dryRun=False,
                applied=len(spans),
                sha256=done.sha256,
                previousSha256=actual,
                diff=done.diff,
                diffTruncated=done.diffTruncated,
                undoSteps=done.undoSteps,
            )

    def workspace_undo(self, ctx: ToolContext, args: UndoArgs) -> UndoResult:
        """Restore the version of a file before meith's last change to it (50 steps a file,
        kept across restarts). Refuses when the file changed since, unless `force`."""
        target = _target_for_write(ctx, args.cwd, args.path)
        with self.locks.of(target.path), parent_for_write(ctx, target) as opened:
            store = self._store(ctx)
            step = store.last(opened.path)
            if step is None:
                raise ToolError(
                    ErrorCode.TOOL_FAILED,
                    f"nothing to undo for {target.display}: "
                    + (
                        f"every undo step kept for it has been used (the last {MAX_STEPS} "
                        "changes of a file are kept)"
                        if store.ever_kept(opened.path)
                        else "meith has not changed it (undo takes back what "
                        "workspace_write_file and workspace_apply_patch changed)"
                    ),
                    {"reason": "nothing to undo"},
                )
            cur = read_current(opened)
            actual = sha256_hex(cur.data) if cur.data is not None else None
            if actual != step.after and not args.force:
                raise ToolError(
                    ErrorCode.TOOL_FAILED,
                    f"{target.display} changed since meith's last change to it (expected sha256 "
                    f"{step.after}, found {actual or 'no file'}); undoing would lose that "
                    "change. Pass force: true to undo anyway.",
                    {
                        "reason": "changed since",
                        "expectedSha256": step.after,
                        "actualSha256": actual,
                    },
                )
            now_text = text_or_none(cur.data)
            if step.before is None:
                delete_file(opened)
                left = store.pop(opened.path, step)
                diff, cut = unified(now_text, None, target.display)
                return UndoResult(
                    path=target.display,
                    restored="deleted",
                    sha256=None,
                    diff=diff,
                    diffTruncated=cut,
                    undoSteps=left,
                )
            try:
                data = store.content(opened.path, step)
            except (OSError, ValueError) as exc:
                raise ToolError(
                    ErrorCode.TOOL_FAILED,
                    f"the saved version of {target.display} cannot be read from the undo "
                    f"store: {exc}",
                ) from None
            replace_file(opened, data, step.mode if step.mode is not None else cur.mode)
            left = store.pop(opened.path, step)
            diff, cut = unified(now_text, text_or_none(data), target.display)
            return UndoResult(
                path=target.display,
                restored="previous",
                sha256=step.before,
                diff=diff,
                diffTruncated=cut,
                undoSteps=left,
            )

    async def workspace_list_files(self, ctx: ToolContext, args: ListFilesArgs) -> ListFilesResult:
        """List files under a directory, sorted: honours .gitignore and skips node_modules,
        .git, build and cache directories (unless `includeIgnored`); never follows links.
        5,000 by default, 20,000 at most."""
        root = workspace_root(ctx, args.cwd)
        target = resolve(root, args.path)
        check_readable(ctx, target.path)
        rg = self._rg()
        with open_for_walk(ctx, target) as fd:
            # rg walks from the directory as opened (its working directory is the descriptor),
            # never from a name that could since lead elsewhere.
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                files = [target.relative] if stat.S_ISREG(os.fstat(fd).st_mode) else []
                return ListFilesResult(
                    root=str(root), files=files, count=len(files), truncated=False
                )
            paths, names = secret_excludes(ctx, Path(real_path(fd)))
            walk = ripgrep.Walk(args.includeIgnored, args.glob, tuple(paths), names.for_rg)
            files, truncated = await ripgrep.list_files(
                rg, _fd_dir(fd), walk, ".", args.limit, prefix=_prefix(target)
            )
        if names.check:
            files = [f for f in files if not names.hides(f)]
        files.sort()
        return ListFilesResult(root=str(root), files=files, count=len(files), truncated=truncated)

    async def workspace_search(self, ctx: ToolContext, args: SearchArgs) -> ToolResult:
        """Search file contents with ripgrep: literal text by default, `regex` for a regular
        expression; .gitignore-aware, files over 1 MiB skipped. Each hit has path, line,
        column and text (`contextLines` around it). 500 hits by default, 5,000 at most."""
        root = workspace_root(ctx, args.cwd)
        target = resolve(root, args.path)
        check_readable(ctx, target.path)
        rg = self._rg()
        with open_for_walk(ctx, target) as fd:
            mode = os.fstat(fd).st_mode
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                # A FIFO or device named outright would be read by rg until the deadline.
                raise ToolError(
                    ErrorCode.TOOL_FAILED,
                    f"{target.display} is not a directory or a regular file",
                    {"reason": "not searchable"},
                )
            directory = stat.S_ISDIR(mode)
            paths, names = secret_excludes(ctx, Path(real_path(fd)))
            walk = ripgrep.Walk(False, args.glob, tuple(paths), names.for_rg)
            argv = ripgrep.search_argv(
                rg,
                walk,
                # A file is searched through its descriptor, a directory from it.
                "." if directory else _fd_dir(fd),
                query=args.query,
                regex=args.regex,
                case_sensitive=args.caseSensitive,
                context=args.contextLines,
            )
            hits, truncated = await ripgrep.search(
                rg,
                _fd_dir(fd) if directory else str(root),
                argv,
                args.limit,
                args.contextLines,
                prefix=_prefix(target),
                named=None if directory else target.display,
                pass_fds=() if directory else (fd,),
            )
        # The `SearchResult` shape, built as plain JSON: a model per hit costs more than the
        # search's own parsing (tests check the result against SearchResult). Hits without
        # context carry no before/after keys: compact for a model.
        matches = [h.as_json() for h in hits if not names.hides(h.path)]
        return ok_result(
            {"root": str(root), "matches": matches, "count": len(matches), "truncated": truncated}
        )


def _target_for_write(ctx: ToolContext, cwd: str | None, path: str) -> WorkspacePath:
    target = resolve(workspace_root(ctx, cwd), path)
    check_writable(ctx, target)
    return target


def _fd_dir(fd: int) -> str:
    """The path a child process reaches the object open at `fd` by (its working directory
    for a directory: chdir happens in the child before it closes the descriptors it does
    not keep)."""
    return f"/proc/self/fd/{fd}"


def _prefix(target: WorkspacePath) -> str:
    """What to put before names found beneath `target` to make them workspace-relative."""
    return "" if target.relative == "." else target.relative + "/"
