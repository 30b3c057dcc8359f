"""Every code block of the README is run by a test or says it is illustrative."""

from __future__ import annotations

import re

from tests.readme import ROOT, blocks, readme_section

_CLAIM = re.compile(r"""readme_(block|section)\(\s*(["'])(.+?)\2""")


def _claims() -> tuple[set[str], set[str]]:
    snippets: set[str] = set()
    sections: set[str] = set()
    for path in (ROOT / "tests").rglob("*.py"):
        for kind, _, value in _CLAIM.findall(path.read_text()):
            if path.name == "readme.py" or "Title" in value or "a snippet" in value:
                continue  # the helper's own docstring
            (snippets if kind == "block" else sections).add(value.encode().decode("unicode_escape"))
    return snippets, sections


def test_every_readme_block_is_run_by_a_test_or_marked_illustrative() -> None:
    snippets, sections = _claims()
    in_sections = {b.line for title in sections for b in readme_section(title)}
    unclaimed = [
        f"README.md:{b.line} ({b.lang or 'text'}): {b.text.splitlines()[0][:60]}"
        for b in blocks()
        if not b.illustrative
        and b.line not in in_sections
        and not any(s in b.text for s in snippets)
    ]
    assert unclaimed == [], "run these in a test or mark them <!-- illustrative: why -->"


def test_a_block_marked_illustrative_says_why() -> None:
    for block in blocks():
        if block.illustrative:
            assert (block.marker or "").startswith("illustrative: "), block.line
