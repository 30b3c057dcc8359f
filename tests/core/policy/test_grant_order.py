"""Issue 32, case 6: grants compose — the most specific grant that covers a call applies.

Before, the first standing grant in file order that covered a call won: with a general
`--caller agent -c starts-process --cwd W` and a narrower `--caller agent --agent A -c
starts-process --cwd W --net 127.0.0.1:PORT` added after it, agent A's process got no network.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from meith_core import ErrorCode, Runtime, ToolContext
from meith_core.policy.grant_order import covering
from meith_core.policy.grants import Grant, StandingGrants, new_grant
from meith_core.protocol.caller import CallerKind
from meith_core.protocol.capabilities import Capability
from tests.core.support import CwdArgs, make_tool
from tests.harness import MEITH, base_env

STARTS = Capability.STARTS_PROCESS


@pytest.fixture
def spawner(runtime: Runtime) -> Runtime:
    """`spawn` (starts-process, acts on its cwd) returns the grant it ran under, and what
    `held_grant` says for the same call (the question hooks ask)."""

    async def spawn(ctx: ToolContext, args: CwdArgs) -> Any:
        held = ctx.held_grant("starts-process", cwd=args.cwd)
        return {
            "scope": ctx.grant_scope,
            "net": list(ctx.grant_net),
            "heldNet": list(held.net) if held else None,
        }

    async def other(ctx: ToolContext, args: CwdArgs) -> Any:
        return {"scope": ctx.grant_scope}

    runtime.register(
        [
            make_tool(spawn, "starts-process", input=CwdArgs, acts_on="path:cwd"),
            make_tool(other, "starts-process", input=CwdArgs, acts_on="path:cwd"),
        ]
    )
    return runtime


def _add(runtime: Runtime, *caps: str, **kw: Any) -> Grant:
    return StandingGrants(runtime.home.grants_path).add(
        new_grant("agent", caps or ["starts-process"], source="standing", **kw)
    )


def _last_reason(runtime: Runtime) -> str:
    return str(list(runtime.audit.read())[-1]["reason"])


@pytest.mark.anyio
async def test_a_named_agents_grant_beats_an_earlier_general_one(
    spawner: Runtime, tmp_path: Path
) -> None:
    general = _add(spawner, cwd_prefix=str(tmp_path))
    narrow = _add(spawner, cwd_prefix=str(tmp_path), agent="A", net=["127.0.0.1:5432"])
    a = spawner.open_session("agent", label="A")
    result = await spawner.call("spawn", {"cwd": str(tmp_path)}, caller=a)
    assert result.ok, result.error
    assert result.content["net"] == ["127.0.0.1:5432"]
    assert result.content["heldNet"] == ["127.0.0.1:5432"]
    assert _last_reason(spawner) == f"standing grant {narrow.id}"
    # Another agent still gets the general one.
    b = spawner.open_session("agent", label="B")
    result = await spawner.call("spawn", {"cwd": str(tmp_path)}, caller=b)
    assert result.content["net"] == []
    assert _last_reason(spawner) == f"standing grant {general.id}"


@pytest.mark.anyio
async def test_a_tool_before_any_tool_and_a_deeper_directory_before_a_shallower(
    spawner: Runtime, tmp_path: Path
) -> None:
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    shallow = _add(spawner, cwd_prefix=str(tmp_path), net=["one.example"])
    deeper = _add(spawner, cwd_prefix=str(tmp_path / "a"), net=["two.example"])
    for_tool = _add(spawner, cwd_prefix=str(tmp_path), tool="spawn", net=["three.example"])
    agent = spawner.open_session("agent", label="X")
    assert (await spawner.call("spawn", {"cwd": str(deep)}, caller=agent)).ok
    assert _last_reason(spawner) == f"standing grant {for_tool.id}"
    assert (await spawner.call("other", {"cwd": str(deep)}, caller=agent)).ok
    assert _last_reason(spawner) == f"standing grant {deeper.id}"
    assert (await spawner.call("other", {"cwd": str(tmp_path)}, caller=agent)).ok
    assert _last_reason(spawner) == f"standing grant {shallow.id}"


@pytest.mark.anyio
async def test_a_spent_specific_grant_gives_way_to_the_next(
    spawner: Runtime, tmp_path: Path
) -> None:
    general = _add(spawner, cwd_prefix=str(tmp_path))
    once = _add(spawner, cwd_prefix=str(tmp_path), agent="A", uses=1)
    a = spawner.open_session("agent", label="A")
    assert (await spawner.call("spawn", {"cwd": str(tmp_path)}, caller=a)).ok
    assert _last_reason(spawner) == f"standing grant {once.id}"
    assert (await spawner.call("spawn", {"cwd": str(tmp_path)}, caller=a)).ok
    assert _last_reason(spawner) == f"standing grant {general.id}"


def test_ties_go_to_the_fewest_capabilities_then_the_oldest_then_the_id(tmp_path: Path) -> None:
    both = new_grant("agent", ["starts-process", "writes-files"], cwd_prefix=str(tmp_path))
    one = new_grant("agent", ["starts-process"], cwd_prefix=str(tmp_path))
    older = new_grant("agent", ["starts-process"], cwd_prefix=str(tmp_path))
    older.created_at = one.created_at - 1
    twin = new_grant("agent", ["starts-process"], cwd_prefix=str(tmp_path))
    twin.created_at = older.created_at
    order = covering(
        [both, one, twin, older],
        CallerKind.AGENT,
        "s",
        label=None,
        tool="spawn",
        wanted=(STARTS,),
        directory=str(tmp_path),
        now_ms=0,
    )
    assert [m.grant for m in order if m.covers] == [
        *sorted([older, twin], key=lambda g: g.id),
        one,
        both,
    ]


@pytest.mark.anyio
async def test_a_denial_still_comes_when_no_grant_covers(spawner: Runtime, tmp_path: Path) -> None:
    _add(spawner, cwd_prefix=str(tmp_path), agent="A")
    b = spawner.open_session("agent", label="B")
    denied = await spawner.call("spawn", {"cwd": str(tmp_path)}, caller=b)
    assert denied.error.code is ErrorCode.PERMISSION_DENIED


def _meith(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEITH, *args],
        env=base_env(home),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.slow
def test_meith_grants_explain_says_which_grant_applies_and_why(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = tmp_path / "w"
    work.mkdir()
    add = ["grants", "add", "--caller", "agent", "-c", "starts-process", "--cwd", str(work)]
    general = _meith(home, *add, "--json")
    narrow = _meith(home, *add, "--agent", "A", "--net", "127.0.0.1:5432", "--json")
    general_id = json.loads(general.stdout)["id"]
    narrow_id = json.loads(narrow.stdout)["id"]
    describe = ["--caller", "agent", "--agent", "A", "--tool", "run_command", "--cwd", str(work)]

    done = _meith(home, "grants", "explain", *describe, "-c", "starts-process")
    assert done.returncode == 0, done.stderr
    assert f"applies: {narrow_id}" in done.stdout
    assert "named agent" in done.stdout
    assert general_id in done.stdout

    done = _meith(home, "grants", "explain", *describe, "-c", "starts-process", "--json")
    explained = json.loads(done.stdout)
    assert explained["applies"]["id"] == narrow_id
    assert [c["id"] for c in explained["alsoCover"]] == [general_id]

    other = _meith(home, "grants", "explain", "--caller", "agent", "--agent", "B", "--tool",
                   "run_command", "--cwd", str(work), "-c", "starts-process", "--json")  # fmt: skip
    assert json.loads(other.stdout)["applies"]["id"] == general_id
    assert "meith grants explain" in _meith(home, "grants", "explain", "--help").stdout
