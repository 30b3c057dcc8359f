"""The fenced code blocks of the README and of the documentation site's pages, for the tests
that run them.

A block is either run by a test, which finds it in the page it lives in with
`doc_block("docs/python.md", "a snippet of it")` (or, for the console transcripts of a whole
page or section, `doc_section("docs/configuration.md")`; `readme_block(...)` and
`readme_section(...)` are the same for README.md), or marked illustrative with an HTML comment
on the line above its fence (`<!-- illustrative: why -->`, invisible on GitHub and on the site).
tests/docs/test_readme_blocks.py checks that every block of every page is one or the other,
and that every claim names a page and a block that exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
_MARKER = re.compile(r"<!--\s*(.*?)\s*-->\s*$", re.S)


@dataclass(frozen=True)
class Block:
    lang: str
    text: str
    line: int
    #: The HTML comment right above the fence, if any.
    marker: str | None
    #: The page it is in, relative to the repository root.
    page: str = "README.md"

    @property
    def illustrative(self) -> bool:
        return self.marker is not None and self.marker.startswith("illustrative")


def page_path(page: str) -> Path:
    """A page of the documentation (`README.md`, `docs/python.md`, ...), which must exist."""
    path = ROOT / page
    assert path.is_file(), f"{page} does not exist (did its blocks move to another page?)"
    return path


def blocks(path: Path = README) -> list[Block]:
    source = path.read_text()
    page = path.resolve().relative_to(ROOT).as_posix()
    out = []
    for match in _FENCE.finditer(source):
        before = source[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        out.append(
            Block(
                lang=match.group(1),
                text=match.group(2),
                line=source.count("\n", 0, match.start()) + 1,
                marker=marker.group(1) if marker else None,
                page=page,
            )
        )
    return out


def doc_block(page: str, snippet: str, lang: str | None = None) -> Block:
    """The one block of `page` that contains `snippet`."""
    found = [
        b for b in blocks(page_path(page)) if snippet in b.text and (lang is None or b.lang == lang)
    ]
    assert len(found) == 1, f"{len(found)} blocks of {page} contain {snippet!r}"
    return found[0]


def doc_section(page: str, title: str | None = None, lang: str = "console") -> list[Block]:
    """The `lang` blocks of `page` in order: the whole page, or those under the heading
    `## title` (or `# title`) up to the next heading of the same level or above."""
    path = page_path(page)
    found = blocks(path)
    if title is not None:
        headings = _headings(path.read_text())
        matches = [(n, depth) for n, depth, text in headings if text == title]
        assert len(matches) == 1, f"{page} has {len(matches)} headings {title!r}"
        first, depth = matches[0]
        after = [n for n, d, _ in headings if n > first and d <= depth]
        last = after[0] if after else 1 << 30
        found = [b for b in found if first < b.line < last]
    return [b for b in found if b.lang == lang]


def _headings(source: str) -> list[tuple[int, int, str]]:
    """(line, depth, text) of each Markdown heading outside code fences."""
    out, fenced = [], False
    for n, line in enumerate(source.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"(#{1,6}) (.+?)\s*$", line)):
            out.append((n, len(m.group(1)), m.group(2)))
    return out


def readme_block(snippet: str, lang: str | None = None) -> Block:
    """The one README block that contains `snippet`."""
    return doc_block("README.md", snippet, lang)


def readme_section(title: str, lang: str = "console") -> list[Block]:
    """The README's `lang` blocks under the heading `## title`, in order."""
    return doc_section("README.md", title, lang)


@dataclass(frozen=True)
class Step:
    """One `$ command` of a console transcript and the output lines shown under it."""

    command: str
    expected: list[str]


def transcript(block: Block) -> list[Step]:
    """A console block's commands (a trailing backslash continues one) and their output."""
    steps: list[Step] = []
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.startswith("$ "):
            assert steps, f"README line {block.line}: output before any command: {line!r}"
            steps[-1].expected.append(line)
            continue
        command = line[2:]
        while command.endswith("\\") and i < len(lines):
            command = command[:-1] + "\n" + lines[i]
            i += 1
        steps.append(Step(command, []))
    return steps


#: What differs from run to run (or host to host) in a transcript: (how the README shows it,
#: what a run prints). The walls a host builds (`confinement: ...` of `meith serve`) are the
#: host's.
_VOLATILE = re.compile(
    r"(?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z)"
    r"|(?P<walls>(?<=^confinement: ).+)"
    r"|(?P<port>(?<=//127\.0\.0\.1:)\d+)"
    r"|(?P<secret>(?<=\?k=)[A-Za-z0-9_-]+)"
    r"|(?P<date>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)"
    r"|(?P<ms>\b\d+(?:\.\d+)?ms\b)"
    r"|(?P<grant>\bg_[0-9a-f]{12}\b)"
    r"|(?P<pid>\(pid \d+\))"
    r"|(?P<sha>\[main [0-9a-f]{7}\])"
)
_REAL = {
    "iso": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z",
    "walls": r".+",
    "port": r"\d+",
    "secret": r"[A-Za-z0-9_-]+",
    "date": r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d",
    "ms": r"\d+(?:\.\d+)?ms",
    "grant": r"g_[0-9a-f]{12}",
    "pid": r"\(pid \d+\)",
    "sha": r"\[main [0-9a-f]{7,}\]",
}


def line_pattern(shown: str, home: str) -> re.Pattern[str]:
    """A shown output line as a pattern for a real one: `/home/you` is `home`, volatile values
    (times, durations, ids, pids, shas) match any value, runs of spaces any run (column
    widths), and a line ending in `...` is a prefix."""
    prefix = shown.endswith("...")
    if prefix:
        shown = shown[:-3]

    def literal(text: str) -> str:
        parts = re.split(r" +", text)
        return " +".join(
            re.escape(p).replace(re.escape("/home/you"), re.escape(home)) for p in parts
        )

    out, at = [], 0
    for match in _VOLATILE.finditer(shown):
        out.append(literal(shown[at : match.start()]))
        out.append(_REAL[match.lastgroup or ""])
        at = match.end()
    out.append(literal(shown[at:]))
    return re.compile("".join(out) + (".*" if prefix else ""))


def assert_shown(step: Step, output: str, home: str) -> None:
    """Every output line the README shows under `step` is printed, in that order; a `...`
    line stands for lines left out, and lines the README leaves out may appear anywhere."""
    actual = output.splitlines()
    at = 0
    for shown in step.expected:
        if shown.strip() in ("", "..."):
            continue
        pattern = line_pattern(shown, home)
        while at < len(actual) and not pattern.fullmatch(actual[at]):
            at += 1
        assert at < len(actual), (
            f"`{step.command}` did not print, in order, the README's line\n  {shown}\n"
            f"(pattern {pattern.pattern})\nIt printed:\n{output}"
        )
        at += 1
