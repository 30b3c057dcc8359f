"""A runtime ToolResult (and the artifacts its call streamed) as an MCP CallToolResult.

The structured content is the tool's content; MCP wants an object there, so content that is
not one (a list, a string, a number) is `{"result": <content>}`, and the text says the same
(the output schema is wrapped likewise, `mcp.tools.output_schema_of`).
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import mcp_types as types

from meith_core.base.paths import is_within
from meith_core.mcp.call_approval import denial_hint
from meith_core.mcp.tools import META_PREFIX, RESULT_KEY

#: Largest artifact file inlined as image or audio content; bigger ones become resource links.
MAX_INLINE_BYTES = 8 * 1024 * 1024


def _text(value: Any) -> str:
    """Content the tool did not render, as compact JSON (a model reads it as well as indented
    JSON, for far fewer characters)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def error_content(code: str, message: str, details: Any = None) -> types.CallToolResult:
    """A failure the agent reads: meith's code and message, as an isError result."""
    error: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    return types.CallToolResult(
        content=[types.TextContent(text=f"{code}: {message}")],
        is_error=True,
        _meta={META_PREFIX + "error": error},
    )


def to_call_result(
    result: dict[str, Any],
    artifacts: list[dict[str, Any]],
    artifacts_dir: Path | None,
    *,
    structured: bool = True,
) -> types.CallToolResult:
    """The MCP result: the text for the model (the tool's rendering, else its content as
    compact JSON), and with `structured` the content as `structuredContent` too."""
    meta: dict[str, Any] = {}
    if result.get("meta"):
        meta[META_PREFIX + "meta"] = result["meta"]
    if result.get("diagnostics"):
        meta[META_PREFIX + "diagnostics"] = result["diagnostics"]
    if not result.get("ok"):
        raw = result.get("error")
        err: dict[str, Any] = raw if isinstance(raw, dict) else {}
        out = error_content(
            str(err.get("code") or "TOOL_FAILED"),
            str(err.get("message") or "the tool failed"),
            err.get("details"),
        )
        out.meta = {**(out.meta or {}), **meta}
        return out
    content = result.get("content")
    text = result.get("text")
    blocks: list[types.ContentBlock] = []
    machine: dict[str, Any] | None = None
    if content is not None:
        machine = content if isinstance(content, dict) else {RESULT_KEY: content}
    if isinstance(text, str):
        blocks.append(types.TextContent(text=text))
    elif machine is not None:
        blocks.append(types.TextContent(text=_text(machine)))
    blocks.extend(artifact_block(a, artifacts_dir) for a in artifacts)
    return types.CallToolResult(
        content=blocks, structured_content=machine if structured else None, _meta=meta or None
    )


def agent_result(
    result: dict[str, Any],
    artifacts: list[dict[str, Any]],
    artifacts_dir: Path | None,
    *,
    structured: bool,
    tool: str,
    plugin: str | None,
    label: str,
) -> types.CallToolResult:
    """What an agent receives for a call: `to_call_result`, a gate's denial saying what the
    user can run to allow it for this agent. The bridge answers with it, and `meith call
    --as-agent` prints it."""
    return to_call_result(
        with_denial_hint(result, tool, plugin, label),
        artifacts,
        artifacts_dir,
        structured=structured,
    )


def with_denial_hint(
    result: dict[str, Any], tool: str, plugin: str | None, label: str
) -> dict[str, Any]:
    """A gate's denial with the grant (and the plugin approval) that would allow the call."""
    error = result.get("error")
    raw = error.get("details") if isinstance(error, dict) else None
    details: dict[str, Any] = raw if isinstance(raw, dict) else {}
    required = details.get("required") or details.get("missing") or []
    # Only a gate's denial names the capabilities a grant (or an approval) would give; an
    # ownership denial, or a tool's own refusal, is not lifted by any grant.
    if not (
        isinstance(error, dict)
        and error.get("code") == "PERMISSION_DENIED"
        and details.get("gate") in ("caller", "provider")
        and required
    ):
        return result
    hint = denial_hint(
        tool,
        plugin if details.get("gate") == "provider" else None,
        [str(c) for c in required],
        label,
    )
    message = str(error.get("message") or "").rstrip()
    if "meith grants add" not in message:  # the runtime's own hint already names it
        message = f"{message.rstrip('.')}. Then the agent needs a grant too. {hint}"
    return {**result, "error": {**error, "message": message}}


def artifact_block(event: dict[str, Any], artifacts_dir: Path | None) -> types.ContentBlock:
    """Images and audio inline (what MCP has media content for); anything else as an embedded
    or linked resource."""
    mime = str(event.get("mimeType") or "application/octet-stream")
    name = str(event.get("name") or "artifact")
    data_b64 = event.get("dataBase64") if isinstance(event.get("dataBase64"), str) else None
    path = event.get("path") if isinstance(event.get("path"), str) else None
    media = mime.startswith(("image/", "audio/"))
    if data_b64 is None and path is not None and media:
        data_b64 = _read_artifact(path, artifacts_dir)
    if data_b64 is not None and mime.startswith("image/"):
        return types.ImageContent(data=data_b64, mime_type=mime)
    if data_b64 is not None and mime.startswith("audio/"):
        return types.AudioContent(data=data_b64, mime_type=mime)
    if data_b64 is not None:
        uri = Path(path).resolve().as_uri() if path else f"meith-artifact:///{name}"
        return types.EmbeddedResource(
            resource=types.BlobResourceContents(uri=uri, mime_type=mime, blob=data_b64)
        )
    uri = Path(path).resolve().as_uri() if path else f"meith-artifact:///{name}"
    return types.ResourceLink(uri=uri, name=name, mime_type=mime)


def _read_artifact(path: str, artifacts_dir: Path | None) -> str | None:
    # Only files the runtime keeps under $MEITH_HOME/artifacts are read back: an event's
    # path is a plugin's word, and the bridge must not become a way to read any file.
    if artifacts_dir is None or not is_within(os.path.realpath(path), str(artifacts_dir)):
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_INLINE_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_INLINE_BYTES:
        return None
    return base64.b64encode(data).decode("ascii")
