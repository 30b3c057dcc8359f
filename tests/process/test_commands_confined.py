"""`run_command` under a grant confined to a directory, on this kernel: it writes only inside,
leaves nothing behind, and what it plants in git metadata is neutralised and reported."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from tests.core.confine.support import needs_landlock
from tests.process.conftest import Proc
from tests.process.support import TWO_SLEEPS, gone, ok, serve, the_running_command

pytestmark = [pytest.mark.anyio, pytest.mark.kernel, needs_landlock]


async def test_under_a_directory_grant_it_writes_only_inside(proc: Proc, tmp_path: Path) -> None:
    inside, outside = tmp_path / "project", tmp_path / "other"
    inside.mkdir()
    outside.mkdir()
    cli = proc.rt.open_session("cli", cwd=str(inside))
    proc.rt.grant(cli, ["starts-process"], cwd_prefix=str(inside))
    script = (
        f"echo x > {outside}/planted; echo outside:$?; "
        f"echo ok > {inside}/made; echo inside:$?; "
        'echo t > "$TMPDIR/t"; echo tmp:$?'
    )
    res = ok(await proc.rt.call("run_command", {"cwd": str(inside), "shell": script}, caller=cli))
    got = dict(line.split(":") for line in res["stdout"].split())
    assert got["outside"] != "0"
    assert not (outside / "planted").exists()
    assert got["inside"] == "0"
    assert (inside / "made").read_text() == "ok\n"
    assert got["tmp"] == "0"
    assert res["confinedTo"] == str(inside.resolve())


@pytest.mark.slow
async def test_confined_commands_leave_nothing_behind_either(proc: Proc, tmp_path: Path) -> None:
    cli = proc.rt.open_session("cli", cwd=str(tmp_path))
    proc.rt.grant(cli, ["starts-process"], cwd_prefix=str(tmp_path))
    left = ok(
        await proc.rt.call(
            "run_command",
            {"cwd": str(tmp_path), "shell": "sleep 100.25 > /dev/null & echo started"},
            caller=cli,
        )
    )
    assert left["confinedTo"] == str(tmp_path.resolve())
    # Its pid inside is not its pid here (a PID namespace of its own): found by its command.
    assert not [
        p.pid
        for p in psutil.process_iter(["cmdline", "status"])
        if p.info["cmdline"] == ["sleep", "100.25"] and p.info["status"] != psutil.STATUS_ZOMBIE
    ]
    answer: dict[str, Any] = {}

    async def call() -> None:
        answer["res"] = await proc.rt.call(
            "run_command",
            {"cwd": str(tmp_path), "shell": TWO_SLEEPS, "timeoutMs": 3000},
            caller=cli,
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        leader, children = await the_running_command(proc)
    assert ok(answer["res"])["timedOut"] is True
    for pid in [leader, *children]:
        assert gone(pid)


@pytest.mark.slow
async def test_git_metadata_a_confined_command_plants_is_neutralised_and_reported(
    proc: Proc, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    cli = proc.rt.open_session("cli", cwd=str(project))
    proc.rt.grant(cli, ["starts-process"], cwd_prefix=str(project))
    marker = tmp_path / "fsmonitor-ran"
    script = (
        "git init -q sub && "
        f"git -C sub config core.fsmonitor 'touch {marker}' && "
        "git -C sub config alias.st '!touch ran-alias' && echo planted"
    )
    result = await proc.rt.call("run_command", {"cwd": str(project), "shell": script}, caller=cli)
    assert ok(result)["stdout"].strip() == "planted", result.content["stderr"]
    config = (project / "sub" / ".git" / "config").read_text()
    assert "fsmonitor" not in config
    assert "alias" not in config or "!touch" not in config
    assert result.diagnostics, "the result says what was neutralised"
    assert any("sub" in d.message for d in result.diagnostics)
    # The repository itself stays a repository (a scaffolder's `git init` keeps working).
    assert (project / "sub" / ".git" / "HEAD").is_file()


def test_under_a_cwd_grant_meith_call_run_command_is_confined(
    meith_server: Any, tmp_path: Path
) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    srv = serve(meith_server, cwd=str(repo))
    script = (
        f"echo x > {srv.home.root}/grants.json; echo home:$?; "
        f"echo x > {outside}/planted; echo outside:$?; "
        f"echo ok > {repo}/inside.txt; echo inside:$?; "
        "echo env:${MEITH_SOCKET:-none}:${MEITH_HOME:-none}:${MEITH_SESSION_TOKEN:-none}"
    )
    grants_before = (srv.home.root / "grants.json").read_bytes()
    envelope = srv.call("run_command", {"shell": script}, cwd=str(repo))
    assert envelope["ok"], envelope
    res = envelope["content"]
    got = dict(line.split(":", 1) for line in res["stdout"].split())
    assert got["home"] != "0"
    assert (srv.home.root / "grants.json").read_bytes() == grants_before
    assert got["outside"] != "0"
    assert not (outside / "planted").exists()
    assert got["inside"] == "0"
    assert (repo / "inside.txt").read_text() == "ok\n"
    assert got["env"] == "none:none:none"
    assert res["confinedTo"] == str(repo.resolve())
    # Outside the grant's directory it does not run at all.
    denied = srv.call("run_command", {"command": ["true"]}, cwd=str(outside))
    assert denied["error"]["code"] == "PERMISSION_DENIED"
    assert os.listdir(outside) == []
