"""An agent through `meith mcp` (the MCP SDK's own client, stdio) against a real `meith serve`
with the files plugin: search, read, edit, undo — the text it reads, the hints it is given,
the wall around its workspace — and the whole loop with the process plugin's run_command."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.conftest import stdio_client
from tests.readme import readme_block

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def _sha(read: Any) -> str:
    """The content hash an agent reads in a read's first line, to pass back on an edit."""
    match = re.search(r"sha256 ([0-9a-f]{64})", _text(read).splitlines()[0])
    assert match, _text(read)
    return match.group(1)


async def test_an_agent_searches_reads_edits_and_undoes_over_mcp(
    meith_server: Any, tmp_path: Path
) -> None:
    ws = (tmp_path / "ws").resolve()
    (ws / "src").mkdir(parents=True)
    source = "def total(items):\n    return sum(items)\n"
    (ws / "src" / "cart.py").write_text(source)
    (tmp_path / "private.txt").write_text("not yours\n")
    srv = meith_server(plugins="files")
    srv.approve("files")
    srv.grant("writes-files", caller="agent", cwd=str(ws))
    async with stdio_client(srv, "--cwd", str(ws)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["workspace_read_file"].annotations.read_only_hint is True
        assert tools["workspace_undo"].annotations.idempotent_hint is False
        assert tools["workspace_apply_patch"].annotations.read_only_hint is False

        found = await client.call_tool("workspace_search", {"query": "sum(items)"})
        assert _text(found) == "src/cart.py:2:12:     return sum(items)"
        read = await client.call_tool("workspace_read_file", {"path": "src/cart.py"})
        sha = _sha(read)
        assert _text(read).splitlines()[1:] == ["1\tdef total(items):", "2\t    return sum(items)"]
        edit = await client.call_tool(
            "workspace_apply_patch",
            {
                "path": "src/cart.py",
                "expectedSha256": sha,
                "edits": [{"oldText": "sum(items)", "newText": "sum(i.price for i in items)"}],
            },
        )
        assert edit.is_error is False, _text(edit)
        assert "+    return sum(i.price for i in items)" in _text(edit)
        assert "i.price" in (ws / "src" / "cart.py").read_text()
        undone = await client.call_tool("workspace_undo", {"path": "src/cart.py"})
        assert undone.is_error is False, _text(undone)
        assert (ws / "src" / "cart.py").read_text() == source

        outside = await client.call_tool(
            "workspace_read_file", {"cwd": str(tmp_path), "path": "private.txt"}
        )
        assert outside.is_error is True
        assert _text(outside).startswith("PERMISSION_DENIED: ")
        assert f"its workspace is {ws}" in _text(outside)


#: The project's test, as an agent would run it: pytest on a test of the cart.
CART_TEST = """from src.cart import total


class Item:
    price = 2


def test_total():
    assert total([Item(), Item()]) == 4
"""


async def test_the_readme_agent_loop_runs_as_written_over_mcp(
    meith_server: Any, tmp_path: Path
) -> None:
    """The README's "An agent's coding loop, over MCP": its setup commands as written, then the
    session it shows (search, read, run the tests, edit, run them again, undo) through the SDK
    client, with run_command confined by the grant the block gives."""
    ws = (tmp_path / "ws").resolve()
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "__init__.py").write_text("")
    (ws / "src" / "cart.py").write_text("def total(items):\n    return sum(items)\n")
    (ws / "test_cart.py").write_text(CART_TEST)
    srv = meith_server(plugins="files,process")
    block = readme_block("--capability starts-process --cwd .", "sh")
    for line in block.text.splitlines():
        argv = shlex.split(line)
        assert argv[0] == "meith", line
        done = srv.cli(*argv[1:], cwd=str(ws))
        assert done.returncode == 0, (line, done.stdout, done.stderr)
    pytest_argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    async with stdio_client(srv, "--cwd", str(ws)) as client:

        async def tests_pass() -> bool:
            ran = await client.call_tool("run_command", {"command": pytest_argv})
            assert ran.is_error is False, _text(ran)
            # What the agent reads: how it ended, where it was confined (inside the walls).
            first = _text(ran).splitlines()[0]
            assert f", confined to {ws}" in first, first
            return first.startswith("exit 0 ")

        hits = await client.call_tool("workspace_search", {"query": "sum(items)"})
        assert _text(hits) == "src/cart.py:2:12:     return sum(items)"
        read = await client.call_tool("workspace_read_file", {"path": "src/cart.py"})
        sha = _sha(read)
        assert await tests_pass() is False  # the test fails before the fix
        edit = await client.call_tool(
            "workspace_apply_patch",
            {
                "path": "src/cart.py",
                "expectedSha256": sha,
                "edits": [{"oldText": "sum(items)", "newText": "sum(i.price for i in items)"}],
            },
        )
        assert edit.is_error is False, _text(edit)
        assert "+    return sum(i.price for i in items)" in _text(edit)
        assert await tests_pass() is True
        undone = await client.call_tool("workspace_undo", {"path": "src/cart.py"})
        assert undone.is_error is False, _text(undone)
        assert await tests_pass() is False
    tools = [r["toolName"] for r in srv.audit_records() if r.get("caller") == "agent"]
    assert "run_command" in tools
    assert "workspace_undo" in tools
