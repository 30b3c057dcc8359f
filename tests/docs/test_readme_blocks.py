"""Every code block of every page of the documentation (the README, docs/, the plugins' READMEs:
the pages of the site mkdocs.yml builds) is run by a test or says it is illustrative; every
claim a test makes on a block names a page and a block that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.readme import ROOT, Block, blocks, doc_section

#: Pages whose blocks their own tests run whole, by their own rules.
OWN_TESTS = {
    # Python blocks run (test_plugin_guide.py), the tutorial's shell blocks run in a fresh venv
    # (test_plugin_author.py), the file listing is compared with the scaffold.
    "docs/plugin-guide.md": "tests/e2e/test_plugin_guide.py",
}
#: Pages whose blocks are diagrams (no language): the architecture document is its layers'
#: picture and, after the relayout, its folder tree.
DIAGRAMS_ONLY = {"docs/architecture.md"}


def _str(n: int) -> str:
    """A Python string literal whose quote is group `n` and whose text is group `n + 1`."""
    return rf"""(["'])((?:\\.|(?!\{n}).)+)\{n}"""


_DOC_BLOCK = re.compile(rf"\bdoc_block\(\s*{_str(1)}\s*,\s*{_str(3)}")
_DOC_SECTION = re.compile(rf"\bdoc_section\(\s*{_str(1)}(?:\s*,\s*{_str(3)})?\s*[,)]")
_README_BLOCK = re.compile(rf"\breadme_block\(\s*{_str(1)}")
_README_SECTION = re.compile(rf"\breadme_section\(\s*{_str(1)}")


def _unescape(value: str) -> str:
    return value.encode().decode("unicode_escape")


def site_pages() -> list[str]:
    """The pages of the site: docs/**/*.md and the repository files scripts/docs_site.py adds
    (read from its source: the tests do not need MkDocs installed)."""
    hook = (ROOT / "scripts" / "docs_site.py").read_text()
    (extra,) = [
        node.value
        for node in ast.parse(hook).body
        if isinstance(node, ast.AnnAssign | ast.Assign)
        and "EXTRA_PAGES"
        in ast.unparse(node.targets[0] if isinstance(node, ast.Assign) else node.target)
    ]
    pages = list(ast.literal_eval(extra))
    pages += [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "docs").rglob("*.md"))]
    return pages


def _claims() -> tuple[set[tuple[str, str]], set[tuple[str, str | None]]]:
    """(page, snippet) claimed by doc_block/readme_block, (page, title or None) by
    doc_section/readme_section, in every test file."""
    snippets: set[tuple[str, str]] = set()
    sections: set[tuple[str, str | None]] = set()
    for path in (ROOT / "tests").rglob("*.py"):
        if path.name == "readme.py":
            continue  # the helpers' own docstrings
        source = path.read_text()
        for m in _DOC_BLOCK.finditer(source):
            snippets.add((m.group(2), _unescape(m.group(4))))
        for m in _DOC_SECTION.finditer(source):
            sections.add((m.group(2), _unescape(m.group(4)) if m.group(4) else None))
        for m in _README_BLOCK.finditer(source):
            snippets.add(("README.md", _unescape(m.group(2))))
        for m in _README_SECTION.finditer(source):
            sections.add(("README.md", _unescape(m.group(2))))
    return snippets, sections


@pytest.fixture(scope="module")
def claims() -> tuple[set[tuple[str, str]], set[tuple[str, str | None]]]:
    """The claims of every test file, read once for the tests of this module (a page's test
    asks for them once per page)."""
    return _claims()


def _page_blocks(page: str) -> list[Block]:
    return blocks(ROOT / page) if (ROOT / page).exists() else []


def test_the_pages_include_the_readme_and_the_moved_sections() -> None:
    pages = site_pages()
    for page in ("README.md", "docs/python.md", "docs/plugins.md", "docs/protocol.md"):
        assert page in pages
    # Every plugin's README is a page of the site (a new plugin's too).
    for readme in sorted(ROOT.glob("meith_plugins_*/README.md")):
        assert readme.relative_to(ROOT).as_posix() in pages, f"add {readme} to EXTRA_PAGES"


def test_every_claim_names_a_page_and_a_block_that_exist(
    claims: tuple[set[tuple[str, str]], set[tuple[str, str | None]]],
) -> None:
    snippets, sections = claims
    assert snippets
    assert sections
    problems = []
    for page, snippet in sorted(snippets):
        found = [b for b in _page_blocks(page) if snippet in b.text]
        if not found:
            problems.append(f"no block of {page} contains {snippet!r}")
    for page, title in sorted(sections, key=str):
        try:
            if not doc_section(page, title):
                problems.append(f"{page} section {title!r} has no console block")
        except AssertionError as e:
            problems.append(str(e))
    assert problems == []


@pytest.mark.parametrize("page", site_pages())
def test_every_block_is_run_by_a_test_or_marked_illustrative(
    page: str, claims: tuple[set[tuple[str, str]], set[tuple[str, str | None]]]
) -> None:
    if page in OWN_TESTS:
        assert (ROOT / OWN_TESTS[page]).exists()
        return
    page_blocks = _page_blocks(page)
    if page in DIAGRAMS_ONLY:
        assert [b.line for b in page_blocks if b.lang and not b.illustrative] == []
        return
    snippets, sections = claims
    in_sections = {b.line for p, title in sections if p == page for b in doc_section(page, title)}
    claimed = {s for p, s in snippets if p == page}
    unclaimed = [
        f"{page}:{b.line} ({b.lang or 'text'}): {b.text.splitlines()[0][:60]}"
        for b in page_blocks
        if not b.illustrative
        and b.line not in in_sections
        and not any(s in b.text for s in claimed)
    ]
    assert unclaimed == [], "run these in a test or mark them <!-- illustrative: why -->"


@pytest.mark.parametrize("page", site_pages())
def test_a_block_marked_illustrative_says_why(page: str) -> None:
    for block in _page_blocks(page):
        if block.illustrative:
            assert (block.marker or "").startswith("illustrative: "), f"{page}:{block.line}"


def test_the_readme_keeps_no_block_the_pages_claim(
    claims: tuple[set[tuple[str, str]], set[tuple[str, str | None]]],
) -> None:
    """The README is the front door: a block a test runs from a docs page is not also left
    behind in it (where the tests would no longer look)."""
    snippets, _ = claims
    readme = blocks(ROOT / "README.md")
    stale = [
        (page, s)
        for page, s in snippets
        if page != "README.md" and any(s in b.text for b in readme)
    ]
    assert stale == []


def test_mkdocs_yml_has_every_docs_page_in_its_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text().split("\nnav:\n", 1)[1]
    site = {Path(p).as_posix() for p in re.findall(r":\s*(\S+\.md)\s*$", nav, flags=re.M)}
    docs = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert docs <= site
