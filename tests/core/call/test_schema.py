"""Self-contained JSON schemas from the input models: nested models inlined, recursive ones
refused."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from meith_core import Runtime
from meith_core.call.schema import SchemaError
from tests.core.call.support import defn


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["a", "b"] = "a"
    depth: int = Field(default=1, ge=0, description="How deep")


class Middle(BaseModel):
    model_config = ConfigDict(extra="forbid")
    inner: Inner
    inners: list[Inner] = []


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    middle: Middle
    maybe: Inner | None = None
    by_name: dict[str, Inner] = {}


def _refs(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("$ref", "$defs", "definitions"):
                found.append(k)
            found.extend(_refs(v))
    elif isinstance(node, list):
        for item in node:
            found.extend(_refs(item))
    return found


def test_input_schemas_are_self_contained_with_nested_models_inlined() -> None:
    schema = defn(input_model=Outer).input_schema
    assert _refs(schema) == []
    inner = schema["properties"]["middle"]["properties"]["inner"]
    assert inner["properties"]["mode"]["enum"] == ["a", "b"]
    assert inner["properties"]["depth"]["description"] == "How deep"
    assert inner["additionalProperties"] is False
    assert schema["properties"]["middle"]["properties"]["inners"]["items"]["properties"]["depth"]
    assert schema["additionalProperties"] is False
    json.dumps(schema)  # plain JSON


@pytest.mark.anyio
async def test_a_recursive_input_model_is_refused_at_registration(runtime: Runtime) -> None:
    class Node(BaseModel):
        model_config = ConfigDict(extra="forbid")
        children: list[Node] = []

    Node.model_rebuild()
    d = defn(input_model=Node)
    with pytest.raises(SchemaError, match="recursive"):
        runtime.register(d)
    assert "echo" not in runtime.catalogue
