"""What the console changes in the trust root, over real HTTP against a real `meith ui` and
`meith serve`: a grant's network destinations taken and refused as `meith grants add` takes
and refuses them, a plugin approved from the page passing the provider gate, and every change
(grants, plugin approvals, a revoked session) audited as the local user's console, the chain
intact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from meith_core.audit.log import AuditLog
from meith_core.client import Client
from tests.browser.support import wait_for
from tests.ui.conftest import Console, Session, request

pytestmark = pytest.mark.slow

BY_CONSOLE = "by the local user's console (meith ui)"


def trust_changes(c: Console, action: str | None = None) -> list[dict[str, Any]]:
    return [
        r
        for r in AuditLog(c.server.home.audit_path).read()
        if r.get("kind") == "trust-change" and action in (None, r.get("action"))
    ]


def connected(c: Console) -> Session:
    """A logged-in page whose console has reached the runtime (its changes then name the
    console's own session)."""
    page = Session(c)
    wait_for(lambda: page.get("/api/plugins")[0] == 200)
    return page


def console_session(c: Console) -> str:
    with Client(c.server.socket) as user:
        (mine,) = [s for s in user.list_sessions() if s.get("label") == "meith ui"]
    return str(mine["sessionId"])


def test_a_grant_takes_network_destinations_as_the_cli_does(
    console: Console, tmp_path: Path
) -> None:
    page = connected(console)
    srv = console.server
    project = str(tmp_path)
    form = {"caller": "agent", "capabilities": ["starts-process"], "cwd": project}
    status, body = page.post("/api/grants", {**form, "net": "PyPI.org, *.pythonhosted.org:443"})
    assert status == 200, body
    grant = body["grant"]
    assert grant["net"] == ["pypi.org", "*.pythonhosted.org:443"]
    status, body = page.post("/api/grants", {**form, "net": "any", "expires": "1h"})
    assert status == 200, body
    anywhere = body["grant"]
    assert anywhere["net"] == ["any"]
    # The page's table and `meith grants` show the same grants, destinations and all.
    _, listed = page.get("/api/grants")
    cli = json.loads(srv.cli("grants", "list", "--json").stdout)
    assert [g["net"] for g in listed["grants"]] == [g["net"] for g in cli]
    assert [g["net"] for g in cli] == [["pypi.org", "*.pythonhosted.org:443"], ["any"]]
    assert "pypi.org,*.pythonhosted.org:443" in srv.cli("grants", "list").stdout
    # Bad input is refused in the CLI's own words, for the same input.
    flags = ["--caller", "agent", "-c", "starts-process"]
    for fields, args in [
        ({"net": "pypi.org"}, ["--net", "pypi.org"]),  # network only with a directory
        ({"cwd": project, "net": "bad host!"}, ["--cwd", project, "--net", "bad host!"]),
        ({"cwd": project, "net": "pypi.org:99999"}, ["--cwd", project, "--net", "pypi.org:99999"]),
        ({"cwd": str(tmp_path / "missing")}, ["--cwd", str(tmp_path / "missing")]),
        ({"capabilities": ["read-only"]}, ["-c", "read-only"]),
    ]:
        status, body = page.post("/api/grants", {**form, "cwd": "", **fields})
        refused = srv.cli("grants", "add", *flags, *args)
        assert (status, refused.returncode) == (400, 2), (fields, body, refused.stderr)
        assert refused.stderr == f"error: {body['error']}\n"
    assert len(json.loads(srv.cli("grants", "list", "--json").stdout)) == 2
    # Each change is audited as the console's, in the session the console has.
    added = trust_changes(console, "grant-added")
    assert [r["subject"]["id"] for r in added] == [grant["id"], anywhere["id"]]
    first = added[0]
    assert first["reason"].endswith(BY_CONSOLE)
    assert "network: pypi.org, *.pythonhosted.org:443" in first["reason"]
    assert (first["caller"], first["label"]) == ("cli", "meith ui")
    assert first["sessionId"] == console_session(console)
    status, _ = page.post(f"/api/grants/{grant['id']}/revoke")
    assert status == 200
    (revoked,) = trust_changes(console, "grant-revoked")
    assert revoked["subject"]["id"] == grant["id"]
    assert revoked["reason"].endswith(BY_CONSOLE)
    status, body = page.post(f"/api/grants/{grant['id']}/revoke")
    assert (status, body["error"]) == (
        404,
        "no such standing grant (it may have been revoked or used up)",
    )
    verified = srv.cli("audit", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_plugin_approved_on_the_page_passes_the_provider_gate(console: Console) -> None:
    page = connected(console)
    srv = console.server
    srv.grant("writes-files", tool="probe_write")  # the caller gate passes from here on
    assert srv.call("probe_write", {"name": "approved-by-cli"})["ok"] is True
    status, _ = page.post("/api/plugins/probe/revoke")
    assert status == 200
    denied = srv.call("probe_write", {"name": "unapproved"})
    assert denied["error"]["code"] == "PERMISSION_DENIED"
    assert "plugin probe is not approved" in denied["error"]["message"]
    _, listing = page.get("/api/plugins")
    probe = {p["id"]: p for p in listing["plugins"]}["probe"]
    assert probe["approval"] is None
    fingerprint = probe["fingerprint"]
    # The door stands before the new route: without the CSRF token nothing is approved.
    status, _, _ = request(
        console,
        "POST",
        "/api/plugins/probe/approve",
        headers={"Cookie": page.cookie, "Origin": f"http://{console.host}"},
        body={"fingerprint": fingerprint},
    )
    assert status == 403
    # Only the plugin the page showed is approved; what is no plugin, or meith's own, is not.
    status, body = page.post("/api/plugins/probe/approve", {"fingerprint": "sha256:other"})
    assert status == 409
    assert "changed since the page showed it" in body["error"]
    status, body = page.post("/api/plugins/nosuch/approve", {"fingerprint": fingerprint})
    assert status == 404
    status, body = page.post("/api/plugins/core/approve", {"fingerprint": fingerprint})
    assert (status, body["error"]) == (409, "plugin core is part of meith: it needs no approval")
    assert srv.call("probe_write", {"name": "still-unapproved"})["error"]["code"] == (
        "PERMISSION_DENIED"
    )
    status, body = page.post("/api/plugins/probe/approve", {"fingerprint": fingerprint})
    assert status == 200, body
    assert srv.call("probe_write", {"name": "approved-on-the-page"})["ok"] is True
    # What `meith plugins approve probe` records: all it requests, pinned, its tools kept.
    _, listing = page.get("/api/plugins")
    approval = {p["id"]: p for p in listing["plugins"]}["probe"]["approval"]
    assert approval["valid"] is True
    assert set(approval["capabilities"]) == set(probe["requestedCapabilities"])
    stored = json.loads(srv.home.plugins_path.read_text())["plugins"]["probe"]
    assert stored["fingerprint"] == fingerprint
    assert stored["tools"]["probe_write"] == ["writes-files"]
    # Audited: the CLI's approval (the fixture's), then the console's revocation and approval.
    records = [r for r in trust_changes(console) if r.get("plugin") == "probe"]
    assert [r["action"] for r in records] == [
        "plugin-approved",
        "plugin-revoked",
        "plugin-approved",
    ]
    assert records[0]["reason"].endswith("by the local user (meith plugins approve)")
    for record in records[1:]:
        assert record["reason"].endswith(BY_CONSOLE)
        assert (record["caller"], record["label"]) == ("cli", "meith ui")
    assert records[2]["subject"]["fingerprint"] == fingerprint
    assert set(records[2]["capabilities"]) == {"read-only", "writes-files"}
    verified = srv.cli("audit", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_session_revoked_on_the_page_is_audited_by_the_runtime(console: Console) -> None:
    page = connected(console)
    with Client(console.server.socket, caller="agent", label="bot") as agent:
        sid = agent.hello()["sessionId"]
        status, body = page.post(f"/api/sessions/{sid}/revoke")
        assert status == 200, body
        (record,) = wait_for(lambda: trust_changes(console, "session-revoked"))
    assert record["subject"] == {"sessionId": sid}
    assert record["reason"] == f"session {sid} revoked (its grants ended) {BY_CONSOLE}"
    assert (record["caller"], record["label"]) == ("cli", "meith ui")
    assert record["sessionId"] == console_session(console)
    assert record["pid"] == console.server.pid  # written by the runtime, in its chain
    verified = console.server.cli("audit", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
