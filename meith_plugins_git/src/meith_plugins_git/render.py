"""The git tools' results written for a model to read (`@tool(render=...)`): status as
porcelain-like lines, diffs as diffs, history as one line per commit.

The structured content stays the machine form; these are what an agent reads through MCP, so
they carry every fact of the result an agent acts on and nothing it would not (no repeated
lists, no JSON punctuation, no `index` lines it cannot use).
"""

from __future__ import annotations

from typing import Any

_NOT_A_REPO = "not a git repository"


def _code(status: str, x: str) -> str:
    return "?" if status == "untracked" else x if x.strip() else " "


def _branch_line(result: dict[str, Any]) -> str:
    line = f"## {result.get('branch') or '(no branch)'}"
    upstream = result.get("upstream")
    if upstream:
        line += f"...{upstream}"
    counts = [f"ahead {n}" for n in [result.get("ahead")] if n] + [
        f"behind {n}" for n in [result.get("behind")] if n
    ]
    if counts:
        line += f" [{', '.join(counts)}]"
    return line


def status_text(result: dict[str, Any]) -> str:
    """`## branch...upstream [ahead 1]` then `XY path` per file, as `git status --short`
    prints them (`??` untracked, `R  new <- old` for renames)."""
    if not result.get("isRepo"):
        return _NOT_A_REPO
    lines = [_branch_line(result)]
    for f in result.get("files", ()):
        if f.get("untracked"):
            lines.append(f"?? {f['path']}")
            continue
        x = f.get("indexStatus") or " "
        y = f.get("worktreeStatus") or " "
        line = f"{x}{y} {f['path']}"
        if f.get("originalPath"):
            line += f" <- {f['originalPath']}"
        lines.append(line)
    if len(lines) == 1:
        lines.append("(clean)")
    return "\n".join(lines)


def _patch_body(patch: str) -> str:
    """A file's patch without its `diff --git` and `index` lines: `---`/`+++` name the file,
    so what remains is still a unified diff (`patch -p1` and `git apply` take it)."""
    # Only the header can hold them: every line after the first hunk header starts with
    # ` `, `+`, `-` or `\`. So the hunks are kept whole, not split line by line.
    cut = patch.find("\n@@")
    head, hunks = (patch, "") if cut == -1 else (patch[:cut], patch[cut:])
    kept = [line for line in head.split("\n") if not line.startswith(("diff --git ", "index "))]
    return ("\n".join(kept) + hunks).rstrip("\n")


def diff_text(result: dict[str, Any]) -> str:
    """A one-line total, then per file its patch (or `status path (+a -d)` when there is none:
    binary, or patches not asked for)."""
    if not result.get("isRepo"):
        return _NOT_A_REPO
    files = result.get("files", ())
    scope = result.get("scope", "all")
    lines = []
    if result.get("path") and not result.get("pathMatches"):
        # Asked for one path and none of the changes is it: say so first, then what changed.
        lines.append(f"no changes to {result['path']} ({scope}); it matches no changed file")
    if not files:
        return "\n".join(lines) or f"no changes ({scope})"
    lines.append(
        f"{len(files)} files changed, +{result.get('totalAdditions', 0)} "
        f"-{result.get('totalDeletions', 0)} ({scope})"
    )
    for f in files:
        patch = f.get("diff") or ""
        if patch:
            lines.append(_patch_body(patch))
            continue
        where = f["path"] if not f.get("originalPath") else f"{f['originalPath']} -> {f['path']}"
        counts = (
            "binary" if f.get("binary") else f"+{f.get('additions', 0)} -{f.get('deletions', 0)}"
        )
        lines.append(f"{f.get('status', 'modified')} {where} ({counts})")
    return "\n".join(lines)


def log_text(commits: list[dict[str, Any]]) -> str:
    """`shortHash date author: subject (refs)` per commit, newest first."""
    if not commits:
        return "no commits"
    lines = []
    for c in commits:
        line = f"{c.get('shortHash', '')} {str(c.get('date', ''))[:10]} {c.get('authorName', '')}: {c.get('subject', '')}"
        if c.get("refs"):
            line += f" ({', '.join(c['refs'])})"
        lines.append(line)
    return "\n".join(lines)
