"""A call approval: how long a person is given to answer (`MEITH_APPROVAL_TIMEOUT_S`)."""

from __future__ import annotations

import pytest

from meith_core.protocol.call_approval import call_approval_timeout_s


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, 60.0),
        ("2", 2.0),
        (" 0.5 ", 0.5),
        ("300", 300.0),
        # A typo must not mean "deny at once" or "wait forever".
        ("0", 60.0),
        ("-5", 60.0),
        ("nan", 60.0),
        ("inf", 60.0),
        ("1e9", 60.0),
        ("sixty", 60.0),
        ("", 60.0),
    ],
)
def test_the_approval_timeout_knob(value: str | None, seconds: float) -> None:
    environ = {} if value is None else {"MEITH_APPROVAL_TIMEOUT_S": value}
    assert call_approval_timeout_s(environ) == seconds
