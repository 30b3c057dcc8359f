"""Ownership: runtime shutdown ends every managed process group; a new runtime ends what a
crashed one left behind, and nothing else."""

from __future__ import annotations

import json
import os
import subprocess

import psutil
import pytest

from meith_core import MeithHome, Runtime
from meith_plugins_process.plugin import Plugin
from tests.process.support import descendants, eventually, gone, ok

pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_runtime_shutdown_terminates_every_managed_process_group(
    meith_home: MeithHome, tmp_path
) -> None:
    rt = Runtime(meith_home, load_plugins=False)
    await rt.start()
    rt.load_plugin("process", Plugin)
    rt.approve_plugin("process")
    # One that exits on SIGTERM with children, one whose whole group ignores SIGTERM, a terminal
    # with a job, and a server that exited on its own but left a child behind.
    a = ok(
        await rt.call(
            "start_dev_server", {"cwd": str(tmp_path), "command": "sleep 300 & sleep 301 & wait"}
        )
    )
    b = ok(
        await rt.call(
            "start_dev_server",
            {"cwd": str(tmp_path), "command": "trap '' TERM; sleep 302 & echo armed; wait"},
        )
    )
    c = ok(
        await rt.call(
            "start_dev_server", {"cwd": str(tmp_path), "command": "setsid sleep 303 & echo left"}
        )
    )
    term = ok(await rt.call("create_terminal", {"shell": "/bin/bash"}))
    ok(await rt.call("write_terminal", {"terminalId": term["id"], "data": "sleep 304 &\r"}))
    plugin = rt.plugins.records["process"].obj
    await eventually(
        lambda: any(e[2] == "armed" for e in plugin.dev_servers.by_id[b["id"]].logs.since(0)),
        "armed",
    )
    await eventually(lambda: plugin.dev_servers.by_id[c["id"]].status == "exited", "c to exit")
    leftover = [
        p.pid for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "303"]
    ]
    assert leftover
    await eventually(
        lambda: len(descendants(a["pid"])) >= 2 and len(descendants(term["pid"])) >= 1, "children"
    )
    pids = [
        a["pid"],
        b["pid"],
        term["pid"],
        *descendants(a["pid"]),
        *descendants(b["pid"]),
        *descendants(term["pid"]),
        *leftover,
    ]
    record_dir = meith_home.state_dir / "process"
    assert list(record_dir.glob("*.json"))
    await rt.aclose()
    assert [pid for pid in pids if not gone(pid)] == []
    # A clean shutdown leaves nothing to recover.
    assert list(record_dir.glob("*.json")) == []


def _dead_pid() -> tuple[int, float]:
    proc = subprocess.Popen(["true"])
    created = psutil.Process(proc.pid).create_time()
    proc.wait()
    return proc.pid, created


async def test_a_new_runtime_ends_survivors_of_a_crashed_one_and_nothing_else(
    meith_home: MeithHome,
) -> None:
    # What a SIGKILLed runtime leaves: its record, naming a runtime pid that is gone...
    runtime_pid, runtime_created = _dead_pid()
    # ...a survivor whose pid and start time match (in its own session, as the plugin starts them)...
    survivor = subprocess.Popen(["sleep", "300"], start_new_session=True)
    # ...a grandchild of a survivor whose leader is gone: found by the marker it inherited...
    orphan = subprocess.Popen(
        ["sleep", "301"],
        start_new_session=True,
        env={**os.environ, "MEITH_PROCESS_ID": "dev_orphan00000"},
    )
    # ...and a recorded pid now running something else (start time differs): left alone.
    bystander = subprocess.Popen(["sleep", "302"], start_new_session=True)
    try:
        record_dir = meith_home.state_dir / "process"
        record_dir.mkdir(parents=True, mode=0o700)
        record = {
            "runtime": {"pid": runtime_pid, "createTime": runtime_created},
            "processes": [
                {"id": "dev_survivor000", "kind": "dev-server", "pid": survivor.pid,
                 "createTime": psutil.Process(survivor.pid).create_time(), "command": "sleep 300"},
                {"id": "dev_orphan00000", "kind": "dev-server", "pid": runtime_pid,
                 "createTime": runtime_created, "command": "gone"},
                {"id": "term_reused0000", "kind": "terminal", "pid": bystander.pid,
                 "createTime": psutil.Process(bystander.pid).create_time() - 1000, "command": "bash"},
            ],
        }  # fmt: skip
        (record_dir / f"{runtime_pid}-deadbeef.json").write_text(json.dumps(record))
        # A live runtime's record is not touched.
        live = {"runtime": {"pid": os.getpid(), "createTime": psutil.Process().create_time()},
                "processes": [{"id": "dev_live0000000", "kind": "dev-server", "pid": bystander.pid,
                               "createTime": psutil.Process(bystander.pid).create_time(), "command": "x"}]}  # fmt: skip
        (record_dir / f"{os.getpid()}-live0000.json").write_text(json.dumps(live))

        rt = Runtime(meith_home, plugin_allow={"process"})  # discovered through its entry point
        await rt.start()
        try:
            assert rt.plugins.records["process"].status == "loaded"
            assert gone(survivor.pid)
            assert gone(orphan.pid)
            assert not gone(bystander.pid)
            assert not (record_dir / f"{runtime_pid}-deadbeef.json").exists()
            assert (record_dir / f"{os.getpid()}-live0000.json").exists()
        finally:
            await rt.aclose()
        assert not gone(bystander.pid)
    finally:
        for p in (survivor, orphan, bystander):
            p.kill()
            p.wait()
