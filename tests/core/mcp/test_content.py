"""Results to MCP content: structured content beside the text, namespaced meta, artifacts as
images or resources."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import mcp_types as types

from meith_core.mcp.content import to_call_result
from meith_core.mcp.tools import to_mcp_tool
from tests.core.mcp.support import desc


def test_results_become_structured_content_with_text_and_namespaced_meta() -> None:
    result = to_call_result(
        {
            "ok": True,
            "content": {"a": 1},
            "meta": {"truncated": True},
            "diagnostics": [{"level": "warn", "message": "w"}],
        },
        [],
        None,
    )
    assert result.structured_content == {"a": 1}
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == '{"a":1}'  # compact: no indentation spent on a model
    assert result.meta == {
        "dev.meith/meta": {"truncated": True},
        "dev.meith/diagnostics": [{"level": "warn", "message": "w"}],
    }
    listed = to_call_result({"ok": True, "content": [1, 2]}, [], None)
    assert listed.structured_content == {"result": [1, 2]}
    rendered = to_call_result({"ok": True, "content": {"a": 1}, "text": "a is 1"}, [], None)
    assert isinstance(rendered.content[0], types.TextContent)
    assert rendered.content[0].text == "a is 1"  # the tool's own text for a model
    assert rendered.structured_content == {"a": 1}  # and the machine form beside it
    # The text says what the structured content says, not a bare array beside it.
    assert isinstance(listed.content[0], types.TextContent)
    assert json.loads(listed.content[0].text) == listed.structured_content
    # Without --structured only the text goes to the client, and no output schema is offered.
    text_only = to_call_result({"ok": True, "text": "a is 1"}, [], None, structured=False)
    assert (text_only.structured_content, text_only.content[0].text) == (None, "a is 1")
    plain = to_call_result({"ok": True, "content": [1, 2]}, [], None, structured=False)
    assert (plain.structured_content, json.loads(plain.content[0].text)) == (
        None,
        {"result": [1, 2]},
    )
    schema = {"type": "object", "properties": {}}
    described = desc("u", "read-only", outputSchema=schema)
    assert to_mcp_tool(described, structured=False).output_schema is None
    assert to_mcp_tool(described).output_schema == schema
    failed = to_call_result(
        {"ok": False, "error": {"code": "TIMEOUT", "message": "too slow"}}, [], None
    )
    assert failed.is_error is True
    assert isinstance(failed.content[0], types.TextContent)
    assert failed.content[0].text == "TIMEOUT: too slow"
    assert failed.meta == {"dev.meith/error": {"code": "TIMEOUT", "message": "too slow"}}


def test_artifacts_become_images_or_resources(tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    png = artifacts / "shot.png"
    png.write_bytes(b"\x89PNG fake")
    outside = tmp_path / "secret.png"
    outside.write_bytes(b"not yours")
    events = [
        {"kind": "artifact", "mimeType": "image/png", "name": "shot.png", "path": str(png)},
        {"kind": "artifact", "mimeType": "image/png", "name": "s", "path": str(outside)},
        {"kind": "artifact", "mimeType": "text/plain", "name": "n.txt", "dataBase64": "aGk="},
    ]
    blocks = to_call_result({"ok": True, "content": "x"}, events, artifacts).content
    image, link, embedded = blocks[1], blocks[2], blocks[3]
    assert isinstance(image, types.ImageContent)
    assert base64.b64decode(image.data) == b"\x89PNG fake"
    assert image.mime_type == "image/png"
    # A path outside the artifacts directory is never read back, only linked.
    assert isinstance(link, types.ResourceLink)
    assert link.uri == outside.as_uri()
    assert isinstance(embedded, types.EmbeddedResource)
