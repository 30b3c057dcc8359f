"""`meith mcp config CLIENT`: the entry each MCP client needs to start the bridge, in that
client's own file format, ready to paste (docs/mcp.md shows these, generated here).

Every entry runs `meith mcp --cwd DIR` with `MEITH_HOME` in its environment: clients start
servers in a directory and an environment of their own, so the bridge would otherwise work in
the wrong directory and look for the runtime in the default home.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Launch:
    """How a client starts the bridge."""

    command: str
    args: tuple[str, ...]
    home: str

    @property
    def env(self) -> dict[str, str]:
        return {"MEITH_HOME": self.home}


def launch(command: str, cwd: str, home: str, tools: str | None = None) -> Launch:
    args = ["mcp", "--cwd", cwd]
    if tools:
        args += ["--tools", tools]
    return Launch(command, tuple(args), home)


def _stdio(entry: Launch) -> dict[str, object]:
    return {"command": entry.command, "args": list(entry.args), "env": entry.env}


def _json(value: object) -> str:
    """Indented JSON with each list on one line (`"args": ["mcp", "--cwd", "~/app"]`)."""
    return _layout(value, "") + "\n"


def _layout(value: object, indent: str) -> str:
    if not isinstance(value, dict) or not value:
        return json.dumps(value, ensure_ascii=False)
    inner = indent + "  "
    items = [
        f"{inner}{json.dumps(k, ensure_ascii=False)}: {_layout(v, inner)}" for k, v in value.items()
    ]
    return "{\n" + ",\n".join(items) + f"\n{indent}}}"


def _mcp_servers(entry: Launch, name: str) -> str:
    return _json({"mcpServers": {name: _stdio(entry)}})


def _vscode(entry: Launch, name: str) -> str:
    return _json({"servers": {name: {"type": "stdio", **_stdio(entry)}}})


def _toml_string(value: str) -> str:
    # A JSON string is a TOML basic string: the same quotes and the same escapes.
    return json.dumps(value, ensure_ascii=False)


def _codex(entry: Launch, name: str) -> str:
    args = ", ".join(_toml_string(a) for a in entry.args)
    env = ", ".join(f"{k} = {_toml_string(v)}" for k, v in entry.env.items())
    return (
        f"[mcp_servers.{name}]\n"
        f"command = {_toml_string(entry.command)}\n"
        f"args = [{args}]\n"
        f"env = {{ {env} }}\n"
    )


@dataclass(frozen=True)
class Client:
    title: str
    #: Where the entry goes, or how it is used.
    where: str
    lang: str
    render: Callable[[Launch, str], str]


CLIENTS: dict[str, Client] = {
    "claude-code": Client(
        "Claude Code",
        "the project's .mcp.json",
        "json",
        _mcp_servers,
    ),
    "codex": Client("Codex", "~/.codex/config.toml", "toml", _codex),
    "cursor": Client(
        "Cursor", "~/.cursor/mcp.json, or .cursor/mcp.json in a project", "json", _mcp_servers
    ),
    "vscode": Client("VS Code", ".vscode/mcp.json in the workspace", "json", _vscode),
    "inspector": Client(
        "MCP Inspector",
        "a file for npx @modelcontextprotocol/inspector --config FILE --server NAME",
        "json",
        _mcp_servers,
    ),
}


def render(client: str, entry: Launch, name: str = "meith") -> str:
    """The text for `client` (one of `CLIENTS`)."""
    return CLIENTS[client].render(entry, name)
