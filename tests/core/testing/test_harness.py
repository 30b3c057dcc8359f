"""`meith_core.testing`: the `meith` fixture (registered through pytest11) and its helpers,
from sync and async tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from meith_core import ErrorCode, ToolArgs, ToolContext, ToolDefinition, ToolError, hookimpl, tool
from meith_core.testing import MeithHarness, PluginLoadError


class NoteArgs(ToolArgs):
    name: str = Field(description="File name")
    text: str = Field(description="Content")


class WriteNoteArgs(NoteArgs):
    cwd: str = Field(description="Directory to write in (default: the caller's)")


class NoteSettings(BaseModel):
    suffix: str = ".txt"


class NotesPlugin:
    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        return [
            tool(self.notes_say, capabilities=["read-only"]),
            tool(
                self.notes_write,
                capabilities=["writes-files"],
                grant_scope="enforced",
                acts_on="path:cwd",
            ),
        ]

    @hookimpl
    def meith_settings(self) -> dict[str, type[BaseModel]]:
        return {"notes": NoteSettings}

    async def notes_say(self, ctx: ToolContext, args: NoteArgs) -> dict[str, Any]:
        """Say something, with progress."""
        ctx.progress("saying", 0.5)
        ctx.partial_text(args.text)
        return {"said": args.text, "caller": ctx.caller.caller.value, "cwd": ctx.cwd}

    def notes_write(self, ctx: ToolContext, args: WriteNoteArgs) -> str:
        """Write a note in a directory (the caller's by default)."""
        if ctx.grant_scope is not None and not Path(args.cwd).resolve().is_relative_to(
            ctx.grant_scope
        ):
            raise ToolError(ErrorCode.PERMISSION_DENIED, "outside the grant's directory")
        suffix = ctx.settings.get("notes", {}).get("suffix", ".txt")
        target = Path(args.cwd) / (args.name + suffix)
        target.write_text(args.text)
        return str(target)


pytestmark = pytest.mark.meith_plugin("notes", obj=NotesPlugin)


def test_only_the_plugin_under_test_and_core_are_loaded(meith: MeithHarness) -> None:
    assert set(meith.runtime.plugins.records) == {"core", "notes"}
    assert isinstance(meith.plugin, NotesPlugin)
    assert meith.cwd == str(meith.runtime.cwd)


def test_call_as_cli_agent_and_plugin_and_collect_events(meith: MeithHarness) -> None:
    for caller in ("cli", "agent", "plugin"):
        result = meith.call("notes_say", {"name": "n", "text": "hi"}, caller=caller)
        assert result.ok, result
        assert result.content["caller"] == caller
    assert [e["kind"] for e in meith.events] == ["progress", "partial_text"]
    assert meith.events[1]["text"] == "hi"
    records = meith.audit("notes_say")
    assert [r["caller"] for r in records] == ["cli", "agent", "plugin"]


def test_a_privileged_tool_needs_approval_and_a_grant_confined_to_a_directory(
    meith: MeithHarness, tmp_path: Path
) -> None:
    args = {"name": "a", "text": "x"}
    denied = meith.call("notes_write", args, caller="agent")
    assert denied.error is not None
    assert denied.error.code == ErrorCode.PERMISSION_DENIED
    meith.approve()
    inside = tmp_path / "inside"
    inside.mkdir()
    agent = meith.grant(["writes-files"], confine_to=inside)
    assert meith.call("notes_write", args, caller=agent).ok is False  # cwd is tmp_path
    written = meith.call("notes_write", args, caller=agent, cwd=inside)
    assert written.ok, written
    assert Path(written.content).read_text() == "x"
    assert [r["decision"] for r in meith.audit("notes_write")] == ["deny", "deny", "allow"]


def test_fake_settings_reach_the_tool(meith: MeithHarness, tmp_path: Path) -> None:
    meith.approve()
    meith.set_settings("notes", {"suffix": ".md"})
    assert meith.settings["notes"]["suffix"] == ".md"
    result = meith.call("notes_write", {"name": "b", "text": "y"}, caller="internal")
    assert result.content == str(tmp_path / "b.md")


@pytest.mark.anyio
async def test_the_fixture_works_from_async_tests(meith: MeithHarness) -> None:
    result = await meith.acall("notes_say", {"name": "n", "text": "async"}, caller="agent")
    assert result.content["said"] == "async"
    assert meith.events[0]["kind"] == "progress"


class _Broken:
    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        raise RuntimeError("cannot find the weather service")


def test_a_plugin_that_fails_to_load_fails_the_harness_with_reason_and_traceback(
    tmp_path: Path,
) -> None:
    with pytest.raises(PluginLoadError, match="cannot find the weather service") as info:
        MeithHarness(tmp_path / "home", "broken", plugin=_Broken).start()
    assert "Traceback" in str(info.value)
    with pytest.raises(PluginLoadError, match="no plugin 'nothere' in the entry points"):
        MeithHarness(tmp_path / "home2", "nothere").start()
