"""How `meith call` shows a call's events: a wait for a person is said whatever else is shown."""

from __future__ import annotations

import pytest

from meith_core.cli.output import EventPrinter

WAITING = {
    "kind": "progress",
    "message": "waiting for approval in the meith ui console at http://127.0.0.1:1/: denied "
    "after 60 s without an answer",
    "awaiting": "approval",
}


@pytest.mark.parametrize(
    "mode", [{"as_json": True}, {"quiet": True}, {}], ids=["json", "quiet", "plain"]
)
def test_a_wait_for_approval_is_a_line_on_stderr_in_every_mode(
    mode: dict[str, bool], capsys: pytest.CaptureFixture[str]
) -> None:
    printer = EventPrinter(
        verbose=False, quiet=mode.get("quiet", False), as_json=mode.get("as_json", False)
    )
    printer(WAITING)
    printer.close()
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"… {WAITING['message']}\n"


def test_other_progress_stays_out_of_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    printer = EventPrinter(verbose=False, quiet=False, as_json=True)
    printer({"kind": "progress", "message": "half way", "fraction": 0.5})
    assert capsys.readouterr() == ("", "")
