"""`meith call --as-agent` prints what an MCP agent receives for the same call: compared with
the answer a real `meith mcp` (driven by the MCP SDK's client) gives, text and metadata."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from meith_core.cli.agent_view import BESIDE
from tests.harness import MeithServer
from tests.mcp.conftest import stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    (path / "new.txt").write_text("hello\n")
    return path


async def _over_mcp(srv: MeithServer, repo: Path, tool: str, args: dict[str, Any]) -> Any:
    async with stdio_client(srv, "--cwd", str(repo), name="claude-code") as client:
        result = await client.call_tool(tool, args)
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


@pytest.mark.parametrize(
    ("tool", "flags", "args"),
    [
        ("git_status", [], {}),  # a tool's own rendering
        ("git_log", ["--limit", "1"], {"limit": 1}),  # an error: the repository has no commit
        # A gate's denial, with the bridge's words on what would allow it for this agent.
        (
            "workspace_write_file",
            ["--path", "a.txt", "--content", "x"],
            {"path": "a.txt", "content": "x"},
        ),
    ],
)
async def test_as_agent_prints_what_the_mcp_bridge_sends(
    meith_server: Callable[..., MeithServer],
    tmp_path: Path,
    tool: str,
    flags: list[str],
    args: dict[str, Any],
) -> None:
    srv = meith_server()
    repo = _repo(tmp_path / "repo")
    sent = await _over_mcp(srv, repo, tool, args)
    as_json = srv.cli("call", tool, *flags, "--as-agent=claude-code", "--json", cwd=str(repo))
    assert json.loads(as_json.stdout) == sent
    plain = srv.cli("call", tool, *flags, "--as-agent=claude-code", cwd=str(repo))
    [text] = [b["text"] for b in sent["content"]]
    if sent.get("isError"):
        assert plain.stdout.startswith(text + "\n" + BESIDE + "\n")
        assert "isError: true\n" in plain.stdout
        assert plain.returncode != 0
    else:
        assert plain.stdout == text + ("" if text.endswith("\n") else "\n")
        assert plain.returncode == 0
    # The agent's session is an agent's: audited as one, with its name.
    calls = [r for r in srv.audit_records() if r.get("toolName") == tool]
    assert {(r["caller"], r.get("label")) for r in calls} == {("agent", "claude-code")}
