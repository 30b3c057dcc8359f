"""A process meith started is never the local user through the runtime's own socket.

An agent session holding an unconfined `starts-process` grant starts a dev server; the dev
server drops its session token and connects to the runtime's main socket (its path is no
secret) claiming `cli` — directly, after a double fork and `setsid` (no longer a child of the
runtime's child), and through the real `meith` CLI. None of them gets the local user's grants:
each is refused and told to call with its token. With the token it is its session, and what
the local user starts still calls back as the local user.

Real `meith serve`, real dev servers running real Python and the real CLI, the real audit.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import psutil
import pytest

from meith_core.client import Client
from tests.harness import MEITH, wait_until

pytestmark = pytest.mark.slow

#: Run by the dev server: `ATTACK MODE MAIN_SOCKET OUT_FILE`.
_ATTACK = textwrap.dedent(
    """
    import json, os, sys
    from meith_core.client import Client

    mode, main_socket, out = sys.argv[1:4]
    if mode == "token":
        os.environ["MEITH_SOCKET"] = main_socket  # its token, told the runtime's own socket
    else:
        os.environ.pop("MEITH_SESSION_TOKEN", None)  # leave the session behind
    if mode == "detached":
        # Daemonise: no longer a child of the process the runtime started.
        if os.fork():
            os._exit(0)
        os.setsid()
        if os.fork():
            os._exit(0)
    def attempt(act):
        try:
            return act()
        except Exception as exc:
            return {"refused": str(exc)}

    with Client(main_socket, caller="cli", cwd=os.path.dirname(out)) as c:
        result = attempt(lambda: c.call("create_terminal", {}).model_dump(mode="json"))
        result["sessions"] = attempt(lambda: {"listed": c.list_sessions()})
    with open(out + ".tmp", "w") as fh:
        json.dump(result, fh)
    os.rename(out + ".tmp", out)
    """
)


def _read(path: Path) -> dict[str, Any]:
    assert wait_until(path.exists, timeout=60), f"{path.name} never written"
    result = json.loads(path.read_text())
    assert isinstance(result, dict)
    return result


def test_a_process_an_agent_started_cannot_call_as_the_local_user(
    meith_server: Any, tmp_path: Path
) -> None:
    srv = meith_server(plugins="process")
    srv.approve("process")
    # The agent may start dev servers anywhere; only the local user may open terminals.
    srv.grant("starts-process", caller="agent", tool="start_dev_server")
    srv.grant("starts-process", caller="cli", tool="create_terminal")
    attack = tmp_path / "attack.py"
    attack.write_text(_ATTACK)
    out = tmp_path / "out"
    out.mkdir()
    python = sys.executable
    commands = {
        mode: f"{python} {attack} {mode} {srv.socket} {out}/{mode}.json; sleep 300"
        for mode in ("child", "detached", "token")
    }
    # The real CLI, its token unset, told the runtime's own socket.
    commands["cli"] = (
        f"env -u MEITH_SESSION_TOKEN MEITH_SOCKET={srv.socket} {MEITH} call create_terminal "
        f"--json > {out}/cli.out 2>&1; mv {out}/cli.out {out}/cli.txt; sleep 300"
    )
    with Client(srv.socket, caller="agent", label="a", cwd=str(tmp_path)) as agent:
        session = agent.hello()["sessionId"]
        for command in commands.values():
            started = agent.call("start_dev_server", {"cwd": str(tmp_path), "command": command})
            assert started.ok, started

        for mode in ("child", "detached"):
            result = _read(out / f"{mode}.json")
            assert "refused" in result, (mode, result)
            assert "MEITH_SESSION_TOKEN" in result["refused"], result
            # Nor does it see who else is connected, and with which grants.
            assert "MEITH_SESSION_TOKEN" in result["sessions"].get("refused", ""), result
        assert wait_until((out / "cli.txt").exists, timeout=60)
        cli_said = (out / "cli.txt").read_text()
        assert '"ok": true' not in cli_said, cli_said
        assert "MEITH_SESSION_TOKEN" in cli_said, cli_said

        # With its token, on the same socket, it is its session: the agent's grants only.
        with_token = _read(out / "token.json")
        assert with_token["error"]["code"] == "PERMISSION_DENIED", with_token

    # The local user, from outside the runtime's tree, still is the local user.
    assert srv.call("create_terminal")["ok"] is True
    terminals = [
        r
        for r in srv.audit_records()
        if r.get("toolName") == "create_terminal" and r["outcome"] != "PROTOCOL_ERROR"
    ]
    # The frames refused for want of a token are recorded too (issue 20), and say why.
    refused = [r for r in srv.audit_records() if r["outcome"] == "PROTOCOL_ERROR"]
    assert len(refused) >= 3, refused
    assert all("MEITH_SESSION_TOKEN" in r["reason"] for r in refused), refused
    assert [(r["caller"], r["decision"]) for r in terminals] == [
        ("agent", "deny"),
        ("cli", "allow"),
    ], terminals
    assert terminals[0]["sessionId"] == session


def test_meith_inside_what_the_local_user_started_is_the_local_user(
    meith_server: Any, tmp_path: Path
) -> None:
    srv = meith_server(plugins="process")
    srv.approve("process")
    srv.grant("starts-process", caller="cli")
    out = tmp_path / "out"
    out.mkdir()
    command = (
        f"{MEITH} call create_terminal --json > {out}/term.out 2>&1; "
        f"mv {out}/term.out {out}/term.json; sleep 300"
    )
    started = srv.call("start_dev_server", {"cwd": str(tmp_path), "command": command})
    assert started["ok"], started
    assert wait_until((out / "term.json").exists, timeout=60)
    child = json.loads((out / "term.json").read_text())
    assert child["ok"], child
    # The user typing `meith` in a terminal meith started: the user again.
    term = srv.content("create_terminal", {"cwd": str(tmp_path)})
    typed = f"{MEITH} call list_terminals --json > {out}/typed.out 2>&1; mv {out}/typed.out {out}/typed.json\r"
    assert srv.call("write_terminal", {"terminalId": term["id"], "data": typed})["ok"]
    assert wait_until((out / "typed.json").exists, timeout=60)
    typed_result = json.loads((out / "typed.json").read_text())
    assert typed_result["ok"], typed_result
    listed = [r for r in srv.audit_records() if r.get("toolName") == "list_terminals"]
    assert [r["caller"] for r in listed] == ["cli"]
    terminals = [r for r in srv.audit_records() if r.get("toolName") == "create_terminal"]
    assert [(r["caller"], r["decision"]) for r in terminals] == [("cli", "allow")] * 2


def test_an_orphaned_grandchild_stays_the_runtimes_and_is_reaped(
    meith_server: Any, tmp_path: Path
) -> None:
    srv = meith_server(plugins="process")
    srv.approve("process")
    srv.grant("starts-process", caller="cli")
    pidfile, release = tmp_path / "pid", tmp_path / "release"
    # The grandchild outlives its parent (re-parented), then exits when told to.
    daemon = (
        f"import os, time\n"
        f"if os.fork(): os._exit(0)\n"
        f"os.setsid()\n"
        f"if os.fork(): os._exit(0)\n"
        f"open({str(pidfile)!r} + '.tmp', 'w').write(str(os.getpid()))\n"
        f"os.rename({str(pidfile)!r} + '.tmp', {str(pidfile)!r})\n"
        f"while not os.path.exists({str(release)!r}): time.sleep(0.05)\n"
    )
    script = tmp_path / "daemon.py"
    script.write_text(daemon)
    command = f"{sys.executable} {script}; sleep 300"
    started = srv.call("start_dev_server", {"cwd": str(tmp_path), "command": command})
    assert started["ok"], started
    assert wait_until(pidfile.exists, timeout=60)
    orphan = psutil.Process(int(pidfile.read_text()))
    # Its parents are gone: the runtime adopted it (it still descends from the runtime).
    assert wait_until(lambda: orphan.ppid() == srv.pid, timeout=30), orphan.ppid()
    release.touch()

    def reaped() -> bool:
        try:
            return psutil.Process(orphan.pid).create_time() != orphan.create_time()
        except psutil.NoSuchProcess:
            return True

    assert wait_until(reaped, timeout=60), "the runtime left its adopted child a zombie"
    zombies = [p.pid for p in psutil.Process(srv.pid).children() if p.status() == "zombie"]
    assert zombies == [], zombies
    # The runtime's own children are still reaped by their owners: the dev server's exit
    # code is its own, not lost to the orphan reaper.
    exits = srv.call("start_dev_server", {"cwd": str(tmp_path), "command": "exit 7"})
    assert exits["ok"], exits

    def exit_code() -> Any:
        listed = srv.content("list_dev_servers")
        return next(s["exitCode"] for s in listed if s["id"] == exits["content"]["id"])

    assert wait_until(lambda: exit_code() is not None, timeout=60)
    assert exit_code() == 7
    assert srv.stop() == 0
