"""The hookspecs, the whole plugin contract: each one says what it is for."""

from __future__ import annotations

import inspect

from meith_core.host.plugins import hookspecs


def test_every_hookspec_is_documented() -> None:
    specs = [
        "meith_tools",
        "meith_settings",
        "meith_startup",
        "meith_shutdown",
        "meith_session_ended",
        "meith_approve",
    ]
    for name in specs:
        doc = inspect.getdoc(getattr(hookspecs, name))
        assert doc, name
        assert len(doc) > 40, name
