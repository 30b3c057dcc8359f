"""`meith mcp` start-up (auto-start, --no-start), `meith sessions`, `meith grants add --agent`,
and a screenshot as image content."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client as sdk_stdio_client

from tests.harness import MEITH, base_env
from tests.mcp.agent_plugin import install
from tests.mcp.conftest import json_answer, stdio_client

# Each test starts a real `meith serve` (and a bridge).
pytestmark = pytest.mark.slow


def test_no_start_fails_with_the_usual_message(tmp_path: Path) -> None:
    env = base_env(tmp_path / "home")
    proc = subprocess.run(
        [MEITH, "mcp", "--no-start"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 3
    assert "No meith runtime is listening" in proc.stderr
    assert "meith serve" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.anyio
async def test_auto_start_runs_a_detached_runtime_whose_output_stays_off_the_stream(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    site = install(tmp_path / "site")
    env = base_env(home, {"PYTHONPATH": str(site), "MCPTEST_DIR": str(tmp_path)})
    errlog = tmp_path / "bridge.stderr"
    params = StdioServerParameters(command=MEITH, args=["mcp", "--tools", "mcptest_*"], env=env)
    try:
        with errlog.open("w") as err:
            transport = sdk_stdio_client(params, errlog=err)
            async with Client(transport, mode="legacy") as client:
                printed = await client.call_tool("mcptest_print", {"lines": 300})
                after = await client.call_tool("mcptest_echo", {"value": "ok"})
        assert json_answer(printed) == {"printed": 300}
        assert json_answer(after)["value"] == "ok"
        text = errlog.read_text()
        assert "started a meith runtime in the background" in text
        instances = subprocess.run(
            [MEITH, "instances", "--json"], env=env, capture_output=True, text=True, timeout=60
        )
        assert len(json.loads(instances.stdout)) == 1  # still running, discoverable
        assert (home / "logs.jsonl").exists()
    finally:
        subprocess.run([MEITH, "stop", "--all"], env=env, capture_output=True, timeout=60)


def test_grants_add_agent_name(agent_server: Any) -> None:
    srv = agent_server()
    refused = srv.cli("grants", "add", "--agent", "alice", "--capability", "writes-files")
    assert refused.returncode == 2
    assert "--caller agent" in refused.stderr
    added = srv.cli(
        "grants", "add", "--caller", "agent", "--agent", "alice", "-c", "writes-files", "--json"
    )
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["agent"] == "alice"
    listed = srv.cli("grants", "list")
    assert "agent (alice)" in listed.stdout


@pytest.mark.anyio
async def test_sessions_lists_the_agent_session_with_its_label(agent_server: Any) -> None:
    srv = agent_server()
    mine, theirs = (
        json.loads(
            srv.cli(
                "grants",
                "add",
                "--caller",
                "agent",
                "--agent",
                name,
                "-c",
                "writes-files",
                "--json",
            ).stdout
        )["id"]
        for name in ("listed-agent", "someone-else")
    )
    async with stdio_client(srv, name="listed-agent") as client:
        await client.call_tool("mcptest_echo", {"value": 1})
        proc = srv.cli("sessions", "--json")
        table = srv.cli("sessions")
    assert proc.returncode == 0, proc.stderr
    sessions = json.loads(proc.stdout)
    agents = [s for s in sessions if s.get("label") == "listed-agent"]
    assert len(agents) == 1
    assert agents[0]["caller"] == "agent"
    assert agents[0]["calls"] >= 1
    # A standing grant is shown as standing, never as the session's own; one for another agent
    # name does not apply.
    assert agents[0]["grants"] == []
    assert [g["id"] for g in agents[0]["standingGrants"]] == [mine]
    assert theirs not in table.stdout
    header, *rows = table.stdout.splitlines()
    assert header.split()[-5:] == ["SESSION", "GRANTS", "STANDING", "GRANTS", "OWNS"]
    [row] = [r for r in rows if "listed-agent" in r]
    assert row.split()[-4:] == ["-", "writes-files", f"({mine})", "-"]


@pytest.mark.anyio
@pytest.mark.browser
async def test_a_screenshot_is_image_content(agent_server: Any) -> None:
    srv = agent_server(env={k: v for k, v in os.environ.items() if k.startswith("MEITH_BROWSER")})
    srv.approve("browser")
    srv.grant("controls-browser", caller="agent")
    async with stdio_client(srv, name="looker") as client:
        opened = await client.call_tool(
            "open_browser_tab", {"url": "data:text/html,<h1 style='color:red'>hi</h1>"}
        )
        assert opened.is_error is False, opened.content
        tab = json_answer(opened)["id"]
        shot = await client.call_tool("take_screenshot", {"tabId": tab})
    assert shot.is_error is False, shot.content
    images = [b for b in shot.content if isinstance(b, types.ImageContent)]
    assert len(images) == 1
    assert images[0].mime_type == "image/png"


@pytest.mark.anyio
async def test_calls_run_in_the_clients_first_root(agent_server: Any, tmp_path: Path) -> None:
    from tests.mcp.test_stdio import _git_repo

    srv = agent_server()
    repo = _git_repo(tmp_path / "rooted")

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=repo.as_uri())])

    async with stdio_client(
        srv, "--structured", name="rooted-agent", list_roots_callback=roots
    ) as client:
        status = await client.call_tool("git_status", {})
    assert status.is_error is False
    assert status.structured_content is not None
    assert Path(status.structured_content["root"]).resolve() == repo.resolve()


def test_without_the_mcp_extra_the_bridge_says_what_to_install(tmp_path: Path) -> None:
    # Stands in for an install without the extra: an `mcp` package that cannot be imported.
    fake = tmp_path / "no-mcp" / "mcp"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named mcp', name='mcp')\n")
    env = base_env(tmp_path / "home", {"PYTHONPATH": str(fake.parent)})
    proc = subprocess.run(
        [MEITH, "mcp", "--no-start"], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert "pip install 'meith-core[mcp]'" in proc.stderr
    token = subprocess.run(
        [MEITH, "mcp", "token"], env=env, capture_output=True, text=True, timeout=60
    )
    assert token.returncode == 0
    assert len(token.stdout.strip()) > 20
