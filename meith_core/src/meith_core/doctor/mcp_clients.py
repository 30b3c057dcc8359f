"""The MCP client configurations `meith doctor` can find, and whether each starts `meith mcp`:
Claude Code (`~/.claude.json`, a project's `.mcp.json`), Cursor (`~/.cursor/mcp.json`, a
project's `.cursor/mcp.json`), VS Code (the user's `mcp.json` and `settings.json`, a project's
`.vscode/mcp.json`) and Codex (`~/.codex/config.toml`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class ServerEntry:
    """One server entry of a client's configuration that runs `meith mcp`."""

    client: str
    file: Path
    name: str
    command: str
    args: tuple[str, ...]
    env: Mapping[str, str]

    @property
    def cwd(self) -> str | None:
        """The bridge's `--cwd`, when the entry gives one."""
        for i, arg in enumerate(self.args):
            if arg == "--cwd" and i + 1 < len(self.args):
                return self.args[i + 1]
            if arg.startswith("--cwd="):
                return arg.split("=", 1)[1]
        return None

    def problem(self) -> str | None:
        """What keeps this entry from starting the bridge, or None."""
        command = os.path.expanduser(self.command)
        found = command if os.sep in command else shutil.which(command)
        if not found or not os.access(found, os.X_OK):
            return (
                f"its command {self.command!r} is not found here; clients may not share your "
                "PATH: use the full path `python3 install.py` prints"
            )
        return None


def candidates(home: Path, project: Path) -> list[tuple[str, Path, str]]:
    """`(client, file, format)` of every place a client keeps its servers."""
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    return [
        ("Claude Code", home / ".claude.json", "claude"),
        ("Claude Code", project / ".mcp.json", "json"),
        ("Cursor", home / ".cursor" / "mcp.json", "json"),
        ("Cursor", project / ".cursor" / "mcp.json", "json"),
        ("VS Code", config / "Code" / "User" / "mcp.json", "json"),
        ("VS Code", config / "Code" / "User" / "settings.json", "vscode-settings"),
        ("VS Code", project / ".vscode" / "mcp.json", "json"),
        ("Codex", home / ".codex" / "config.toml", "toml"),
    ]


def _servers(data: Any, kind: str) -> Iterator[tuple[str, Any]]:
    """The server tables of one parsed configuration file."""
    if not isinstance(data, dict):
        return
    if kind == "toml":
        tables = [data.get("mcp_servers")]
    elif kind == "vscode-settings":
        mcp = data.get("mcp")
        tables = [mcp.get("servers") if isinstance(mcp, dict) else None]
    else:
        tables = [data.get("mcpServers"), data.get("servers")]
        if kind == "claude":
            projects = data.get("projects")
            for project in projects.values() if isinstance(projects, dict) else ():
                if isinstance(project, dict):
                    tables.append(project.get("mcpServers"))
    for table in tables:
        if isinstance(table, dict):
            yield from table.items()


def _parse(path: Path, kind: str) -> Any:
    text = path.read_text(encoding="utf-8")
    if kind == "toml":
        return tomllib.loads(text)
    try:
        return json.loads(text)
    except ValueError:
        # VS Code's settings are JSON with comments and trailing commas.
        text = re.sub(r"^\s*//.*$", "", text, flags=re.M)
        return json.loads(re.sub(r",(\s*[}\]])", r"\1", text))


def runs_meith_mcp(command: str, args: list[str]) -> bool:
    """Whether a server's command line is `meith mcp` (by any path to `meith`)."""
    program = os.path.basename(command)
    if program == "meith":
        return args[:1] == ["mcp"]
    return program.startswith("python") and "meith_core.cli" in " ".join(args) and "mcp" in args


def find(home: Path, project: Path) -> tuple[list[ServerEntry], list[tuple[str, Path, str]]]:
    """The entries that run `meith mcp`, and `(client, file, error)` for every configuration
    file found that could not be read."""
    entries: list[ServerEntry] = []
    unreadable: list[tuple[str, Path, str]] = []
    for client, path, kind in candidates(home, project):
        if not path.is_file():
            continue
        try:
            data = _parse(path, kind)
        except (OSError, ValueError) as exc:
            unreadable.append((client, path, str(exc)[:200]))
            continue
        for name, server in _servers(data, kind):
            if not isinstance(server, dict):
                continue
            command, args = server.get("command"), server.get("args") or []
            if not isinstance(command, str) or not isinstance(args, list):
                continue
            if runs_meith_mcp(command, [str(a) for a in args]):
                env = server.get("env") if isinstance(server.get("env"), dict) else {}
                entries.append(
                    ServerEntry(client, path, str(name), command, tuple(map(str, args)), env or {})
                )
    return entries, unreadable


__all__ = ["ServerEntry", "candidates", "find", "runs_meith_mcp"]
