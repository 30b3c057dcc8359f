"""The results as text for a model: numbered lines, grep-like hits, one path a line (odd names
quoted), edits as their diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from meith_core.testing import MeithHarness

pytestmark = pytest.mark.meith_plugin("files")


def text_of(meith: MeithHarness, tool: str, args: dict) -> str:
    result = meith.call(tool, args, caller="internal")
    assert result.ok, result.error
    assert isinstance(result.text, str)
    assert "{" not in result.text.splitlines()[0]  # a view, not the JSON again
    return result.text


def test_reads_render_as_numbered_lines(files: MeithHarness, ws: Path) -> None:
    (ws / "a.py").write_text("x = 1\ny = 2\nz = 3\n")
    text = text_of(
        files, "workspace_read_file", {"cwd": str(ws), "path": "a.py", "offset": 2, "limit": 1}
    )
    assert text.splitlines()[1:] == ["2\ty = 2"]
    assert text.splitlines()[0].startswith("a.py lines 2-2 of 3 (utf-8, lf, sha256 ")
    assert text.splitlines()[0].endswith("; more follows: offset 3")


def test_search_hits_render_as_path_line_column_text(files: MeithHarness, ws: Path) -> None:
    (ws / "a.py").write_text("first\nthe needle\n")
    (ws / "odd\nname.py").write_text("needle\n")
    text = text_of(files, "workspace_search", {"cwd": str(ws), "query": "needle"})
    assert sorted(text.splitlines()) == ['"odd\\nname.py":1:1: needle', "a.py:2:5: the needle"]


def test_a_listing_renders_one_line_a_file_with_odd_names_quoted(
    files: MeithHarness, ws: Path
) -> None:
    (ws / "plain.py").write_text("")
    (ws / "sp ace ü.py").write_text("")
    (ws / "odd\nname.py").write_text("")
    (ws / "tab\there.py").write_text("")
    text = text_of(files, "workspace_list_files", {"cwd": str(ws)})
    assert sorted(text.splitlines()) == sorted(
        ['"odd\\nname.py"', "plain.py", "sp ace ü.py", '"tab\\there.py"']
    )
    (ws / "odd\nname.py").unlink()
    (ws / "tab\there.py").unlink()
    text = text_of(files, "workspace_list_files", {"cwd": str(ws)})
    assert sorted(text.splitlines()) == ["plain.py", "sp ace ü.py"]


def test_search_context_renders_like_grep(files: MeithHarness, ws: Path) -> None:
    (ws / "a.py").write_text("one\ntwo\nneedle\nfour\n")
    text = text_of(
        files, "workspace_search", {"cwd": str(ws), "query": "needle", "contextLines": 1}
    )
    assert text.splitlines() == ["a.py-2- two", "a.py:3:1: needle", "a.py-4- four"]


def test_edits_render_as_their_diff(files: MeithHarness, ws: Path) -> None:
    (ws / "a.py").write_text("old\n")
    text = text_of(
        files,
        "workspace_apply_patch",
        {"cwd": str(ws), "path": "a.py", "edits": [{"oldText": "old", "newText": "new"}]},
    )
    assert text.splitlines()[1:] == ["--- a/a.py", "+++ b/a.py", "@@ -1 +1 @@", "-old", "+new"]


def test_listings_render_one_path_a_line(files: MeithHarness, ws: Path) -> None:
    (ws / "b.txt").write_text("")
    (ws / "a.txt").write_text("")
    assert text_of(files, "workspace_list_files", {"cwd": str(ws)}) == "a.txt\nb.txt"
