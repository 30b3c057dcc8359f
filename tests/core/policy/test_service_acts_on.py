"""What a call acts on (issue 20): the declaration a tool makes, and the one place the
permission service derives a call's target from it. A directory-confined grant covers a call
only when its target is inside the directory; never global state; never because of the
caller's self-reported directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from meith_core import ActsOn, ErrorCode, Runtime, ToolContext, ToolDefinitionError, tool
from meith_core.policy.request import ActsOn as PolicyActsOn
from meith_core.policy.service import acting_target
from tests.core.support import CwdArgs, NoArgs


class ObjectArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    objectId: str


#: object id -> its directory: the resolver of the `poke` tool looks here.
OBJECTS: dict[str, str] = {}


async def _ran(ctx: ToolContext, args: Any) -> dict[str, Any]:
    return {"scope": ctx.grant_scope}


@pytest.fixture
def rt(runtime: Runtime) -> Runtime:
    OBJECTS.clear()
    runtime.register(
        [
            tool(_ran, name="write_here", input=CwdArgs, capabilities=["writes-files"],
                 description="writes in cwd", acts_on="path:cwd"),
            tool(_ran, name="configure", input=NoArgs, capabilities=["writes-files"],
                 description="global configuration", acts_on="global:settings"),
            tool(_ran, name="poke", input=ObjectArgs, capabilities=["starts-process"],
                 description="act on an object",
                 acts_on=ActsOn.object(lambda a: OBJECTS.get(a.objectId), what="widget")),
            tool(_ran, name="legacy", input=NoArgs, capabilities=["writes-files"],
                 description="undeclared, no cwd argument"),
        ]
    )  # fmt: skip
    return runtime


def test_the_declaration_vocabulary() -> None:
    assert ActsOn is PolicyActsOn
    assert ActsOn.parse("path:cwd") == ActsOn("path", "cwd")
    assert ActsOn.parse("global") == ActsOn("global", "state")
    assert ActsOn.parse("global:plugins").describe() == "global:plugins"
    for bad in ("cwd", "path:", "global:everything", "object", 5):
        with pytest.raises(ValueError, match="acts_on"):
            ActsOn.parse(bad)  # type: ignore[arg-type]


def test_a_declaration_is_checked_when_the_tool_is_declared() -> None:
    with pytest.raises(ToolDefinitionError, match="names no argument"):
        tool(_ran, name="x", input=NoArgs, capabilities=["writes-files"], description="x y z",
             acts_on="path:cwd")  # fmt: skip
    with pytest.raises(ToolDefinitionError, match="acts_on"):
        tool(_ran, name="x", input=NoArgs, capabilities=["writes-files"], description="x y z",
             acts_on="everywhere")  # fmt: skip


def test_targets_are_derived_from_the_declaration(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    args = CwdArgs(cwd="link")
    path = acting_target(ActsOn.path("cwd"), str(tmp_path), args)
    assert (path.kind, path.directory) == ("path", str((tmp_path / "real").resolve()))
    glob = acting_target(ActsOn.parse("global:settings"), str(tmp_path), args)
    assert (glob.kind, glob.directory, glob.what) == ("global", None, "global state (settings)")
    unknown = acting_target(ActsOn.object(lambda a: None, "widget"), str(tmp_path), args)
    assert (unknown.kind, unknown.directory) == ("object", None)
    broken = acting_target(ActsOn.object(lambda a: 1 / 0, "widget"), str(tmp_path), args)
    assert broken.directory is None  # a failing resolver covers nothing confined
    relative = acting_target(ActsOn.object(lambda a: "rel/dir", "widget"), str(tmp_path), args)
    assert relative.directory is None
    # Undeclared: the `cwd` argument when there is one, else nothing.
    assert acting_target(None, str(tmp_path), args).directory == path.directory
    assert acting_target(None, str(tmp_path), NoArgs()).directory is None


@pytest.mark.anyio
async def test_a_confined_grant_covers_a_path_inside_it_only(rt: Runtime, tmp_path: Path) -> None:
    inside, outside = tmp_path / "in", tmp_path / "out"
    inside.mkdir()
    outside.mkdir()
    agent = rt.open_session("agent", cwd=str(inside))
    rt.grant(agent, ["writes-files"], cwd_prefix=str(inside))
    ok = await rt.call("write_here", caller=agent)  # cwd defaults to the caller's
    assert ok.ok, ok.error
    assert ok.content == {"scope": str(inside.resolve())}
    denied = await rt.call("write_here", {"cwd": str(outside)}, caller=agent)
    assert denied.error.code is ErrorCode.PERMISSION_DENIED
    assert f"{outside.resolve()}, outside it" in denied.error.message
    assert f"--cwd {outside.resolve()}" in denied.error.message


@pytest.mark.anyio
async def test_a_confined_grant_never_covers_global_state(rt: Runtime, tmp_path: Path) -> None:
    agent = rt.open_session("agent", cwd=str(tmp_path))
    grant = rt.grant(agent, ["writes-files"], cwd_prefix=str(tmp_path))
    for name in ("configure", "legacy"):
        denied = await rt.call(name, caller=agent)
        assert denied.error.code is ErrorCode.PERMISSION_DENIED, name
        message = denied.error.message
        assert f"grant {grant.id} is confined to {tmp_path.resolve()}" in message
        assert f"never covers {name}" in message
        assert "--cwd" not in message.split("can run:")[1].split("(")[0]
        assert denied.error.details["target"] in ("global", "undeclared")
    # An unconfined grant does.
    rt.grant(agent, ["writes-files"], tool="configure")
    allowed = await rt.call("configure", caller=agent)
    assert allowed.ok, allowed.error
    assert allowed.content == {"scope": None}


@pytest.mark.anyio
async def test_an_object_is_matched_by_its_own_directory(rt: Runtime, tmp_path: Path) -> None:
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    OBJECTS.update({"w": str(work), "e": str(elsewhere)})
    agent = rt.open_session("agent", cwd=str(elsewhere))  # the caller stands elsewhere
    rt.grant(agent, ["starts-process"], cwd_prefix=str(work))
    assert (await rt.call("poke", {"objectId": "w"}, caller=agent)).ok
    inside_caller = rt.open_session("agent", cwd=str(work))  # says it stands in `work`
    rt.grant(inside_caller, ["starts-process"], cwd_prefix=str(work))
    for caller in (agent, inside_caller):
        denied = await rt.call("poke", {"objectId": "e"}, caller=caller)
        assert denied.error.code is ErrorCode.PERMISSION_DENIED
        assert f"the widget's directory, {elsewhere.resolve()}, outside it" in denied.error.message
        unknown = await rt.call("poke", {"objectId": "nope"}, caller=caller)
        assert "a widget whose directory is unknown" in unknown.error.message


@pytest.mark.anyio
async def test_a_non_privileged_tool_resolves_nothing(rt: Runtime) -> None:
    calls: list[Any] = []

    def resolver(args: Any) -> str:
        calls.append(args)
        return "/"

    rt.register(
        [tool(_ran, name="look", input=ObjectArgs, capabilities=["read-only"],
              description="a read", acts_on=ActsOn.object(resolver))]
    )  # fmt: skip
    assert (await rt.call("look", {"objectId": "x"}, caller=rt.open_session("agent"))).ok
    assert calls == []
