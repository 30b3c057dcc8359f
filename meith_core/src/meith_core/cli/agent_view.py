"""`meith call --as-agent TOOL ...`: the call made as an MCP agent makes it, printed as the agent
receives it. The answer goes through the MCP bridge's own rendering (`mcp.content.agent_result`),
so what is printed is exactly the text, and the metadata beside it, that `meith mcp` sends."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from meith_core.base.home import MeithHome

#: The line between the text an agent reads and what the result carries beside it.
BESIDE = "──── beside the text (the result's isError and _meta) ────"


def agent_label(value: Any) -> str | None:
    """`--as-agent` alone is an agent without a name; `--as-agent=NAME` names it (a grant for a
    named agent, `meith grants add --agent NAME`, then applies)."""
    return value if isinstance(value, str) and value else None


def render_for_agent(
    result: dict[str, Any],
    artifacts: list[dict[str, Any]],
    *,
    tool: str,
    plugin: str | None,
    label: str | None,
    home: MeithHome,
) -> dict[str, Any]:
    """The MCP `CallToolResult` of this call as the bridge sends it (without `--structured`),
    as JSON."""
    from meith_core.mcp.content import agent_result

    rendered = agent_result(
        result,
        artifacts,
        home.artifacts_dir,
        structured=False,
        tool=tool,
        plugin=plugin,
        label=label or "",
    )
    return rendered.model_dump(mode="json", by_alias=True, exclude_none=True)


def print_for_agent(sent: dict[str, Any], *, as_json: bool, out: TextIO | None = None) -> None:
    """The text blocks exactly as sent, other blocks described, then what is beside them;
    `--json`: the whole result as the MCP client receives it."""
    out = out or sys.stdout
    if as_json:
        out.write(json.dumps(sent, indent=2, ensure_ascii=False) + "\n")
        return
    for block in sent.get("content") or []:
        if block.get("type") == "text":
            text = str(block.get("text", ""))
            out.write(text if text.endswith("\n") else text + "\n")
        else:
            what = block.get("mimeType") or (block.get("resource") or {}).get("mimeType") or ""
            where = block.get("uri") or (block.get("resource") or {}).get("uri") or ""
            size = f", {len(block['data'])} characters of base64" if "data" in block else ""
            out.write(f"[{block.get('type')} {what}{size}{' ' + where if where else ''}]\n")
    beside = {k: sent[k] for k in ("isError", "_meta") if sent.get(k)}  # isError when true
    if beside:
        out.write(BESIDE + "\n")
        for key, value in beside.items():
            out.write(f"{key}: {json.dumps(value, ensure_ascii=False)}\n")
