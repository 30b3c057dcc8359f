"""Secrets that travel through the first-party plugins' real tools stay out of the audit trail:
keystrokes sent to a page, an environment and an argument vector given to a dev server, text
typed into a real terminal and the terminal's buffer read back."""

from __future__ import annotations

from pathlib import Path

import pytest

from meith_core import ErrorCode, Runtime
from meith_plugins_browser.plugin import Plugin as BrowserPlugin
from meith_plugins_process.plugin import Plugin as ProcessPlugin
from tests.process.support import eventually

pytestmark = pytest.mark.anyio

SECRET = "Zq9-typed.Passw0rd"


@pytest.fixture(autouse=True)
def plain_shell(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # The shell must not read the machine's rc files (slow, and not what is tested here).
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    for var in ("ENV", "BASH_ENV"):
        monkeypatch.delenv(var, raising=False)


async def test_keystrokes_for_a_page_are_not_audited_even_when_denied(runtime: Runtime) -> None:
    runtime.load_plugin("browser", BrowserPlugin)
    agent = runtime.open_session("agent")
    for name, args in [
        ("type_text", {"tabId": "btab_1", "elementId": "e1", "text": SECRET}),
        ("send_keys", {"tabId": "btab_1", "keys": SECRET}),
    ]:
        result = await runtime.call(name, args, caller=agent)
        assert result.error.code is ErrorCode.PERMISSION_DENIED
    records = list(runtime.audit.read())
    assert [r["toolName"] for r in records] == ["type_text", "send_keys"]
    assert SECRET.encode() not in runtime.audit.path.read_bytes()


async def test_a_real_terminal_and_dev_server_leave_no_secret_in_the_trail(
    runtime: Runtime, tmp_path: Path
) -> None:
    record = runtime.load_plugin("process", ProcessPlugin)
    assert record.status == "loaded", record.reason
    runtime.approve_plugin("process")

    term = await runtime.call("create_terminal", {"shell": "/bin/sh"})
    assert term.ok, term.error
    tid = term.content["id"]
    typed = f"export DB_PASSWORD={SECRET}; echo got-$DB_PASSWORD\r"
    assert (await runtime.call("write_terminal", {"terminalId": tid, "data": typed})).ok

    async def echoed() -> bool:
        snap = await runtime.call("get_terminal_snapshot", {"terminalId": tid})
        return f"got-{SECRET}" in snap.content["buffer"]

    try:
        await eventually(echoed, "the shell to echo the secret back")
    finally:
        await runtime.call("kill_terminal", {"terminalId": tid})

    server = await runtime.call(
        "start_dev_server",
        {
            "cwd": str(tmp_path),
            "command": "/bin/sh",
            "args": ["-c", "sleep 30", "sh", "--password", SECRET],
            "env": {"API_TOKEN": SECRET, "SESSION_COOKIE": SECRET},
        },
    )
    assert server.ok, server.error
    stopped = await runtime.call("stop_dev_server", {"devServerId": server.content["id"]})
    assert stopped.ok, stopped.error

    runtime.audit.close()
    trail = runtime.audit.path.read_bytes()
    for tool in (b"write_terminal", b"get_terminal_snapshot", b"start_dev_server"):
        assert tool in trail
    assert SECRET.encode() not in trail
