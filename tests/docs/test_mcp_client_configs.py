"""`meith mcp config CLIENT` for every client, as docs/mcp.md shows it: the command prints
what the page says, in its client's format (JSON or TOML, with the keys that client reads), and
the entry starts a working bridge in the project it names, as written (`~` meaning the home
the client runs in)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from meith_core.mcp.client_configs import CLIENTS
from tests.harness import MEITH, MeithServer
from tests.readme import doc_section, transcript

pytestmark = pytest.mark.slow

BLOCKS = doc_section("docs/mcp.md", "Client configuration")
#: Where each client's file keeps the server entry, and the format it parses.
ENTRY = {
    "claude-code": (("mcpServers", "meith"), "json"),
    "codex": (("mcp_servers", "meith"), "toml"),
    "cursor": (("mcpServers", "meith"), "json"),
    "vscode": (("servers", "meith"), "json"),
    "inspector": (("mcpServers", "meith"), "json"),
}


@pytest.fixture(scope="module")
def user_home(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A user whose `~/.meith` is a running runtime with the git plugin, and whose project is
    `~/src/app`."""
    home = tmp_path_factory.mktemp("user")
    (home / "src" / "app").mkdir(parents=True)
    server = MeithServer(home / ".meith", plugins="git")  # returns once it listens
    yield home
    server.stop()


def _client_env(user_home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A client's own environment: the user's HOME and a PATH on which `meith` is this one."""
    env = {"HOME": str(user_home), "PATH": f"{Path(MEITH).parent}{os.pathsep}{os.environ['PATH']}"}
    return {**env, **(extra or {})}


def test_the_page_shows_every_client_once() -> None:
    shown = [transcript(b)[0].command.split()[3] for b in BLOCKS]
    assert shown == list(CLIENTS) == list(ENTRY)


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.text.split()[4])
def test_the_command_prints_the_page_and_the_entry_starts_a_bridge(
    block: Any, user_home: Path
) -> None:
    (step,) = transcript(block)
    argv = step.command.split()
    client = argv[3]
    assert argv[:3] == ["meith", "mcp", "config"]
    done = subprocess.run(
        [MEITH, *argv[1:]],
        env=_client_env(user_home),
        cwd=str(user_home),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.splitlines() == step.expected
    assert CLIENTS[client].where in done.stderr

    path, form = ENTRY[client]
    entry: Any = json.loads(done.stdout) if form == "json" else tomllib.loads(done.stdout)
    for key in path:
        entry = entry[key]
    # The fields each client reads: VS Code wants the transport named; the others take a
    # command to be stdio.
    assert set(entry) == (
        {"type", "command", "args", "env"} if client == "vscode" else {"command", "args", "env"}
    )
    assert entry.get("type", "stdio") == "stdio"
    assert entry["command"] == "meith"
    assert entry["args"][:3] == ["mcp", "--cwd", "~/src/app"]
    assert entry["env"] == {"MEITH_HOME": "~/.meith"}

    env = _client_env(user_home, entry["env"])
    command = shutil.which(entry["command"], path=env["PATH"])
    assert command is not None
    params = StdioServerParameters(
        command=command, args=[*entry["args"], "--no-start"], env=env, cwd=str(user_home)
    )

    async def listed() -> tuple[set[str], str]:
        async with Client(params) as mcp:
            names = {t.name for t in (await mcp.list_tools()).tools}
            return names, mcp.instructions or ""

    names, instructions = anyio.run(listed)
    assert "git_status" in names
    # The bridge works in the project the entry names, and says so.
    assert str(user_home / "src" / "app") in instructions


def test_an_unknown_client_is_a_usage_error(user_home: Path) -> None:
    done = subprocess.run(
        [MEITH, "mcp", "config", "claude"],
        env=_client_env(user_home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "unknown client 'claude': one of claude-code, codex, cursor, vscode, inspector" in (
        done.stderr
    )
