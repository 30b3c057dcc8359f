"""Runtime tool descriptors to MCP tools: which are listed, in what order, with which hints.

Hints come from what a tool declares — its capabilities and its effect — never from its name,
derived in one place (`protocol.capabilities.hints`): a client that trusts `readOnlyHint` must
be able to, because the runtime enforces the same declaration.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import mcp_types as types

from meith_core.mcp.profiles import Selection, widen_hint
from meith_core.protocol.capabilities import PRIVILEGED, Capability, Effect, hints

#: `_meta` namespace for what meith adds to MCP objects.
META_PREFIX = "dev.meith/"
#: Where content that is not an object goes in structured content (MCP wants an object).
RESULT_KEY = "result"
#: Providers whose privileged tools need no plugin approval (the host's own).
_HOST_PROVIDERS = frozenset({"core", "app"})
_MCP_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
_PRIVILEGED_VALUES = frozenset(c.value for c in PRIVILEGED)
_KNOWN_CAPABILITIES = frozenset(c.value for c in Capability)


def capabilities_of(descriptor: dict[str, Any]) -> list[str]:
    caps = descriptor.get("capabilities")
    return [str(c) for c in caps] if isinstance(caps, list) else []


def is_privileged(descriptor: dict[str, Any]) -> bool:
    return any(c in _PRIVILEGED_VALUES for c in capabilities_of(descriptor))


def is_plugin_approved(descriptor: dict[str, Any]) -> bool:
    approved = descriptor.get("approved")
    if isinstance(approved, bool):
        return approved
    # A runtime that does not say: only the host's own tools pass the provider gate unasked.
    return descriptor.get("plugin") in _HOST_PROVIDERS


def why_hidden(
    descriptor: dict[str, Any], selection: Selection, *, calling: bool = False
) -> str | None:
    """None when the tool is offered; else a sentence saying why not (for the agent).

    `calling`: the question is whether to forward a call, not whether to list the tool. A
    plugin that is not approved is then the runtime's to refuse, so that the refusal goes
    through its provider gate and lands in the audit trail like every other denial."""
    name = str(descriptor.get("name") or "")
    plugin = str(descriptor.get("plugin") or "")
    if not _MCP_NAME.match(name):
        return f'"{name}" is not a valid MCP tool name'
    if selection.plugins and plugin not in selection.plugins:
        return f'"{name}" belongs to plugin {plugin}, which this bridge does not offer (--plugins)'
    if not selection.picks(name, plugin):
        return (
            f'"{name}" is not among the tools this bridge offers (--tools '
            f"{selection.described}); {widen_hint(selection, name, plugin)}"
        )
    if is_privileged(descriptor):
        if selection.read_only:
            return f'"{name}" is privileged and this bridge is read-only (--read-only)'
        if not calling and not is_plugin_approved(descriptor):
            return (
                f'"{name}" needs plugin {plugin} to be approved first; '
                f"the user can run: meith plugins approve {plugin}"
            )
    return None


def annotations_for(descriptor: dict[str, Any]) -> types.ToolAnnotations:
    """The hints of `protocol.capabilities.hints`: capabilities and declared effect."""
    caps = [c for c in capabilities_of(descriptor) if c in _KNOWN_CAPABILITIES]
    effect = descriptor.get("effect")
    try:
        declared = Effect(effect) if isinstance(effect, str) else None
    except ValueError:  # a newer runtime's effect: judged by the capabilities alone
        declared = None
    read_only, destructive, idempotent, open_world = hints(
        caps, declared, bool(descriptor.get("idempotent", False))
    )
    return types.ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=open_world,
    )


def _object_schema(schema: Any) -> dict[str, Any] | None:
    return schema if isinstance(schema, dict) and schema.get("type") == "object" else None


def output_schema_of(schema: Any) -> dict[str, Any] | None:
    """The tool's output schema as MCP carries it: an object schema as it is; any other (a
    list) wrapped as `{"result": ...}`, the shape `mcp.content` gives such results."""
    if not isinstance(schema, dict) or not schema:
        return None
    if schema.get("type") == "object":
        return schema
    return {"type": "object", "properties": {RESULT_KEY: schema}, "required": [RESULT_KEY]}


def to_mcp_tool(descriptor: dict[str, Any], *, structured: bool = True) -> types.Tool:
    """The MCP tool of a runtime descriptor; its output schema only when the bridge sends
    structured content (`structured`), since a declared schema obliges every result to carry
    it."""
    caps = capabilities_of(descriptor)
    description = str(descriptor.get("description") or "")
    if caps:
        description = f"{description}\n\nCapabilities: {', '.join(caps)}.".lstrip()
    return types.Tool(
        name=str(descriptor["name"]),
        description=description,
        input_schema=_object_schema(descriptor.get("inputSchema"))
        or {"type": "object", "properties": {}},
        output_schema=output_schema_of(descriptor.get("outputSchema")) if structured else None,
        annotations=annotations_for(descriptor),
        _meta={
            META_PREFIX + "capabilities": caps,
            META_PREFIX + "plugin": descriptor.get("plugin"),
        },
    )


def offered(
    descriptors: Iterable[dict[str, Any]], selection: Selection
) -> dict[str, dict[str, Any]]:
    """The offered descriptors by name, in a stable (sorted) order."""
    keep = [d for d in descriptors if why_hidden(d, selection) is None]
    return {str(d["name"]): d for d in sorted(keep, key=lambda d: str(d["name"]))}
