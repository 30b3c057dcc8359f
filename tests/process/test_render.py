"""A command's result as text for a model."""

from __future__ import annotations

from meith_plugins_process.render import render_result


def test_the_rendered_text_says_how_it_ended() -> None:
    base = {"stdout": "", "stderr": "", "confinedTo": None, "timedOut": False}
    assert render_result({**base, "exitCode": 0, "signal": None, "durationMs": 5}) == (
        "exit 0 in 5 ms"
    )
    assert render_result({**base, "exitCode": None, "signal": "SIGKILL", "durationMs": 40}) == (
        "killed by SIGKILL in 40 ms"
    )
    timed_out = {
        **base,
        "exitCode": None,
        "signal": "SIGTERM",
        "timedOut": True,
        "durationMs": 120_100,
        "confinedTo": "/repo",
        "stderr": "partial\n[... 10 bytes elided ...]\nend\n",
    }
    assert render_result(timed_out) == (
        "timed out, ended by SIGTERM after 120.1 s, confined to /repo\n"
        "--- stderr\npartial\n[... 10 bytes elided ...]\nend"
    )
