"""Self-contained JSON Schemas from pydantic models (no `$ref`), as the protocol promises."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class SchemaError(ValueError):
    """A model whose schema cannot be made self-contained (e.g. a recursive model)."""


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema with every `$ref` to `$defs` inlined."""
    schema = model.model_json_schema()
    defs: dict[str, Any] = schema.pop("$defs", {})

    def resolve(node: Any, active: frozenset[str]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref[len("#/$defs/") :]
                if name in active:
                    raise SchemaError(
                        f"{model.__name__}: recursive model {name!r} cannot be inlined; "
                        "tool inputs must not be recursive"
                    )
                if name not in defs:
                    raise SchemaError(f"{model.__name__}: dangling $ref {ref!r}")
                target = resolve(defs[name], active | {name})
                rest = {k: resolve(v, active) for k, v in node.items() if k != "$ref"}
                return {**target, **rest}
            return {k: resolve(v, active) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(item, active) for item in node]
        return node

    resolved: dict[str, Any] = resolve(schema, frozenset())
    return resolved
