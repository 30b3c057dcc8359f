"""The console in a real Chromium (Playwright): an agent's privileged call waits, the approval
shows on the page, a click (or a key) answers it, and the agent's call completes accordingly;
the audit view shows new calls as they are written. Screenshots for docs/console.md are taken
here, so they show the console as it is (into a temporary directory, or docs/images with `nox -s
screenshots`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from meith_core.audit.log import AuditLog
from meith_core.client import Client
from tests.browser.support import wait_for
from tests.ui.conftest import Console

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def audit(console: Console) -> list[dict[str, Any]]:
    path = console.server.home.audit_path
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def outcome(console: Console, tool: str, name: str) -> dict[str, Any] | None:
    for record in audit(console):
        if (
            record.get("toolName") == tool
            and record.get("kind") is None
            and f'"name":"{name}"' in str(record.get("argsSummary", "")).replace(" ", "")
        ):
            return record
    return None


def test_an_agent_call_waits_and_a_click_allows_it(
    console: Console, page: Page, shots: Path
) -> None:
    # The secret left the address bar; the cookie carries on.
    assert "k=" not in page.url
    box = console.agent_call("probe_write", {"name": "allowed"})
    card = page.locator("[data-approval]")
    expect(card).to_have_count(1)
    expect(card).to_contain_text("test-agent wants to run probe_write")
    expect(card).to_contain_text("writes-files")
    expect(card).to_contain_text("name: allowed")  # the core's rendering, whole
    # Where it acts, in the same words as the elicitation and the serve prompt.
    expect(card.locator(".runs")).to_contain_text("Acts on: ")
    assert "result" not in box  # the agent's call is still waiting
    page.screenshot(path=str(shots / "console-approvals.png"))
    card.locator('button[data-decision="allow_once"]').click()
    result = wait_for(lambda: box.get("result"))
    assert result["ok"] is True, result
    assert result["content"] == {"written": "allowed"}
    expect(card).to_have_count(0)
    record = wait_for(lambda: outcome(console, "probe_write", "allowed"))
    assert record["decision"] == "allow"
    assert "console (meith ui)" in record["reason"]
    assert "approved once by the local user" in record["reason"]
    # The audit view shows the call once the trail has it (polled, no timing asserted).
    page.locator('nav a[data-panel="audit"]').click()
    row = page.locator(f'tr[data-audit-id="{record["id"]}"]')
    expect(row).to_contain_text("probe_write")
    expect(row).to_contain_text("allow")
    # A call made now shows up too: the view is live.
    fresh = console.agent_call("probe_echo", {"value": 1})
    wait_for(lambda: fresh.get("result"))
    expect(page.locator("#audit-rows tr").first).to_contain_text("probe_echo")
    page.locator("#verify").click()
    expect(page.locator("#chain")).to_contain_text(" records, at ")
    page.screenshot(path=str(shots / "console-audit.png"))
    # Sessions: a live agent with a standing grant, its last calls, and this console.
    console.server.grant("writes-files", tool="probe_write", caller="agent")
    with Client(console.server.socket, caller="agent", label="claude-code") as agent:
        assert agent.call_raw("probe_write", {"name": "granted"})["ok"] is True
        sid = agent.hello()["sessionId"]
        page.locator('nav a[data-panel="sessions"]').click()
        row = page.locator(f'tr[data-session="{sid}"]')
        expect(row).to_contain_text("claude-code")
        expect(row).to_contain_text("writes-files probe_write [standing]")
        expect(row).to_contain_text("probe_write (ok)")
        expect(page.locator("#session-rows")).to_contain_text("this console")
        page.screenshot(path=str(shots / "console-sessions.png"))
        row.get_by_role("button", name="Revoke").click()
        expect(row).to_contain_text("revoked")
        denied = agent.call_raw("probe_write", {"name": "after-revoke"})
        assert denied["error"]["code"] == "PERMISSION_DENIED"
        assert "revoked" in denied["error"]["message"]


def test_deny_by_keyboard_and_add_a_grant(console: Console, page: Page) -> None:
    box = console.agent_call("probe_write", {"name": "denied"}, label="other-agent")
    card = page.locator("[data-approval]")
    expect(card).to_contain_text("other-agent wants to run probe_write")
    page.keyboard.press("d")
    result = wait_for(lambda: box.get("result"))
    assert result["ok"] is False
    assert result["error"]["code"] == "PERMISSION_DENIED"
    expect(card).to_have_count(0)
    record = wait_for(lambda: outcome(console, "probe_write", "denied"))
    assert record["decision"] == "deny"
    assert "console (meith ui)" in record["reason"]
    # A call whose runtime died mid-call, and a flood counted into one record, as the trail
    # holds them (written through the trail's own writer, hash-chained like any record).
    log = AuditLog(console.server.home.audit_path)
    now = int(time.time() * 1000)
    shape = {"caller": "agent", "toolName": "probe_write", "plugin": "probe", "cwd": "/"}
    log.write(
        {
            **shape,
            "id": "audit_crashed",
            "ts": now,
            "kind": "intent",
            "requestId": "r-crashed",
            "sessionId": "socket:crashed",
            "capabilities": ["writes-files"],
            "decision": "allow",
            "reason": "approved once at prompt",
            "outcome": "started",
            "argsSummary": "{}",
            "pid": 4_000_000,  # no such process: its runtime is gone
        }
    )
    log.write(
        {
            **shape,
            "id": "audit_flood",
            "ts": now + 1,
            "kind": "coalesced",
            "requestId": "r-flood",
            "sessionId": "socket:flood",
            "capabilities": ["writes-files"],
            "decision": "deny",
            "outcome": "PERMISSION_DENIED",
            "reason": "57 more similar calls refused (PERMISSION_DENIED) after request r-flood",
            "count": 57,
        }
    )
    log.close()
    page.locator('nav a[data-panel="audit"]').click()
    expect(page.locator('tr[data-audit-id="audit_crashed"]')).to_contain_text("interrupted")
    flood = page.locator('tr[data-audit-id="audit_flood"]')
    expect(flood).to_contain_text("PERMISSION_DENIED x57")
    expect(flood).to_contain_text("coalesced")
    page.locator('#audit-filters input[name="outcome"]').fill("interrupted")
    expect(page.locator("#audit-rows tr")).to_have_count(1)
    page.locator('#audit-filters input[name="outcome"]').fill("")
    # Grants and plugins: the standing grants (none yet) and the plugin approvals.
    page.locator('nav a[data-panel="grants"]').click()
    expect(page.locator('tr[data-plugin="probe"]')).to_contain_text("writes-files")
    page.locator('#grant-form select[name="caller"]').select_option("agent")
    page.locator('#grant-form input[value="writes-files"]').check()
    page.locator('#grant-form input[name="tool"]').fill("probe_write")
    page.locator('#grant-form button[type="submit"]').click()
    expect(page.locator("#grant-rows tr")).to_have_count(1)
    expect(page.locator("#grant-rows tr")).to_contain_text("probe_write")


@pytest.mark.parametrize("console", [{"PROBE_EXTRA_TOOL": "1"}], indirect=True)
def test_a_changed_plugin_says_what_changed_and_is_approved_on_the_page(
    console: Console, page: Page, tmp_path: Path, shots: Path
) -> None:
    # The runtime loaded a probe with one more tool than the one `meith plugins approve`
    # pinned: its approval is void, and the provider gate refuses its privileged tools.
    srv = console.server
    srv.grant("writes-files", tool="probe_write")
    denied = srv.call("probe_write", {"name": "void"})
    assert denied["error"]["code"] == "PERMISSION_DENIED"
    assert "void because the plugin changed" in denied["error"]["message"]
    page.locator('nav a[data-panel="grants"]').click()
    row = page.locator('tr[data-plugin="probe"]')
    expect(row).to_contain_text("VOID: the plugin changed since it was approved")
    changes = row.locator("ul.changes")
    expect(changes).to_contain_text("tool added: probe_spawn (starts-process)")
    expect(changes).to_contain_text("requested capabilities +starts-process")
    page.screenshot(path=str(shots / "console-plugin-changed.png"), full_page=True)
    row.locator('button[data-action="approve"]').click()
    expect(row.locator(".approved")).to_have_text("read-only, writes-files, starts-process")
    expect(row.locator('button[data-action="approve"]')).to_have_count(0)
    assert srv.call("probe_write", {"name": "approved"})["ok"] is True
    # The new tool passes the provider gate now; the caller gate, with no grant, asks here.
    box = console.agent_call("probe_spawn", {"name": "no-grant"})
    page.locator('nav a[data-panel="approvals"]').click()
    card = page.locator("[data-approval]")
    expect(card).to_contain_text("test-agent wants to run probe_spawn")
    card.locator('button[data-decision="deny"]').click()
    assert wait_for(lambda: box.get("result"))["error"]["code"] == "PERMISSION_DENIED"
    page.locator('nav a[data-panel="audit"]').click()
    # Newest first: the console's approval, after the fixture's `meith plugins approve`.
    approvals = page.locator("#audit-rows tr", has_text="plugin-approved")
    expect(approvals).to_have_count(2)
    expect(approvals.first).to_contain_text("by the local user's console (meith ui)")
    expect(approvals.last).to_contain_text("by the local user (meith plugins approve)")
    # A grant's network destinations: refused without a directory, in the CLI's words.
    page.locator('nav a[data-panel="grants"]').click()
    form = page.locator("#grant-form")
    form.locator('select[name="caller"]').select_option("agent")
    form.locator('input[value="starts-process"]').check()
    form.locator('input[name="net"]').fill("pypi.org,*.pythonhosted.org")
    form.locator('button[type="submit"]').click()
    expect(page.locator("#grant-error")).to_have_text(
        "--net applies to grants confined to a directory (--cwd DIR): processes started "
        "under an unconfined grant already have the user's network"
    )
    expect(page.locator("#grant-rows tr")).to_have_count(1)  # the CLI's, for probe_write
    form.locator('input[name="cwd"]').fill(str(tmp_path))
    form.locator('button[type="submit"]').click()
    expect(page.locator("#grant-rows tr")).to_have_count(2)
    confined = page.locator("#grant-rows tr", has_text="starts-process")
    expect(confined.locator("td.net")).to_have_text("pypi.org, *.pythonhosted.org")
    expect(page.locator("#grant-rows tr", has_text="probe_write").locator("td.net")).to_have_text(
        "*"
    )
    expect(page.locator("#grant-error")).to_have_text("")
    page.screenshot(path=str(shots / "console-grants.png"), full_page=True)
