"""Every field of every first-party tool says what it is: `meith call TOOL --help`, MCP clients
and agents read these descriptions, and a bare field name leaves them guessing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meith_core import MeithHome, Runtime

FIRST_PARTY = {"core", "git", "process", "browser", "files"}


def _undescribed(schema: Any, where: str) -> Iterator[str]:
    """Paths of properties without a non-empty description, through nested objects, array
    items, maps and unions."""
    if not isinstance(schema, dict):
        return
    for name, prop in (schema.get("properties") or {}).items():
        path = f"{where}.{name}"
        if not (isinstance(prop, dict) and str(prop.get("description") or "").strip()):
            yield path
        yield from _nested(prop, path)


def _nested(schema: Any, where: str) -> Iterator[str]:
    if not isinstance(schema, dict):
        return
    yield from _undescribed(schema, where)
    for key in ("items", "additionalProperties"):
        yield from _nested(schema.get(key), f"{where}[]")
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key) or []:
            yield from _nested(branch, where)


def test_walker_finds_nested_fields_without_descriptions() -> None:
    schema = {
        "properties": {
            "a": {"description": "ok", "items": {"properties": {"b": {"type": "string"}}}},
            "c": {"anyOf": [{"properties": {"d": {"description": " "}}}, {"type": "null"}]},
        }
    }
    assert list(_undescribed(schema, "t")) == ["t.a[].b", "t.c", "t.c.d"]


@pytest.mark.slow
def test_every_input_field_of_every_first_party_tool_has_a_description(tmp_path: Path) -> None:
    runtime = Runtime(MeithHome(tmp_path / "home"))
    loaded = {r.id for r in runtime.discover_plugins() if r.status == "loaded"}
    if "browser" not in loaded:
        pytest.skip("the browser plugin is not installed here")
    assert loaded >= FIRST_PARTY
    tools = [d for d in runtime.describe() if d["plugin"] in FIRST_PARTY]
    assert {d["plugin"] for d in tools} == FIRST_PARTY
    missing = [
        path for d in tools for path in _undescribed(d["inputSchema"], f"{d['plugin']}:{d['name']}")
    ]
    assert missing == []
