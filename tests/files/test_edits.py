"""workspace_apply_patch: exact-text and range edits, all or nothing, with messages that say
how many matches there were and where; dry runs; CRLF files."""

from __future__ import annotations

from pathlib import Path

import pytest

from meith_core.testing import MeithHarness
from tests.files.conftest import fails, ok

pytestmark = pytest.mark.meith_plugin("files")

SOURCE = "def a():\n    return 1\n\n\ndef b():\n    return 1\n"


def patch(meith: MeithHarness, ws: Path, edits: list, **args: object) -> dict:
    return ok(
        meith, "workspace_apply_patch", {"cwd": str(ws), "path": "m.py", "edits": edits, **args}
    )


def patch_error(meith: MeithHarness, ws: Path, edits: list):
    return fails(meith, "workspace_apply_patch", {"cwd": str(ws), "path": "m.py", "edits": edits})


@pytest.fixture
def src(ws: Path) -> Path:
    (ws / "m.py").write_text(SOURCE)
    return ws / "m.py"


def test_an_exact_text_edit_returns_the_unified_diff(
    files: MeithHarness, ws: Path, src: Path
) -> None:
    got = patch(
        files, ws, [{"oldText": "def a():\n    return 1", "newText": "def a():\n    return 2"}]
    )
    assert src.read_text() == SOURCE.replace("return 1", "return 2", 1)
    assert got["applied"] == 1
    assert got["diff"] == (
        "--- a/m.py\n+++ b/m.py\n@@ -1,5 +1,5 @@\n def a():\n-    return 1\n+    return 2\n \n \n"
        " def b():\n"
    )


def test_an_ambiguous_edit_says_how_many_matches_and_where_and_changes_nothing(
    files: MeithHarness, ws: Path, src: Path
) -> None:
    err = patch_error(files, ws, [{"oldText": "return 1", "newText": "return 2"}])
    assert err.message == (
        "edit 1: oldText matches 2 times in m.py (lines 2, 6); include more surrounding lines "
        "to make it unique, or set replaceAll: true. Nothing was changed."
    )
    assert err.details["lines"] == [2, 6]
    assert src.read_text() == SOURCE


def test_replace_all_replaces_every_match(files: MeithHarness, ws: Path, src: Path) -> None:
    got = patch(files, ws, [{"oldText": "return 1", "newText": "return 0", "replaceAll": True}])
    assert got["applied"] == 2
    assert src.read_text().count("return 0") == 2


def test_a_missing_match_says_zero_and_points_at_a_whitespace_near_miss(
    files: MeithHarness, ws: Path, src: Path
) -> None:
    err = patch_error(files, ws, [{"oldText": "def b():\n  return 1", "newText": "x"}])
    assert err.message == (
        "edit 1: oldText was not found in m.py (0 matches); it matches at line 5 when "
        "whitespace is ignored (check spaces, indentation and line breaks). Nothing was changed."
    )
    # Spaces where the file has none (`sum( items )` against `sum(items)`) are a near miss too.
    inside = patch_error(files, ws, [{"oldText": "def b( ):", "newText": "x"}])
    assert "0 matches); it matches at line 5 when whitespace is ignored" in inside.message
    plain = patch_error(files, ws, [{"oldText": "nowhere", "newText": "x"}])
    assert (
        plain.message == "edit 1: oldText was not found in m.py (0 matches). Nothing was changed."
    )
    assert src.read_text() == SOURCE


def test_all_or_nothing_a_failing_second_edit_leaves_the_first_unapplied(
    files: MeithHarness, ws: Path, src: Path
) -> None:
    err = patch_error(
        files,
        ws,
        [{"oldText": "def a", "newText": "def aa"}, {"oldText": "def zz", "newText": "x"}],
    )
    assert err.message.startswith("edit 2: oldText was not found")
    assert src.read_text() == SOURCE


def test_overlapping_edits_are_refused(files: MeithHarness, ws: Path, src: Path) -> None:
    err = patch_error(
        files,
        ws,
        [{"oldText": "def a():", "newText": "x"}, {"start": 4, "end": 12, "newText": "y"}],
    )
    assert err.message.startswith("edits 1 and 2 overlap (at line 1)")
    assert src.read_text() == SOURCE


def test_range_edits_replace_characters_of_the_text_as_read(
    files: MeithHarness, ws: Path, src: Path
) -> None:
    start = SOURCE.index("b()")
    got = patch(
        files,
        ws,
        [
            {"start": start, "end": start + 1, "newText": "beta"},
            {"start": 0, "end": 0, "newText": "# top\n"},
        ],
    )
    assert src.read_text() == "# top\n" + SOURCE.replace("def b", "def beta")
    assert got["applied"] == 2
    bad = patch_error(files, ws, [{"start": 5, "end": 10_000, "newText": ""}])
    assert "is not within m.py" in bad.message


def test_dry_run_returns_the_diff_and_writes_nothing(
    files: MeithHarness, ws: Path, src: Path
) -> None:
    got = patch(files, ws, [{"oldText": "def a", "newText": "def alpha"}], dryRun=True)
    assert got["dryRun"] is True
    assert "-def a():\n+def alpha():\n" in got["diff"]
    assert src.read_text() == SOURCE
    assert got["undoSteps"] == 0


def test_lf_old_text_matches_a_crlf_file_and_crlf_is_written(files: MeithHarness, ws: Path) -> None:
    (ws / "m.py").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    patch(files, ws, [{"oldText": "one\ntwo", "newText": "ONE\nTWO"}])
    assert (ws / "m.py").read_bytes() == b"ONE\r\nTWO\r\nthree\r\n"


def test_patching_a_missing_file_says_to_create_it(files: MeithHarness, ws: Path) -> None:
    err = patch_error(files, ws, [{"oldText": "a", "newText": "b"}])
    assert "does not exist" in err.message


def test_a_stale_expected_sha256_refuses_the_patch(
    files: MeithHarness, ws: Path, src: Path
) -> None:
    err = fails(
        files,
        "workspace_apply_patch",
        {
            "cwd": str(ws),
            "path": "m.py",
            "edits": [{"oldText": "def a", "newText": "x"}],
            "expectedSha256": "a" * 64,
        },
    )
    assert err.details["reason"] == "conflict"
    assert src.read_text() == SOURCE
