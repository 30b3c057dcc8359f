"""What `send_keys` sends: a named key, a key combination, or literal text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

#: The named keys a caller may press.
NAMED_KEYS: Final = frozenset(
    {
        "Enter",
        "Tab",
        "Backspace",
        "Delete",
        "Escape",
        "ArrowUp",
        "ArrowDown",
        "ArrowLeft",
        "ArrowRight",
        "Home",
        "End",
        "PageUp",
        "PageDown",
    }
)
MODIFIERS: Final = ("Control", "Shift", "Alt", "Meta", "ControlOrMeta")

_MODIFIER_ALT = "|".join(MODIFIERS)
_NAMED_ALT = "|".join(sorted(NAMED_KEYS, key=len, reverse=True))
_COMBO: Final = re.compile(rf"^(?:(?:{_MODIFIER_ALT})\+)+(?:{_NAMED_ALT}|[\x21-\x7e])$")


@dataclass(frozen=True, slots=True)
class KeyInput:
    kind: Literal["press", "type"]
    value: str


def parse_keys(keys: str) -> KeyInput:
    """`Enter` and `Control+a` are pressed; anything else is typed character by character."""
    if keys in NAMED_KEYS or _COMBO.match(keys):
        return KeyInput("press", keys)
    return KeyInput("type", keys)
