"""Changes to the trust root (`host.trust_edits`): each is one hash-chained `trust-change`
record naming who made it and through which door; a change that widens what may run is not
made when the trail cannot take its record, a revocation is made all the same; and what an
approval says changed in a plugin since it was given."""

from __future__ import annotations

from pathlib import Path

import pytest

from meith_core.audit.log import AuditLog
from meith_core.audit.segments import protected
from meith_core.audit.verify import verify
from meith_core.base.home import MeithHome
from meith_core.host.trust_edits import TrustEditor, UnauditedChange
from meith_core.policy.grants import StandingGrants, standing_grant
from meith_core.policy.plugin_approvals import PluginApprovals
from meith_core.protocol.caller import CallerInfo, CallerKind

TOOLS = [
    {"name": "w_read", "capabilities": ["read-only"]},
    {"name": "w_write", "capabilities": ["writes-files"]},
]


@pytest.fixture
def home(tmp_path: Path) -> MeithHome:
    return MeithHome(tmp_path / "home").ensure()


def changes(home: MeithHome) -> list[dict[str, object]]:
    return [r for r in AuditLog(home.audit_path).read() if r.get("kind") == "trust-change"]


def test_each_change_is_one_chained_record_naming_the_door(home: MeithHome, tmp_path) -> None:
    console = CallerInfo(CallerKind.CLI, session_id="socket:console", label="meith ui")
    editor = TrustEditor(home, "the local user's console (meith ui)", console)
    grant = standing_grant(
        "agent", ["starts-process"], cwd=str(tmp_path), net=["pypi.org,*.pythonhosted.org"]
    )
    editor.add_grant(grant)
    editor.approve_plugin(
        "w", ["read-only", "writes-files"], "sha256:1", distribution="w", version="1", tools=TOOLS
    )
    assert editor.revoke_grant(grant.id) == grant
    assert editor.revoke_grant(grant.id) is None  # nothing to revoke: nothing recorded
    assert editor.revoke_plugin("w") is not None
    records = changes(home)
    assert [r["action"] for r in records] == [
        "grant-added",
        "plugin-approved",
        "grant-revoked",
        "plugin-revoked",
    ]
    added = records[0]
    assert (added["caller"], added["sessionId"], added["label"]) == (
        "cli",
        "socket:console",
        "meith ui",
    )
    assert added["capabilities"] == ["starts-process"]
    assert added["subject"]["net"] == ["pypi.org", "*.pythonhosted.org"]  # type: ignore[index]
    assert added["reason"] == (
        f"standing grant {grant.id} added (agent may use starts-process under {tmp_path}; "
        "network: pypi.org, *.pythonhosted.org) by the local user's console (meith ui)"
    )
    assert records[1]["plugin"] == "w"
    assert records[1]["capabilities"] == ["read-only", "writes-files"]
    # Evidence: kept for its full age by size-based retention, the chain intact.
    assert all(protected(r) for r in records)
    assert verify(home.audit_path).ok


def test_a_widening_change_the_trail_cannot_take_is_not_made(home: MeithHome) -> None:
    editor = TrustEditor(home, "the local user (meith grants add)")
    kept = editor.add_grant(standing_grant("cli", ["writes-files"]))
    home.audit_path.rename(home.audit_path.with_name("moved.jsonl"))
    home.audit_path.mkdir()  # no file can be written where the trail is
    with pytest.raises(UnauditedChange, match="nothing was changed") as refused:
        editor.add_grant(standing_grant("agent", ["destructive"]))
    assert refused.value.made is False
    with pytest.raises(UnauditedChange):
        editor.approve_plugin("w", [], "sha256:1", distribution=None, version=None, tools=[])
    assert [g.id for g in StandingGrants(home.grants_path).current()] == [kept.id]
    assert PluginApprovals(home.plugins_path).current() == {}
    # A revocation narrows what may run: made all the same, and the missing record said.
    with pytest.raises(UnauditedChange, match="the change was made") as unrecorded:
        editor.revoke_grant(kept.id)
    assert unrecorded.value.made is True
    assert StandingGrants(home.grants_path).current() == []


def test_an_approval_says_what_changed_since(home: MeithHome) -> None:
    store = PluginApprovals(home.plugins_path)
    store.approve("w", ["read-only", "writes-files"], "sha256:1", version="1.0", tools=TOOLS)
    approval = store.get("w")
    assert approval is not None
    assert approval.to_json()["tools"] == {"w_read": ["read-only"], "w_write": ["writes-files"]}
    assert approval.changes("sha256:1", "1.0", TOOLS) == []  # valid: nothing changed
    grown = [
        {"name": "w_read", "capabilities": ["read-only", "starts-process"]},
        {"name": "w_run", "capabilities": ["starts-process", "destructive"]},
    ]
    assert approval.changes("sha256:2", "1.1", grown) == [
        "version 1.0 → 1.1",
        "tool added: w_run (destructive, starts-process)",
        "tool removed: w_write",
        "tool w_read: capabilities +starts-process",
        "requested capabilities +destructive, +starts-process, -writes-files",
    ]
    assert approval.changes("sha256:3", "1.0", TOOLS) == [
        "tool descriptions or input schemas (same tools and capabilities)"
    ]


def test_an_approval_written_before_tools_were_recorded_says_less(home: MeithHome) -> None:
    home.plugins_path.write_text(
        '{"version": 1, "plugins": {"w": {"capabilities": ["read-only"], '
        '"fingerprint": "sha256:1", "approvedAt": 1, "version": "1.0"}}}'
    )
    approval = PluginApprovals(home.plugins_path).get("w")
    assert approval is not None
    assert approval.tools is None
    assert approval.changes("sha256:2", "1.0", TOOLS) == [
        "its tools (names, schemas or capabilities: this approval does not record which)"
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"net": ["pypi.org"]}, "--net applies to grants confined to a directory (--cwd DIR)"),
        ({"cwd": "/", "net": ["bad host!"]}, "--net 'bad host!': not a host name or address"),
        ({"cwd": "/", "net": ["pypi.org:0"]}, "--net 'pypi.org:0': the port must be 1-65535"),
        ({"cwd": "/no/such/dir"}, "--cwd /no/such/dir: no such directory"),
        ({"expires": "soon"}, "--expires 'soon': use a number and a unit"),
    ],
)
def test_a_standing_grant_is_checked_as_the_cli_checks_it(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        standing_grant("agent", ["starts-process"], **kwargs)  # type: ignore[arg-type]
