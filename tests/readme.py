"""The README's fenced code blocks, for the tests that run them.

A block is either run by a test, which finds it with `readme_block("a snippet of it")` (or,
for the console transcripts of a whole section, `readme_section("Title")`), or marked
illustrative with an HTML comment on the line above its fence (`<!-- illustrative: why -->`,
invisible on GitHub). tests/docs/test_readme_blocks.py checks that every block is one or the
other.
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

    @property
    def illustrative(self) -> bool:
        return self.marker is not None and self.marker.startswith("illustrative")


def blocks(path: Path = README) -> list[Block]:
    source = path.read_text()
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
            )
        )
    return out


def readme_block(snippet: str, lang: str | None = None) -> Block:
    """The one README block that contains `snippet`."""
    found = [b for b in blocks() if snippet in b.text and (lang is None or b.lang == lang)]
    assert len(found) == 1, f"{len(found)} README blocks contain {snippet!r}"
    return found[0]


def readme_section(title: str, lang: str = "console") -> list[Block]:
    """The README's `lang` blocks under the heading `## title`, in order."""
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    first = text.count("\n", 0, start) + 1
    last = text.count("\n", 0, end) + 1 if end != -1 else len(text)
    return [b for b in blocks() if first < b.line < last and b.lang == lang]


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


#: What differs from run to run in a transcript: (how the README shows it, what a run prints).
_VOLATILE = re.compile(
    r"(?P<date>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)"
    r"|(?P<ms>\b\d+(?:\.\d+)?ms\b)"
    r"|(?P<grant>\bg_[0-9a-f]{12}\b)"
    r"|(?P<pid>\(pid \d+\))"
    r"|(?P<sha>\[main [0-9a-f]{7}\])"
)
_REAL = {
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
