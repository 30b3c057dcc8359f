"""What `send_keys` sends."""

from __future__ import annotations

import pytest

from meith_plugins_browser.keys import parse_keys


@pytest.mark.parametrize(
    ("keys", "kind"),
    [
        ("Enter", "press"),
        ("PageDown", "press"),
        ("Control+a", "press"),
        ("Shift+Tab", "press"),
        ("Control+Shift+ArrowLeft", "press"),
        ("hello", "type"),
        ("a+b", "type"),
        ("enter", "type"),
        ("Enter\n", "type"),
    ],
)
def test_send_keys_parsing(keys: str, kind: str) -> None:
    parsed = parse_keys(keys)
    assert (parsed.kind, parsed.value) == (kind, keys)
