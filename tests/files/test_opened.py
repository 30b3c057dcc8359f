"""The files tools act on what they checked: a workspace path is opened once through the
workspace's descriptor, following no link, and every read, write and removal goes through that
descriptor. A process beside the agent that swaps a directory for a link to somewhere else
(`renameat2(RENAME_EXCHANGE)`, in a loop) never turns a call outside the workspace.

These reproduce the attacks of the "walls on handles" issue: before, `workspace_read_file
sub/id_rsa` returned the outside key in a few calls of hundreds, an `apply_patch` dry run
printed it, and `workspace_undo force` deleted the outside file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from meith_core.doctor import probes
from meith_core.testing import MeithHarness

pytestmark = [pytest.mark.meith_plugin("files"), pytest.mark.slow]

#: Calls per test: the old code leaked in about one call of a hundred.
CALLS = 400
SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- outside\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside the workspace with what must never be read or touched."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "id_rsa").write_text(SECRET)
    return out


@pytest.fixture
def swapping(ws: Path, outside: Path, tmp_path: Path) -> Iterator[None]:
    """`ws/sub` (a real directory with a decoy) and `ws/link` (a link to `outside`) swapped
    in a loop by another process for as long as the test runs."""
    (ws / "sub").mkdir()
    (ws / "sub" / "id_rsa").write_text("decoy\n")
    (ws / "link").symlink_to(outside)
    with probes.swapping(ws / "sub", ws / "link", tmp_path / "stop"):
        yield


def _never_crashed(result: object) -> None:
    """A race is answered with a ToolError that says what happened, never "tool raised"."""
    error = getattr(result, "error", None)
    if error is not None:
        assert "raised" not in error.message, error.message


@pytest.mark.usefixtures("swapping")
def test_a_read_racing_a_swapped_directory_never_returns_what_is_outside(
    files: MeithHarness, ws: Path
) -> None:
    agent = files.session("agent", cwd=ws)
    seen = set()
    for _ in range(CALLS):
        result = files.call(
            "workspace_read_file", {"cwd": str(ws), "path": "sub/id_rsa"}, caller=agent
        )
        _never_crashed(result)
        if result.ok:
            assert isinstance(result.content, dict)
            seen.add(result.content["content"])
            assert SECRET not in result.content["content"]
    assert seen <= {"decoy\n"}


@pytest.mark.usefixtures("swapping")
def test_a_patch_dry_run_racing_a_swap_never_prints_what_is_outside(
    files: MeithHarness, ws: Path
) -> None:
    agent = files.grant(["writes-files"], caller="agent", confine_to=ws)
    files.approve()
    for _ in range(CALLS):
        result = files.call(
            "workspace_apply_patch",
            {
                "cwd": str(ws),
                "path": "sub/id_rsa",
                "edits": [{"oldText": "\n", "newText": "\n\n"}],
                "dryRun": True,
            },
            caller=agent,
        )
        _never_crashed(result)
        shown = str(result.content) + (result.error.message if result.error else "")
        assert "PRIVATE KEY" not in shown


@pytest.mark.usefixtures("swapping")
def test_write_and_undo_racing_a_swap_never_touch_what_is_outside(
    files: MeithHarness, ws: Path, outside: Path
) -> None:
    # Undoing the creation of sub/freshN.txt removes it: before, by name, through the link,
    # which removed outside/freshN.txt instead.
    agent = files.grant(["writes-files"], caller="agent", confine_to=ws)
    files.approve()
    names = [f"fresh{i}.txt" for i in range(CALLS)]
    for name in names:
        (outside / name).write_text("keep\n")
    for name in names:
        for tool, extra in (
            ("workspace_write_file", {"content": "new\n"}),
            ("workspace_undo", {"force": True}),
        ):
            result = files.call(
                tool, {"cwd": str(ws), "path": f"sub/{name}", **extra}, caller=agent
            )
            _never_crashed(result)
    assert sorted(p.name for p in outside.iterdir()) == sorted([*names, "id_rsa"])
    assert {(outside / n).read_text() for n in names} == {"keep\n"}
