"""Issue 19, attack 5: a process the runtime started cannot lock the local user out.

A confined dev server of an agent session forks 20 children that each open 230 connections to
the socket it can reach (4,600: more than the runtime's 4,096 slots). Before, the user's
`meith call` then got "too many connections" for as long as they were held (the idle timeout,
10 minutes). Now the runtime's descendants together hold at most 1,024, one process tree at
most 256, one session at most 256, and a connection that presents no valid session token is
closed after a few seconds. Real `meith serve`, real processes, real sockets.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from meith_core import landlock_status
from meith_core.client import Client
from meith_core.serve.capacity import (
    MAX_CONNECTIONS_PER_SESSION,
    MAX_CONNECTIONS_PER_TREE,
    MAX_DESCENDANT_CONNECTIONS,
)
from tests.core.confine.support import needs_landlock
from tests.harness import MEITH, wait_until
from tests.process.support import PY

pytestmark = [
    pytest.mark.slow,
    pytest.mark.kernel,
    needs_landlock,
]

KIDS = 20
PER_KID = 230

ATTACK = textwrap.dedent(
    """
    import json, os, socket, sys, time

    out, mode = sys.argv[1], sys.argv[2]
    path = os.environ["MEITH_SOCKET"]
    token = os.environ.get("MEITH_SESSION_TOKEN", "")
    hello = json.dumps({"type": "hello", "protocol": 1,
                        "clientInfo": {"caller": "cli", "sessionToken": token}}) + "\\n"

    def first_line(s, timeout):
        s.settimeout(timeout)
        data = b""
        try:
            while b"\\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        line = data.split(b"\\n", 1)[0]
        try:
            return json.loads(line)
        except ValueError:
            return {"type": "eof"}

    def closed(s):
        s.settimeout(30)
        try:
            while True:
                if not s.recv(65536):
                    return True
        except socket.timeout:
            return False
        except OSError:
            return True

    def kid(i):
        held = []
        for _ in range(%(per_kid)d):
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(path)
            except OSError:
                continue
            if mode == "token":
                s.sendall(hello.encode())
            held.append(s)
        open(os.path.join(out, f"ready{i}"), "w").close()
        # Wait for the go: the test has made its own call while all of these were held.
        while not os.path.exists(os.path.join(out, "go")):
            time.sleep(0.05)
        frames = [first_line(s, 60) for s in held]
        result = {
            "welcome": sum(f.get("type") == "welcome" for f in frames),
            "errors": sorted({f.get("message", "") for f in frames if f.get("type") == "error"}),
        }
        if mode != "token":
            # Everything admitted without a token is closed by the server: nothing is left.
            result["stillOpen"] = sum(1 for s in held if not closed(s))
        with open(os.path.join(out, f".kid{i}.json"), "w") as f:
            json.dump(result, f)
        os.rename(os.path.join(out, f".kid{i}.json"), os.path.join(out, f"kid{i}.json"))
        time.sleep(600)

    for i in range(%(kids)d):
        if os.fork() == 0:
            if mode == "orphans":
                # Detached: re-parented to the runtime (a child subreaper), a tree of its own.
                os.setsid()
                if os.fork() != 0:
                    os._exit(0)
            kid(i)
            os._exit(0)
    time.sleep(600)
    """
) % {"per_kid": PER_KID, "kids": KIDS}


def _user_call(srv: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEITH, "call", "app_health", "--json"],
        env=srv.cli_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("mode", ["silent", "orphans", "token"])
def test_started_processes_cannot_take_the_local_users_connections(
    meith_server: Any, tmp_path: Path, mode: str
) -> None:
    ws = tmp_path / "ws"
    out = ws / "out"
    out.mkdir(parents=True)
    (ws / "attack.py").write_text(ATTACK)
    srv = meith_server(plugins="process", env={"MEITH_TOKEN_GRACE_S": "3"})
    srv.approve("process")
    srv.grant("starts-process", caller="agent", cwd=str(ws))
    with Client(srv.socket, caller="agent", label="attacker", cwd=str(ws)) as agent:
        dev = agent.call(
            "start_dev_server",
            {"cwd": str(ws), "command": PY, "args": [str(ws / "attack.py"), str(out), mode]},
        )
        assert dev.ok, dev
        assert dev.content["confinedTo"] == str(ws)
        try:
            every = [out / f"ready{i}" for i in range(KIDS)]
            assert wait_until(lambda: all(p.exists() for p in every), timeout=120), (
                sorted(os.listdir(out)),
                srv.output()[-3000:],
            )
            # All 4,600 connections have been made (and those admitted are held): the local
            # user is still served.
            done = _user_call(srv)
            assert done.returncode == 0, done.stdout + done.stderr
            health = json.loads(done.stdout)["content"]
            socket_check = next(c for c in health["checks"] if c["name"] == "socket")
            held = socket_check["details"]["capacity"]["descendantConnections"]
            assert held <= MAX_DESCENDANT_CONNECTIONS

            (out / "go").touch()
            results = [out / f"kid{i}.json" for i in range(KIDS)]
            assert wait_until(lambda: all(p.exists() for p in results), timeout=120)
            kids = [json.loads(p.read_text()) for p in results]
            errors = {e for k in kids for e in k["errors"]}
            if mode == "token":
                # Each connection presents the session's token: one session's share, no more.
                welcomed = sum(k["welcome"] for k in kids)
                assert 0 < welcomed <= min(MAX_CONNECTIONS_PER_SESSION, MAX_CONNECTIONS_PER_TREE)
                assert any("too many connections" in e for e in errors), errors
            else:
                assert all(k["welcome"] == 0 for k in kids)
                # Those admitted were closed for presenting no token; nothing stays open.
                assert any("no valid session token presented within 3s" in e for e in errors)
                assert all(k["stillOpen"] == 0 for k in kids), kids
                # Detached orphans of a confined spawn stay in its PID namespace: its tree.
                in_tree = mode == "silent" or landlock_status().namespaces
                limit = "process tree" if in_tree else "processes started by this runtime"
                assert any(limit in e for e in errors), errors
        finally:
            agent.call("stop_dev_server", {"devServerId": dev.content["id"]})
