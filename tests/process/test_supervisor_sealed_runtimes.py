"""3. No runtime of the user takes a confined process for the user.

Two real `meith serve` of the same user, on different MEITH_HOMEs. On runtime A an agent-like
`cli` grant confined to a workspace starts a dev server; runtime B has an unconfined
`starts-process` grant for the local user. The confined process connects to B claiming `cli`
and asks it to start an unconfined process that writes outside the workspace:

- through B's socket path: hidden in its mount namespace (like every runtime's home);
- through a hard link to B's socket inside the workspace (the hiding bypassed, as a socket
  path the process learnt another way would be): B itself refuses the peer, which lives in
  another user namespace, unless it presents a session token — it has none of B's;
- through the real `meith` CLI, likewise.

The local user's own `meith call` to B still works.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.core.confine.support import needs_landlock, needs_namespaces
from tests.harness import MEITH, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.kernel, needs_landlock, needs_namespaces]

_ATTACK = textwrap.dedent(
    """
    import json, sys
    from meith_core.client import Client

    name, sock, outside = sys.argv[1:4]
    try:
        with Client(sock, caller="cli", cwd=outside) as c:
            r = c.call("start_dev_server", {"cwd": outside, "command": f"touch {outside}/{name}"})
            result = {"ok": r.ok, "wire": r.to_wire()}
    except Exception as exc:
        result = {"refused": f"{type(exc).__name__}: {exc}"}
    print("RESULT " + name + " " + json.dumps(result), flush=True)
    """
)


def _results(text: str) -> dict[str, Any]:
    out = {}
    for line in text.splitlines():
        if line.startswith("RESULT "):
            _, name, raw = line.split(" ", 2)
            out[name] = json.loads(raw)
    return out


def test_a_confined_process_is_nobody_to_another_runtime(meith_server: Any, tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    a = meith_server(plugins="process")
    b = meith_server(plugins="process")
    for srv in (a, b):
        srv.approve("process")
    a.grant("starts-process", cwd=str(ws))
    b.grant("starts-process")  # the local user may start anything on B
    (ws / "attack.py").write_text(_ATTACK)
    link = ws / "b.sock"
    try:
        os.link(b.socket, link)
    except OSError as exc:
        pytest.skip(f"cannot hard-link a socket here ({exc})")
    py = sys.executable
    cli_args = json.dumps({"cwd": str(outside), "command": f"touch {outside}/cli"})
    steps = [
        f"{py} attack.py direct {b.socket} {outside}",
        f"{py} attack.py linked {link} {outside}",
        f"MEITH_SOCKET={link} MEITH_HOME={b.home.root} {MEITH} call start_dev_server"
        f" --arg-json '{cli_args}' --json; echo cli-exit:$?",
        "echo done-marker",
    ]
    dev = a.call("start_dev_server", {"command": "; ".join(steps)}, cwd=str(ws))
    assert dev["ok"], dev

    def logs() -> str:
        env = a.call("get_process_logs", {"processId": dev["content"]["id"]}, cwd=str(ws))
        return "\n".join(e["text"] for e in env["content"]["logs"])

    assert wait_until(lambda: "done-marker" in logs(), timeout=90), logs()
    text = logs()
    got = _results(text)
    assert set(got) == {"direct", "linked"}, text
    # Hidden: there is nothing to connect to at B's path.
    assert "refused" in got["direct"], got
    # Reached through the link, B refuses to take it for the user.
    linked = got["linked"]
    assert "refused" in linked or not linked["ok"], got
    assert "MEITH_SESSION_TOKEN" in json.dumps(linked), got
    assert "cli-exit:" in text, text
    assert "cli-exit:0" not in text, text
    for name in ("direct", "linked", "cli"):
        assert not (outside / name).exists(), name
    # B says why, in its audit trail, for the linked attempt.
    records = b.audit_records()
    assert not any(
        r.get("toolName") == "start_dev_server" and r.get("outcome") == "ok" for r in records
    ), records
    # The local user still gets through to B.
    mine = b.call("start_dev_server", {"command": f"touch {outside}/mine"}, cwd=str(outside))
    assert mine["ok"], mine
    assert wait_until((outside / "mine").exists)
