"""What the bridge's tests share: a tool descriptor as the runtime lists it."""

from __future__ import annotations

from typing import Any


def desc(name: str, *caps: str, plugin: str = "p", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"{name} does things",
        "inputSchema": {"type": "object", "properties": {}},
        "capabilities": list(caps),
        "plugin": plugin,
        **extra,
    }
