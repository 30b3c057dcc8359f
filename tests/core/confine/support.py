"""What the confinement tests share: whether this kernel can confine, the walls a host without
user namespaces cannot build, and the `key:value` lines a step script prints."""

from __future__ import annotations

import pytest

from meith_core import landlock_status

needs_landlock = pytest.mark.skipif(
    not landlock_status().available, reason="this kernel has no Landlock"
)
needs_namespaces = pytest.mark.skipif(
    not landlock_status().namespaces, reason="no user namespaces here"
)

#: What cannot be built without user namespaces (terminals and secrets are then Landlock's).
MISSING = {
    "homes-and-sockets-hidden",
    "git-metadata",
    "udp",
    "user-sockets",
    "members",
    "secret-files",
}


def results(text: str) -> dict[str, str]:
    """`key:value` lines of a step script."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition(":")
        if sep and key.isidentifier():
            found.setdefault(key, value)
    return found
