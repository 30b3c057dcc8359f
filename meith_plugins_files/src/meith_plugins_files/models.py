"""The tools' argument and result models (camelCase on the wire, like the protocol)."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, Field
from pydantic.config import JsonDict

from meith_core import ToolArgs

#: Lines and bytes one read returns at most.
MAX_READ_BYTES: Final = 2 * 1024 * 1024
DEFAULT_READ_LINES: Final = 2000
DEFAULT_LIST_LIMIT: Final = 5000
MAX_LIST_LIMIT: Final = 20_000
DEFAULT_SEARCH_LIMIT: Final = 500
MAX_SEARCH_LIMIT: Final = 5000
#: Longest content written in one call (a frame carries 8 MiB of JSON at most).
MAX_WRITE_CHARS: Final = 4 * 1024 * 1024

#: Marks a field the audit trail records as its length only (file contents, diffs).
SENSITIVE: Final[JsonDict] = {"sensitive": True}

Cwd = Field(
    default=None,
    description="Workspace directory the path is relative to (default: the caller's directory)",
)


class ReadFileArgs(ToolArgs):
    cwd: str | None = Cwd
    path: str = Field(description="File to read, relative to cwd (or absolute inside it)")
    offset: int = Field(default=1, ge=1, description="First line to return (1-based)")
    limit: int = Field(
        default=DEFAULT_READ_LINES, ge=1, le=1_000_000, description="Lines to return at most"
    )


class ReadFileResult(BaseModel):
    path: str
    content: str = Field(description="The lines offset..offset+lineCount-1, line breaks kept")
    offset: int
    lineCount: int
    totalLines: int
    truncated: bool = Field(description="More lines follow (limit or the 2 MiB cap)")
    sha256: str = Field(description="Of the whole file: pass as expectedSha256 when writing")
    size: int
    encoding: str
    lineEnding: Literal["lf", "crlf", "mixed", "none"]


class WriteFileArgs(ToolArgs):
    cwd: str | None = Cwd
    path: str = Field(description="File to create or replace, relative to cwd")
    content: str = Field(
        max_length=MAX_WRITE_CHARS,
        description="The file's whole new text (4 Mi characters at most)",
    )
    expectedSha256: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description="Refuse unless the file's current sha256 is this (from workspace_read_file)",
    )
    createDirs: bool = Field(default=False, description="Create missing parent directories")


class WriteResult(BaseModel):
    path: str
    created: bool
    changed: bool
    bytes: int
    sha256: str
    previousSha256: str | None
    diff: str = Field(json_schema_extra=SENSITIVE)
    diffTruncated: bool
    undoSteps: int = Field(description="Undo steps now kept for this file")


class RangeEdit(ToolArgs):
    start: int = Field(ge=0, description="Character offset where the replaced text starts")
    end: int = Field(ge=0, description="Character offset where it ends (exclusive)")
    newText: str = Field(description="Text put in place of the range")


class TextEdit(ToolArgs):
    oldText: str = Field(
        min_length=1,
        description="Exact text to replace; must match once",
        json_schema_extra=SENSITIVE,
    )
    newText: str = Field(description="Text put in place of each match")
    replaceAll: bool = Field(default=False, description="Replace every match instead")


Edit = TextEdit | RangeEdit


class ApplyPatchArgs(ToolArgs):
    cwd: str | None = Cwd
    path: str = Field(description="File to edit, relative to cwd")
    edits: list[Edit] = Field(
        min_length=1,
        max_length=1000,
        description="Edits located in the current text and applied together, or none at all",
    )
    expectedSha256: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description="Refuse unless the file's current sha256 is this (from workspace_read_file)",
    )
    dryRun: bool = Field(default=False, description="Return the diff without writing")


class PatchResult(BaseModel):
    path: str
    dryRun: bool
    applied: int = Field(description="Text replacements made")
    sha256: str = Field(description="Of the new content (the current one when dryRun)")
    previousSha256: str
    diff: str = Field(json_schema_extra=SENSITIVE)
    diffTruncated: bool
    undoSteps: int


class UndoArgs(ToolArgs):
    cwd: str | None = Cwd
    path: str = Field(description="File whose last change through meith to undo")
    force: bool = Field(
        default=False, description="Undo even if the file changed since meith last wrote it"
    )


class UndoResult(BaseModel):
    path: str
    restored: Literal["previous", "deleted"]
    sha256: str | None
    diff: str = Field(json_schema_extra=SENSITIVE)
    diffTruncated: bool
    undoSteps: int = Field(description="Steps left for this file")


class ListFilesArgs(ToolArgs):
    cwd: str | None = Cwd
    path: str | None = Field(default=None, description="Subdirectory to list (default: cwd)")
    glob: str | None = Field(default=None, max_length=1000, description="e.g. '*.py', '!*.md'")
    limit: int = Field(
        default=DEFAULT_LIST_LIMIT,
        ge=1,
        le=MAX_LIST_LIMIT,
        description="Files returned at most (5,000 by default, 20,000 at most)",
    )
    includeIgnored: bool = Field(
        default=False, description="Also list .gitignore'd files and the default-ignored dirs"
    )


class ListFilesResult(BaseModel):
    root: str
    files: list[str] = Field(description="Paths relative to root, sorted")
    count: int
    truncated: bool


class SearchArgs(ToolArgs):
    cwd: str | None = Cwd
    query: str = Field(min_length=1, max_length=1000, description="Text (or pattern) to find")
    regex: bool = Field(default=False, description="query is a regular expression (Rust syntax)")
    caseSensitive: bool = Field(default=False, description="Match letter case exactly")
    glob: str | None = Field(
        default=None, max_length=1000, description="Only files matching, e.g. '*.py' ('!' excludes)"
    )
    path: str | None = Field(default=None, description="Subdirectory or file to search")
    contextLines: int = Field(default=0, ge=0, le=10, description="Lines shown around each hit")
    limit: int = Field(
        default=DEFAULT_SEARCH_LIMIT,
        ge=1,
        le=MAX_SEARCH_LIMIT,
        description="Matching lines returned at most (500 by default, 5,000 at most)",
    )


class SearchMatch(BaseModel):
    path: str
    line: int
    column: int = Field(description="1-based, in characters")
    text: str
    before: list[str] | None = Field(default=None, json_schema_extra=SENSITIVE)
    after: list[str] | None = Field(default=None, json_schema_extra=SENSITIVE)


class SearchResult(BaseModel):
    root: str
    matches: list[SearchMatch]
    count: int
    truncated: bool
