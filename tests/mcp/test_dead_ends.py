"""No dead ends for an agent, through `meith mcp` and the MCP SDK's own client against a real
`meith serve`: the default profile and its instructions, 'did you mean' for tools and
arguments, how to reach a tool the profile leaves out, `command` in both forms, honest undo
messages, search context given once, a whitespace near miss, and git's answers outside a
repository and for a path that matches nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.mcp.conftest import ERAS, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace that is not a repository, holding one that is (`repo`)."""
    ws = (tmp_path / "ws").resolve()
    repo = ws / "repo"
    repo.mkdir(parents=True)
    (ws / "cart.py").write_text("def total(items):\n    return sum(items)\n")
    (ws / "notes.txt").write_text("1\nhit a\n3\nhit b\n5\n6\n7\n8\n9\nhit c\n11\n")
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=T"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "a.txt").write_text("one\n")
    subprocess.run([*git, "add", "a.txt"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "first"], cwd=repo, check=True)
    (repo / "a.txt").write_text("two\n")
    return ws


@pytest.mark.parametrize("era", ERAS)
async def test_the_default_profile_says_what_it_offers_and_names_the_close_tools(
    agent_server: Any, workspace: Path, era: str
) -> None:
    srv = agent_server()
    for plugin in ("files", "process"):
        srv.approve(plugin)
    async with stdio_client(srv, "--cwd", str(workspace), "--tools", "coding", mode=era) as mcp:
        names = {t.name for t in (await mcp.list_tools()).tools}
        instructions = mcp.instructions or ""
        if era != "legacy":  # a client pinned to the version has them from server/discover
            instructions = (await mcp.session.send_discover(era))["instructions"]
        with pytest.raises(MCPError) as typo:
            await mcp.call_tool("git_stauts", {})
        with pytest.raises(MCPError) as outside:
            await mcp.call_tool("git_blam", {})
        hidden = await mcp.call_tool("git_blame", {"path": "a.txt"})
        wrong = await mcp.call_tool("workspace_read_file", {"pth": "cart.py"})
    assert names == {
        "workspace_read_file",
        "workspace_write_file",
        "workspace_apply_patch",
        "workspace_undo",
        "workspace_list_files",
        "workspace_search",
        "run_command",
        "git_status",
        "git_diff",
        "git_log",
    }
    assert f"Workspace rule: relative paths start at the session's workspace ({workspace})" in (
        instructions
    )
    assert "For code use workspace_search, workspace_read_file, workspace_apply_patch" in (
        instructions
    )
    assert "meith mcp --tools coding,git" in instructions
    assert str(typo.value) == "Unknown tool: git_stauts. Did you mean git_status?"
    assert str(outside.value) == (
        'Unknown tool: git_blam. Did you mean git_blame? "git_blame" is not among the tools '
        "this bridge offers (--tools coding); the user can widen it: meith mcp --tools "
        "coding,git (or --tools all)."
    )
    assert hidden.is_error is True
    assert "the user can widen it: meith mcp --tools coding,git" in _text(hidden)
    assert wrong.is_error is True
    assert _text(wrong) == (
        'VALIDATION_ERROR: Invalid arguments for "workspace_read_file": unknown argument '
        '"pth". Did you mean "path"?'
    )


async def test_the_coding_loop_answers_without_dead_ends(
    agent_server: Any, workspace: Path
) -> None:
    srv = agent_server()
    for plugin in ("files", "process", "git"):
        srv.approve(plugin)
    srv.grant("writes-files", "starts-process", caller="agent", cwd=str(workspace))
    tools = "coding,start_dev_server,stop_dev_server,get_process_logs"
    async with stdio_client(srv, "--cwd", str(workspace), "--tools", tools) as mcp:
        line = await mcp.call_tool("run_command", {"command": "echo hi | tr a-z A-Z"})
        argv = await mcp.call_tool("run_command", {"command": ["echo", "$HOME"]})
        dev = await mcp.call_tool(
            "start_dev_server", {"cwd": str(workspace), "command": ["sleep", "300"]}
        )
        search = await mcp.call_tool(
            "workspace_search", {"query": "hit", "path": "notes.txt", "contextLines": 2}
        )
        near = await mcp.call_tool(
            "workspace_apply_patch",
            {"path": "cart.py", "edits": [{"oldText": "sum( items )", "newText": "0"}]},
        )
        wrote = await mcp.call_tool("workspace_write_file", {"path": "new.txt", "content": "x\n"})
        first = await mcp.call_tool("workspace_undo", {"path": "new.txt"})
        second = await mcp.call_tool("workspace_undo", {"path": "new.txt"})
        never = await mcp.call_tool("workspace_undo", {"path": "cart.py"})
        not_repo = await mcp.call_tool("git_status", {})
        no_path = await mcp.call_tool("git_diff", {"cwd": str(workspace / "repo"), "path": "b.txt"})
    assert _text(line).splitlines()[-1] == "HI"
    assert _text(argv).splitlines()[-1] == "$HOME"
    assert dev.is_error is False, _text(dev)
    assert '"command":"sleep","args":["300"]' in _text(dev)
    shown = _text(search).splitlines()
    assert len(shown) == len(set(shown)), shown  # no line twice
    assert "--" in shown
    assert "it matches at line 2 when whitespace is ignored" in _text(near)
    assert "; 1 undo step)" in _text(wrote)
    assert _text(first) == "removed new.txt (meith had created it); 0 undo steps left"
    assert second.is_error is True
    assert "every undo step kept for it has been used" in _text(second)
    assert "meith has not changed it" in _text(never)
    assert not_repo.is_error is True
    assert _text(not_repo).startswith(f"TOOL_FAILED: Not inside a git repository: {workspace}")
    assert "run git init there" in _text(not_repo)
    assert _text(no_path).splitlines()[0] == (
        "no changes to b.txt (all); it matches no changed file"
    )
