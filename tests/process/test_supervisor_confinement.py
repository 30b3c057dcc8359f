"""A grant confined to a directory confines what the processes started under it can do, through
a real `meith serve`: Landlock lets them write only beneath that directory and a private temp
dir, never to $MEITH_HOME, nor plant git metadata, nor signal processes outside their domain;
reads stay allowed, and a confined process calls back only as its session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from meith_core import landlock_status
from meith_core.client import Client
from tests.core.confine.support import needs_landlock, needs_namespaces, results
from tests.harness import MEITH, wait_until

pytestmark = pytest.mark.kernel


def attack_script(home: Path, outside: Path, victim: int, repo: Path) -> str:
    """What a hostile dev server does: leave its directory, rewrite the trust root, kill."""
    steps = [
        f"cd / && echo x > {home}/grants.json; echo home:$?",
        f"{MEITH} grants add --caller cli --capability writes-files; echo cli:$?",
        f"echo x > {outside}/planted; echo outside:$?",
        f"kill -9 {victim}; echo kill:$?",
        f"echo ok > {repo}/inside.txt; echo inside:$?",
        'echo t > "$TMPDIR/t"; echo tmp:$?',
        'mkdir -p "$XDG_CACHE_HOME/tool"; echo cache:$?',
        "echo env:${MEITH_SOCKET:-none}:${MEITH_HOME:-none}:${MEITH_SESSION_TOKEN:-none}",
        # Outside /tmp, which is private to it (its directory and temp dir mounted back).
        f"grep -c def.attack_script {__file__}; echo read:$?",
        "echo done-marker",
    ]
    return "; ".join(steps)


@needs_landlock
@pytest.mark.slow
def test_a_dev_server_under_a_directory_grant_cannot_touch_the_trust_root(
    meith_server: Any, tmp_path: Path
) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    srv = meith_server(plugins="process")
    srv.approve("process")
    srv.grant("starts-process", cwd=str(repo))
    # The grant says what it confines, and so does app_health.
    assert "Confinement: Landlock ABI" in srv.last.stderr
    health = {c["name"]: c for c in srv.call("app_health")["content"]["checks"]}
    assert health["confinement"]["status"] == "ok"
    assert health["confinement"]["details"]["abi"] == landlock_status().abi
    grants_before = (srv.home.root / "grants.json").read_bytes()
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        script = attack_script(srv.home.root, outside, victim.pid, repo)
        dev = srv.call("start_dev_server", {"command": script}, cwd=str(repo))
        assert dev["ok"], dev

        def logs() -> str:
            env = srv.call("get_process_logs", {"processId": dev["content"]["id"]})
            return "\n".join(e["text"] for e in env["content"]["logs"])

        assert wait_until(lambda: "done-marker" in logs())
        got = results(logs())
        assert got["home"] != "0", logs()
        assert got["cli"] != "0", logs()
        assert got["outside"] != "0"
        assert got["kill"] != "0"
        assert victim.poll() is None
        assert (srv.home.root / "grants.json").read_bytes() == grants_before
        assert not (outside / "planted").exists()
        # Inside its directory and its temp dir it works as usual, and it may read anything.
        assert got["inside"] == "0"
        assert (repo / "inside.txt").read_text() == "ok\n"
        assert got["tmp"] == "0"
        assert got["cache"] == "0"
        assert got["read"] == "0"
        # No way back to the runtime as the local user through the environment.
        assert got["env"] == "none:none:none"  # not even the user's token
        assert dev["content"]["confinedTo"] == str(repo.resolve())
    finally:
        victim.kill()
        victim.wait()


@needs_landlock
@pytest.mark.slow
def test_a_terminal_under_a_directory_grant_is_confined_too(
    meith_server: Any, tmp_path: Path
) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    srv = meith_server(plugins="process")
    srv.approve("process")
    srv.grant("starts-process", cwd=str(repo))
    term = srv.call("create_terminal", {"cwd": str(repo), "shell": "/bin/sh"}, cwd=str(repo))
    assert term["ok"], term
    assert term["content"]["confinedTo"] == str(repo.resolve())
    tid = term["content"]["id"]
    line = (
        f"echo x > {srv.home.root}/grants.json; echo home:$?; "
        f"echo x > {outside}/f; echo outside:$?; echo y > {repo}/g; echo inside:$?; "
        "echo done-marker\r"
    )
    assert srv.call("write_terminal", {"terminalId": tid, "data": line}, cwd=str(repo))["ok"]

    def buffer() -> str:
        return str(srv.call("get_terminal_snapshot", {"terminalId": tid})["content"]["buffer"])

    assert wait_until(lambda: "\ndone-marker" in buffer().replace("\r", ""))
    got = results(buffer().replace("\r", ""))
    assert got["home"] != "0"
    assert got["outside"] != "0"
    assert got["inside"] == "0"
    assert (repo / "g").exists()


def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd)}
    out = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return out.stdout


@needs_landlock
@needs_namespaces
@pytest.mark.slow
def test_a_confined_process_plants_nothing_in_git_metadata_nor_reaches_the_runtime(
    meith_server: Any, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    main = ws / "main"
    main.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=main)
    git(
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "i",
        cwd=main,
    )
    git("worktree", "add", "-q", "../wt", "-b", "side", cwd=main)
    canary = tmp_path / "canary"
    srv = meith_server(plugins="process")
    srv.approve("process")
    srv.grant("starts-process", cwd=str(ws))
    hook = f"#!/bin/sh\ntouch {canary}\n"
    steps = [
        f"printf '{hook}' > main/.git/hooks/post-checkout; echo hook:$?",
        f"git -C main config core.fsmonitor 'touch {canary}'; echo config:$?",
        f"echo 'gitdir: {tmp_path}' > wt/.git; echo pointer:$?",
        "echo x > main/.git/worktrees/wt/config.worktree; echo gitdir:$?",
        f"cat {srv.home.root}/grants.json; echo read:$?",
        f"MEITH_HOME={srv.home.root} MEITH_SOCKET={srv.socket} {MEITH} call app_health;"
        " echo socket:$?",
        "echo ok > wt/file; echo inside:$?",
        "echo done-marker",
    ]
    dev = srv.call("start_dev_server", {"command": "; ".join(steps)}, cwd=str(ws))
    assert dev["ok"], dev

    def logs() -> str:
        env = srv.call("get_process_logs", {"processId": dev["content"]["id"]}, cwd=str(ws))
        return "\n".join(e["text"] for e in env["content"]["logs"])

    assert wait_until(lambda: "done-marker" in logs())
    got = {}
    for line in logs().splitlines():
        key, _, value = line.strip().partition(":")
        if value.isdigit():
            got[key] = value
    for plant in ("hook", "config", "pointer", "gitdir", "read", "socket"):
        assert got[plant] != "0", (plant, logs())
    assert got["inside"] == "0"
    # The user's own git afterwards runs nothing that was planted.
    git("status", cwd=main)
    git("checkout", "-q", "-b", "other", cwd=ws / "wt")
    assert not canary.exists()
    assert "fsmonitor" not in (main / ".git" / "config").read_text()


@pytest.mark.skipif(
    not landlock_status().namespaces, reason="the socket is bound in through a mount namespace"
)
def test_a_confined_dev_server_calls_back_only_as_its_session(
    meith_server: Any, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    srv = meith_server(plugins="process")
    srv.approve("process")
    srv.grant("starts-process", caller="agent", cwd=str(ws))
    out = ws / "out"
    out.mkdir()
    script = (
        f"{MEITH} call start_dev_server --command 'sleep 300' --json > {out}/dev.json 2>&1; "
        # Without the token, through the same mounted socket: refused, never the local user.
        f"MEITH_SESSION_TOKEN= {MEITH} call app_health --json > {out}/bare.json 2>&1; "
        # The runtime's own socket path is covered.
        f"MEITH_SOCKET={srv.socket} {MEITH} call app_health --json > {out}/real.json 2>&1; "
        f"touch {out}/done; sleep 300"
    )
    with Client(srv.socket, caller="agent", label="a", cwd=str(ws)) as a:
        session = a.hello()["sessionId"]
        dev = a.call("start_dev_server", {"cwd": str(ws), "command": script})
        assert dev.ok, dev
        assert dev.content["confinedTo"] == str(ws)
        assert wait_until(lambda: (out / "done").exists(), timeout=60)
        child = json.loads((out / "dev.json").read_text())
        assert child["ok"], child
        assert child["content"]["confinedTo"] == str(ws)  # its own child is confined too
        assert child["content"]["id"] in {s["id"] for s in a.call("list_dev_servers").content}
        assert "calls only as that session" in (out / "bare.json").read_text()
        assert "app_health" not in {
            r.get("toolName") for r in srv.audit_records() if r.get("caller") == "cli"
        }
        assert '"ok": true' not in (out / "real.json").read_text()
        starts = [r for r in srv.audit_records() if r.get("toolName") == "start_dev_server"]
        assert [(r["caller"], r["sessionId"], r["decision"]) for r in starts] == [
            ("agent", session, "allow")
        ] * 2
