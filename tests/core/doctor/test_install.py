"""`meith doctor` without `--walls`: each check one line, with the fix when something is
wrong: a plugin that finds no ripgrep, an approval made void by a changed plugin, a tampered
audit trail, MCP client configurations that run `meith mcp` or cannot."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from meith_core import MeithHome
from meith_core.audit.log import AuditLog
from meith_core.doctor import install
from meith_core.policy.plugin_approvals import PluginApprovals
from tests.harness import MEITH, base_env


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MeithHome]:
    """A home of the user's with only the files plugin installed as far as discovery goes
    (the checks load it, as `meith plugins` does; their log settings are put back after)."""
    monkeypatch.setenv("MEITH_PLUGINS", "files")
    config = structlog.get_config()
    yield MeithHome(tmp_path / "meith-home").ensure()
    structlog.configure(**config)


def _line(checks: list[install.Check], name: str) -> install.Check:
    return next(c for c in checks if c.name == name)


def test_a_missing_ripgrep_is_a_line_with_its_fix(
    home: MeithHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    from meith_plugins_files import rg_run

    monkeypatch.setattr(rg_run, "locate", lambda: None)
    checks = install.plugins(home)
    rg = _line(checks, "files.ripgrep")
    assert rg.status == "warn"
    assert "no rg found" in rg.message
    assert "pip install 'ripgrep" in rg.message
    assert "files.ripgrep" in install.text(checks)


def test_a_void_approval_says_what_changed_and_how_to_approve_again(home: MeithHome) -> None:
    PluginApprovals(home.plugins_path).approve(
        "files",
        ["writes-files"],
        "fingerprint-of-an-older-files-plugin",
        distribution="meith-plugins-files",
        version="0.0.1",
        tools=[],
    )
    check = _line(install.plugins(home), "plugin files")
    assert check.status == "warn"
    assert "approval VOID" in check.message
    assert check.fix == "meith plugins approve files"
    assert "fix: meith plugins approve files" in install.text([check])


def test_a_plugin_not_approved_says_how_to_approve_it(home: MeithHome) -> None:
    check = _line(install.plugins(home), "plugin files")
    assert check.status == "warn"
    assert "not approved" in check.message
    assert check.fix == "meith plugins approve files"


def test_a_tampered_audit_trail_fails_with_where_and_what_to_do(tmp_path: Path) -> None:
    home = MeithHome(tmp_path / "meith-home").ensure()
    log = AuditLog(home.audit_path)
    for i in range(4):
        log.write({"id": f"audit_{i:012x}", "seq": i, "outcome": "ok"})
    log.close()
    assert _line(install.audit(home), "audit").status == "ok"
    lines = home.audit_path.read_bytes().splitlines()
    lines[1] = lines[1].replace(b'"seq":1', b'"seq":9')
    home.audit_path.write_bytes(b"".join(line + b"\n" for line in lines))
    check = _line(install.audit(home), "audit")
    assert check.status == "fail"
    assert "trail BROKEN at audit.jsonl:2" in check.message
    assert "meith audit verify --json" in check.fix


def test_mcp_client_configurations_are_found_and_judged(tmp_path: Path) -> None:
    user, project = tmp_path / "user", tmp_path / "project"
    (user / ".cursor").mkdir(parents=True)
    (user / ".codex").mkdir()
    project.mkdir()
    (user / ".claude.json").write_text(
        json.dumps(
            {
                "projects": {
                    "/src/app": {"mcpServers": {"meith": {"command": MEITH, "args": ["mcp"]}}}
                },
                "mcpServers": {"other": {"command": "npx", "args": ["something"]}},
            }
        )
    )
    (user / ".cursor" / "mcp.json").write_text(
        json.dumps(
            {"mcpServers": {"m": {"command": "/nowhere/meith", "args": ["mcp", "--cwd", "."]}}}
        )
    )
    (user / ".codex" / "config.toml").write_text('[mcp_servers.meith\ncommand = "meith"\n')
    checks = install.mcp_clients(user, project)
    by = {c.name: c for c in checks}
    assert by["mcp Claude Code"].status == "ok"
    assert "workspace: the client's working directory (no --cwd)" in by["mcp Claude Code"].message
    assert by["mcp Cursor"].status == "warn"
    assert "'/nowhere/meith' is not found here" in by["mcp Cursor"].message
    assert by["mcp Codex"].status == "warn"
    assert "cannot be read" in by["mcp Codex"].message
    nothing = install.mcp_clients(tmp_path / "nobody", project)
    assert [c.message for c in nothing] == ["no MCP client configuration names meith mcp"]


@pytest.mark.slow  # a CLI run that loads every plugin
def test_meith_doctor_prints_a_line_per_check_and_json(tmp_path: Path) -> None:
    env = base_env(tmp_path / "meith-home", {"HOME": str(tmp_path)})
    done = subprocess.run(
        [MEITH, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    doc: dict[str, Any] = json.loads(done.stdout)
    names = [c["name"] for c in doc["checks"]]
    for name in ("python", "meith", "plugin git", "git", "confinement", "audit"):
        assert name in names, names
    assert done.returncode == (1 if doc["summary"]["fail"] else 0)
    text = subprocess.run([MEITH, "doctor"], env=env, capture_output=True, text=True, timeout=120)
    assert "meith doctor --walls" in text.stdout
    assert "fix: meith plugins approve git" in text.stdout
