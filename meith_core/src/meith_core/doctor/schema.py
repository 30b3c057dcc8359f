"""The JSON schema of `meith doctor --walls --json` (draft 2020-12): what scripts and CI may
rely on. `meith doctor --walls --schema` prints it."""

from __future__ import annotations

from typing import Any, Final

_COUNTS: Final[dict[str, Any]] = {
    "type": "object",
    "required": ["held", "breached", "skipped"],
    "additionalProperties": False,
    "properties": {k: {"type": "integer", "minimum": 0} for k in ("held", "breached", "skipped")},
}

_WALL: Final[dict[str, Any]] = {
    "type": "object",
    "required": ["wall", "built", "how"],
    "properties": {
        "wall": {"type": "string"},
        "built": {"type": "boolean"},
        "how": {"type": "string"},
        "fix": {"type": "string", "description": "What is missing and how to get it."},
    },
}

CARD_SCHEMA: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "meith doctor --walls --json",
    "type": "object",
    "required": ["host", "entries", "summary"],
    "properties": {
        "host": {
            "type": "object",
            "description": "Where the corpus ran: versions, the kernel's walls, plugins, programs.",
            "required": ["meith", "python", "system", "confinement", "plugins", "seconds"],
            "properties": {
                "meith": {"type": "string"},
                "python": {"type": "string"},
                "system": {"type": "string"},
                "machine": {"type": "string"},
                "root": {"type": "boolean"},
                "confinement": {
                    "type": "object",
                    "required": ["landlockAbi", "namespaces", "walls"],
                    "properties": {
                        "landlockAbi": {"type": "integer", "minimum": 0},
                        "namespaces": {"type": "boolean"},
                        "walls": {"type": "array", "items": _WALL},
                    },
                },
                "plugins": {"type": "array", "items": {"type": "string"}},
                "programs": {
                    "type": "object",
                    "additionalProperties": {"type": ["string", "null"]},
                },
                "seconds": {"type": "number", "minimum": 0},
            },
        },
        "entries": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "wall", "attack", "result", "why"],
                "properties": {
                    "id": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)+$"},
                    "wall": {"type": "string"},
                    "attack": {"type": "string"},
                    "assertion": {"type": "string"},
                    "result": {"enum": ["held", "breached", "skipped"]},
                    "why": {
                        "type": "string",
                        "description": "The evidence (held, breached) or the reason (skipped).",
                    },
                    "seconds": {"type": "number", "minimum": 0},
                },
            },
        },
        "walls": {"type": "object", "additionalProperties": _COUNTS},
        "summary": _COUNTS,
    },
}

__all__ = ["CARD_SCHEMA"]
