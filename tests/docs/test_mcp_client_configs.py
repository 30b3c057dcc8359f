"""Every MCP client configuration in docs/mcp.md starts a working bridge, as written: the
command, its arguments and its environment (with `~` meaning the home the client runs in)."""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.harness import MEITH, MeithServer
from tests.readme import Block, doc_block

pytestmark = pytest.mark.slow

#: (the block, where the server entry sits in its file), one per client.
CONFIGS = [
    (
        doc_block("docs/mcp.md", '"meith": {"command": "meith", "args": ["mcp"], "env"', "json"),
        ("mcpServers", "meith"),
    ),
    (doc_block("docs/mcp.md", "[mcp_servers.meith]", "toml"), ("mcp_servers", "meith")),
    (doc_block("docs/mcp.md", '"args": ["mcp", "--cwd", "."]', "json"), ("mcpServers", "meith")),
    (doc_block("docs/mcp.md", '"servers": {', "json"), ("servers", "meith")),
]


def _entry(block: Block, path: tuple[str, ...]) -> dict[str, Any]:
    entry: Any = json.loads(block.text) if block.lang == "json" else tomllib.loads(block.text)
    for key in path:
        entry = entry[key]
    assert isinstance(entry, dict)
    return entry


@pytest.fixture(scope="module")
def user_home(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A user whose `~/.meith` is a running runtime with the git plugin."""
    home = tmp_path_factory.mktemp("user")
    server = MeithServer(home / ".meith", plugins="git")  # returns once it listens
    yield home
    server.stop()


@pytest.mark.parametrize(("block", "path"), CONFIGS, ids=lambda v: getattr(v, "line", None))
def test_the_documented_configuration_starts_a_bridge_with_the_tools(
    block: Block, path: tuple[str, ...], user_home: Path
) -> None:
    entry = _entry(block, path)
    assert entry.get("type", "stdio") == "stdio"
    assert entry["command"] == "meith"
    # The client's own environment: the user's HOME and PATH, and what the entry adds.
    env = {
        "HOME": str(user_home),
        "PATH": f"{Path(MEITH).parent}{os.pathsep}{os.environ['PATH']}",
        **entry.get("env", {}),
    }
    command = shutil.which(entry["command"], path=env["PATH"])
    assert command is not None
    params = StdioServerParameters(
        command=command, args=[*entry["args"], "--no-start"], env=env, cwd=str(user_home)
    )

    async def listed() -> set[str]:
        async with Client(params) as client:
            return {t.name for t in (await client.list_tools()).tools}

    names = anyio.run(listed)
    assert "git_status" in names
