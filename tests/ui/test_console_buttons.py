"""Every button of every page of the console, clicked in a real Chromium, does what it says and
says so on the page it was pressed on; the console's own actions (stop, kill) are the local
user's, asking nobody; a call waiting for the console says so at once, on the caller's terminal;
a page opened late counts down what is left; the page loads without a 404."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from meith_core.client import Client
from tests.browser.support import wait_for
from tests.harness import MEITH
from tests.ui.conftest import Console, Pages

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: Every button the console shows (a plugin's Approve names what it approves).
BUTTONS = {
    "Notify me",
    "Allow once (o)",
    "Allow for the session (s)",
    "Deny (d)",
    "Revoke",
    "Verify now",
    "Add grant",
    "Approve …",
    "Revoke approval",
    "Refresh",
    "Log",
    "Stop",
    "Kill",
    "Screenshot",
}


class Clicks:
    """The buttons clicked, and every button seen on the page, by label."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.clicked: set[str] = set()
        self.seen: set[str] = set()

    def __call__(self, button: Locator) -> None:
        self.look()
        self.clicked.add(_label(button.inner_text()))
        button.click()

    def look(self) -> None:
        texts = self.page.eval_on_selector_all("button", "bs => bs.map((b) => b.textContent)")
        self.seen |= {_label(t) for t in texts}


def _label(text: str) -> str:
    return "Approve …" if text.startswith("Approve ") else text.strip()


def _records(console: Console, tool: str) -> list[dict[str, Any]]:
    path = console.server.home.audit_path
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("toolName") == tool and r.get("kind") is None]


def test_every_button_of_every_page_does_what_it_says(
    console: Console, pages: Pages, tmp_path: Path, shots: Path
) -> None:
    srv = console.server
    for plugin in ("process", "browser"):
        srv.approve(plugin)
    # The agent works in one directory, the user in another: no grant of the user's covers
    # the agent's processes, which the console stops all the same.
    work = {"agent": tmp_path / "agent", "cli": tmp_path / "user"}
    for caller, directory in work.items():
        directory.mkdir()
        srv.grant("starts-process", caller=caller, cwd=str(directory))
    srv.grant("controls-browser")  # the user's own tab, opened below
    page = pages.open()
    click = Clicks(page)
    nav = lambda panel: page.locator(f'nav a[data-panel="{panel}"]').click()  # noqa: E731

    # The header: "Notify me" asks the browser for permission, and goes once it was asked.
    notify = page.locator("#notify")
    expect(notify).to_be_visible()
    click(notify)
    expect(notify).to_be_hidden()

    # Approvals: three agent calls wait; each button answers one, and says what it did.
    boxes = [console.agent_call("probe_write", {"name": n}) for n in ("once", "session", "no")]
    cards = page.locator("[data-approval]")
    expect(cards).to_have_count(3)
    result = page.locator("#approval-result")
    for name, decision, said in (
        ("once", "allow_once", "Allowed once: test-agent's probe_write."),
        ("session", "allow_session", "Allowed for the session: test-agent's probe_write."),
        ("no", "deny", "Denied: test-agent's probe_write."),
    ):
        card = cards.filter(has_text=f"name: {name}")  # the approval view's line
        click(card.locator(f'button[data-decision="{decision}"]'))
        expect(result).to_have_text(said)
    outcomes = [wait_for(lambda b=b: b.get("result")) for b in boxes]
    assert [o["ok"] for o in outcomes] == [True, True, False]
    expect(cards).to_have_count(0)

    with (
        Client(srv.socket, caller="agent", label="claude-code") as agent,
        Client(srv.socket) as user,
    ):
        # What the processes page shows: an agent's dev server and terminal, the user's tab.
        script = "print('console-log-line', flush=True); import time; time.sleep(120)"
        started = agent.call_raw(
            "start_dev_server",
            {"cwd": str(work["agent"]), "command": sys.executable, "args": ["-u", "-c", script]},
        )
        assert started["ok"], started
        dev_id = started["content"]["id"]
        term = agent.call_raw("create_terminal", {"cwd": str(work["agent"]), "shell": "/bin/sh"})
        assert term["ok"], term
        term_id = term["content"]["id"]
        tab = user.call_raw("open_browser_tab", {"url": f"{console.base}/"})
        assert tab["ok"], tab
        agent_sid = agent.hello()["sessionId"]

        nav("processes")
        row = page.locator(f'tr[data-process="{dev_id}"]')
        expect(row).to_contain_text("dev server")
        expect(row.locator("td.owner")).to_contain_text("agent · claude-code")
        click(row.get_by_role("button", name="Log"))
        expect(page.locator("#process-log")).to_contain_text("console-log-line")
        expect(page.locator("#process-result")).to_have_text(f"The log of {dev_id}, live:")
        # Refresh lists what started since the page looked.
        later = user.call_raw(
            "start_dev_server",
            {"cwd": str(work["cli"]), "command": sys.executable, "args": ["-c", script]},
        )
        assert later["ok"], later
        click(page.locator("#refresh-processes"))
        mine = page.locator(f'tr[data-process="{later["content"]["id"]}"]')
        expect(mine.locator("td.owner")).to_have_text("you (cli)")
        page.screenshot(path=str(shots / "console-processes.png"))
        # Stop and Kill are the user's own actions: done at once, no approval asked.
        click(row.get_by_role("button", name="Stop"))
        expect(row.locator("td.status")).to_have_text("stopped")
        expect(page.locator("#process-result")).to_have_text(f"Stopped dev server {dev_id}.")
        term_row = page.locator(f'tr[data-process="{term_id}"]')
        click(term_row.get_by_role("button", name="Kill"))
        expect(page.locator("#process-result")).to_have_text(f"Killed terminal {term_id}.")
        expect(term_row.get_by_role("button", name="Kill")).to_have_count(0)
        expect(page.locator("#approval-count")).to_be_hidden()
        for tool in ("stop_dev_server", "kill_terminal"):
            record = wait_for(lambda t=tool: _records(console, t))[-1]
            assert (record["caller"], record["label"], record["decision"]) == (
                "cli",
                "meith ui",
                "allow",
            )
            assert record["reason"] == (
                "approved once by the local user, acting in the console (meith ui)"
            )
        tab_row = page.locator(f'tr[data-tab="{tab["content"]["id"]}"]')
        expect(tab_row.locator("td.owner")).to_have_text("unclaimed")  # the user's, opened so
        click(tab_row.get_by_role("button", name="Screenshot"))
        expect(page.locator("#screenshot")).to_be_visible()
        expect(page.locator("#process-result")).to_have_text(
            f"Screenshot of tab {tab['content']['id']}."
        )

        # Sessions: Revoke ends the agent's grants, and the row says so.
        nav("sessions")
        session_row = page.locator(f'tr[data-session="{agent_sid}"]')
        expect(session_row).to_contain_text("claude-code")
        click(session_row.get_by_role("button", name="Revoke"))
        expect(session_row).to_contain_text("revoked")
        expect(page.locator("#session-result")).to_contain_text(f"Revoked session {agent_sid}")
        denied = agent.call_raw("create_terminal", {"cwd": str(work["agent"]), "shell": "/bin/sh"})
        assert denied["error"]["code"] == "PERMISSION_DENIED"

    # Audit: Verify now checks the chain.
    nav("audit")
    click(page.locator("#verify"))
    expect(page.locator("#chain")).to_contain_text(" records, at ")

    # Grants: Add grant adds one (the table and the words say so), Revoke removes it.
    nav("grants")
    rows = page.locator("#grant-rows tr")
    before = 3  # the test's own: starts-process for each side, the user's controls-browser
    expect(rows).to_have_count(before)
    form = page.locator("#grant-form")
    form.locator('input[value="writes-files"]').check()
    form.locator('input[name="tool"]').fill("probe_write")
    click(form.get_by_role("button", name="Add grant"))
    expect(rows).to_have_count(before + 1)
    expect(page.locator("#grant-result")).to_have_text(re.compile(r"^Added g_[0-9a-f]{12}\.$"))
    added = page.locator("#grant-rows tr", has_text="probe_write")
    gid = added.get_attribute("data-grant")
    click(added.get_by_role("button", name="Revoke"))
    expect(rows).to_have_count(before)
    expect(page.locator("#grant-result")).to_have_text(f"Revoked {gid}.")

    # Plugins: Revoke approval withdraws the probe's, Approve gives it back.
    probe = page.locator('tr[data-plugin="probe"]')
    click(probe.get_by_role("button", name="Revoke approval"))
    expect(probe.locator(".approved")).to_have_text("no")
    expect(page.locator("#plugin-result")).to_have_text("Revoked the approval of probe.")
    click(probe.locator('button[data-action="approve"]'))
    expect(probe.locator(".approved")).to_have_text("read-only, writes-files")
    expect(page.locator("#plugin-result")).to_have_text("Approved probe.")

    for panel in ("approvals", "sessions", "audit", "processes", "grants"):
        nav(panel)
        click.look()
    assert click.seen <= BUTTONS, click.seen - BUTTONS  # a new button needs its test here
    assert click.clicked == BUTTONS
    assert pages.missing == []


def test_a_cli_call_waiting_for_the_console_says_where_at_once(
    console: Console, page: Page
) -> None:
    call = subprocess.Popen(
        [MEITH, "call", "probe_write", "--name", "from-cli", "--json"],
        env=console.server.cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert call.stderr is not None
    told = call.stderr.readline()  # said before anyone answers
    assert told == (
        f"… waiting for approval in the meith ui console at {console.base}/: denied after 60 s "
        "without an answer\n"
    )
    card = page.locator("[data-approval]")
    expect(card).to_contain_text("cli wants to run probe_write")
    card.locator('button[data-decision="allow_once"]').click()
    out, err = call.communicate(timeout=60)
    assert call.returncode == 0, err
    assert json.loads(out)["ok"] is True


def test_a_page_opened_late_counts_down_what_is_left(console: Console, pages: Pages) -> None:
    first = pages.open()
    console.agent_call("probe_write", {"name": "late"})
    expect(first.locator("[data-approval]")).to_have_count(1)
    shown_at = time.monotonic()  # the request was asked before its card showed
    wait_for(lambda: time.monotonic() - shown_at >= 3)
    late = pages.open(fake_clock=True)
    countdown = late.locator("[data-approval] .countdown")
    left = int(countdown.inner_text().split()[0])
    assert left <= 57  # at least 3 of the request's 60 s had gone when the page opened
    # Then it counts down with the page's clock, a second a second.
    late.clock.pause_at(late.evaluate("Date.now()") / 1000 + 1)  # seconds, a second ahead
    late.clock.run_for(1000)
    left = int(countdown.inner_text().split()[0])
    late.clock.run_for(5000)
    expect(countdown).to_have_text(f"{left - 5} s without an answer")


def test_the_page_names_its_icon_and_loads_without_a_404(console: Console, pages: Pages) -> None:
    page = pages.open()
    status, kind = page.evaluate(
        "fetch(document.querySelector('link[rel=icon]').href)"
        ".then((r) => [r.status, r.headers.get('content-type')])"
    )
    assert (status, kind) == (200, "image/svg+xml")
    assert page.evaluate("fetch('/favicon.ico').then((r) => r.status)") == 200
    assert pages.missing == []
