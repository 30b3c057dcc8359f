"""The 2026-07-28 revision on the wire of a real `meith mcp --http`, without `initialize`: every
request self-contained (`_meta` carrying version and capabilities), `server/discover`, the
`Mcp-Method`/`Mcp-Name` headers checked against the body, caching hints on list results, and
resources, prompts and completion absent as the spec wants of a server that offers none
(capability not advertised, method not found). The handshake era beside it still works."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

pytestmark = [pytest.mark.slow]

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _post(
    bridge: Any, method: str, params: dict[str, Any] | None = None, **headers: str
) -> tuple[int, dict[str, Any]]:
    """One self-contained request: the status and the JSON-RPC answer (JSON or one SSE event)."""
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": method,
        "params": {"_meta": META} if params is None else params,
    }
    sent = {
        "Authorization": f"Bearer {bridge.token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": method,
        **{k.replace("_", "-"): v for k, v in headers.items()},
    }
    response = httpx2.post(bridge.url, json=body, headers=sent, timeout=60)
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        datas = [
            line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")
        ]
        answers = [json.loads(d) for d in datas if d and json.loads(d).get("id") == 7]
        return response.status_code, answers[0]
    return response.status_code, response.json()


def test_the_stateless_core_without_initialize(agent_server: Any, http_bridge: Any) -> None:
    srv = agent_server()
    bridge = http_bridge(srv, "--tools", "coding,mcptest_*")

    status, discover = _post(bridge, "server/discover")
    assert status == 200
    result = discover["result"]
    assert VERSION in result["supportedVersions"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "meith"
    capabilities = result["capabilities"]
    assert capabilities["tools"] == {"listChanged": True}
    # Resources, prompts and completion: not offered, so not advertised ...
    assert not {"resources", "prompts", "completions"} & set(capabilities)
    assert (result["ttlMs"], result["cacheScope"]) == (60_000, "private")
    assert "Workspace rule" in result["instructions"]

    status, listed = _post(bridge, "tools/list")
    assert status == 200
    assert (listed["result"]["ttlMs"], listed["result"]["cacheScope"]) == (60_000, "private")
    assert "mcptest_echo" in {t["name"] for t in listed["result"]["tools"]}

    call = {"name": "mcptest_echo", "arguments": {"value": 5}, "_meta": META}
    status, called = _post(bridge, "tools/call", call, Mcp_Name="mcptest_echo")
    assert status == 200
    assert json.loads(called["result"]["content"][0]["text"])["value"] == 5

    # ... and a request for one is a method not found, as for a method that does not exist.
    for method in ("prompts/list", "resources/list", "resources/templates/list"):
        status, missing = _post(bridge, method)
        assert missing["error"]["code"] == -32601, method
        assert missing["id"] == 7
    complete = {
        "ref": {"type": "ref/prompt", "name": "x"},
        "argument": {"name": "a", "value": ""},
        "_meta": META,
    }
    assert _post(bridge, "completion/complete", complete)[1]["error"]["code"] == -32601


def test_headers_and_meta_are_checked(agent_server: Any, http_bridge: Any) -> None:
    srv = agent_server()
    bridge = http_bridge(srv, "--tools", "mcptest_*")
    call = {"name": "mcptest_echo", "arguments": {}, "_meta": META}
    # Mcp-Name must name the tool the body calls, Mcp-Method the body's method.
    status, wrong_name = _post(bridge, "tools/call", call, Mcp_Name="other_tool")
    assert (status, wrong_name["error"]["code"]) == (400, -32020)
    status, wrong_method = _post(bridge, "tools/call", call, Mcp_Method="tools/list")
    assert (status, wrong_method["error"]["code"]) == (400, -32020)
    # Every request carries its version and capabilities in `_meta`.
    status, bare = _post(bridge, "tools/list", {})
    assert (status, bare["error"]["code"]) == (400, -32602)
    unknown = {**META, "io.modelcontextprotocol/protocolVersion": "1999-01-01"}
    status, old = _post(bridge, "tools/list", {"_meta": unknown}, MCP_Protocol_Version="1999-01-01")
    assert (status, old["error"]["code"]) == (400, -32022)
    assert VERSION in old["error"]["data"]["supported"]
