"""docs/mcp.md's JSON blocks are JSON, and its HTTP configuration has the shape a client needs."""

from __future__ import annotations

from pathlib import Path


def test_the_mcp_page_snippets_are_valid_json() -> None:
    import json
    import re

    page = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text()
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", page, flags=re.S)]
    # The stdio configurations are started for real by tests/docs/test_mcp_client_configs.py;
    # the HTTP one needs a token, so its shape is checked here.
    (http,) = [
        b["mcpServers"]["meith"]
        for b in blocks
        if "url" in b.get("mcpServers", {}).get("meith", {})
    ]
    assert http["url"].endswith("/mcp")
    assert http["headers"]["Authorization"].startswith("Bearer ")
