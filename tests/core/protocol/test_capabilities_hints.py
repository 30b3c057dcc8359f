"""What a client is told about every first-party tool is true: its hints, derived in one place
from the tool's capabilities and declared effect (`protocol.capabilities.hints`) and checked
here row by row against what each tool really does (a first-party tool without a row fails the
test); its schema's `required`; and the advice of a result too large to send."""

from __future__ import annotations

import json
from typing import Any

import pytest

from meith_core import MeithHome, Runtime, ToolResult
from meith_core.mcp.tools import to_mcp_tool
from meith_core.protocol.capabilities import Effect, hints
from meith_core.protocol.constants import MAX_FRAME_BYTES
from meith_core.protocol.frames import result_frame

T, F = True, False
FIRST_PARTY = {"core", "git", "process", "browser", "files"}

#: name: (readOnly, destructive, idempotent, openWorld)
HINTS: dict[str, tuple[bool, bool, bool, bool]] = {
    "app_health": (T, F, T, F),
    "app_list_instances": (T, F, T, F),
    "list_plugins": (T, F, T, F),
    "reload_plugins": (F, F, F, F),
    "get_app_settings": (T, F, T, F),
    # Settings are replaced in place (a key set to null is removed).
    "set_app_settings": (F, T, F, F),
    "get_audit_log": (T, F, T, F),
    "get_tabs": (T, F, T, F),
    "get_active_tab": (T, F, T, F),
    "open_browser_tab": (F, F, F, T),
    "navigate": (F, F, F, T),
    "go_back": (F, F, F, T),
    "go_forward": (F, F, F, T),
    "refresh": (F, F, F, T),
    "focus_browser_tab": (F, F, F, T),
    "close_browser_tab": (F, T, F, T),
    "browser_use_start": (F, F, F, T),
    "browser_use_end": (F, T, F, T),
    "take_screenshot": (F, F, F, T),
    "get_browser_state": (F, F, F, T),
    "click_element": (F, T, F, T),
    "type_text": (F, T, F, T),
    "scroll_page": (F, F, F, T),
    "send_keys": (F, T, F, T),
    "cdp_command": (F, T, F, T),
    "get_console_logs": (T, F, T, F),
    "get_network_logs": (F, F, F, T),
    "git_status": (T, F, T, F),
    "git_diff": (T, F, T, F),
    "git_log": (T, F, T, F),
    "git_blame": (T, F, T, F),
    "git_identity_detect": (T, F, T, F),
    # Staging replaces what the index held for a path (a partial stage is lost).
    "git_stage": (F, T, F, F),
    "git_unstage": (F, T, F, F),
    "git_commit": (F, F, F, F),
    "git_branch": (F, F, F, F),
    "git_worktree": (F, T, F, F),
    "git_restore": (F, T, F, F),
    "git_checkpoint_create": (F, F, F, F),
    "git_checkpoint_list": (T, F, T, F),
    "git_checkpoint_compare": (T, F, T, F),
    "git_checkpoint_restore": (F, T, F, F),
    # A shell runs whatever is typed into it.
    "create_terminal": (F, T, F, F),
    "list_terminals": (T, F, T, F),
    "write_terminal": (F, T, F, F),
    "resize_terminal": (F, F, F, F),
    "kill_terminal": (F, T, F, F),
    "close_terminal": (F, T, F, F),
    "get_terminal_snapshot": (T, F, T, F),
    # A dev server runs the command it is given.
    "start_dev_server": (F, T, F, T),
    "list_dev_servers": (T, F, T, F),
    "stop_dev_server": (F, T, F, F),
    "get_process_tree": (T, F, T, F),
    "get_process_logs": (T, F, T, F),
    "attach_process_logs": (T, F, F, F),
    "wait_for_dev_server": (F, F, F, T),
    # A command does what it is told: it may remove anything its grant reaches.
    "run_command": (F, T, F, T),
    "workspace_read_file": (T, F, T, F),
    # Replacing a file overwrites what was there; writing the same content again changes nothing.
    "workspace_write_file": (F, T, T, F),
    # A patch rewrites what the file held.
    "workspace_apply_patch": (F, T, F, F),
    "workspace_undo": (F, T, F, F),
    "workspace_list_files": (T, F, T, F),
    "workspace_search": (T, F, T, F),
}


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Runtime:
    """A runtime with every installed plugin's tools registered (none started)."""
    rt = Runtime(MeithHome(tmp_path_factory.mktemp("home")))
    rt.discover_plugins()
    return rt


@pytest.fixture(scope="module")
def descriptors(runtime: Runtime) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for d in runtime.catalogue.describe() if d["plugin"] in FIRST_PARTY}


def test_every_first_party_tool_declares_its_effect_and_has_a_row(
    descriptors: dict[str, dict[str, Any]],
) -> None:
    assert {n for n, d in descriptors.items() if "effect" not in d} == set()
    assert set(descriptors) - set(HINTS) == set(), "add a row for each new tool"
    assert set(HINTS) - set(descriptors) == set(), "a row names a tool that no longer exists"


def test_the_hints_of_every_first_party_tool(descriptors: dict[str, dict[str, Any]]) -> None:
    wrong = {}
    for name, descriptor in descriptors.items():
        a = to_mcp_tool(descriptor).annotations
        assert a is not None
        got = (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
        if got != HINTS[name]:
            wrong[name] = got
    assert wrong == {}


def test_what_kills_or_removes_is_destructive_and_a_reload_is_not_read_only() -> None:
    # Issue 32, case 8: what runs arbitrary commands or overwrites in place is destructive.
    for name in (
        "git_worktree",
        "kill_terminal",
        "stop_dev_server",
        "close_terminal",
        "start_dev_server",
        "create_terminal",
        "workspace_apply_patch",
        "set_app_settings",
        "run_command",
    ):
        assert HINTS[name][1] is True, name
    assert HINTS["reload_plugins"][0] is False


@pytest.mark.parametrize(
    ("caps", "effect", "idempotent", "expected"),
    [
        (["read-only"], None, True, (T, F, T, F)),
        (["read-only"], "reloads", True, (F, F, T, F)),
        (["read-only", "accesses-network"], "reads", True, (F, F, T, T)),
        (["starts-process"], "removes", True, (F, T, T, F)),
        (["writes-files"], "appends", True, (F, F, F, F)),  # what appends is never idempotent
        (["controls-browser"], "acts", False, (F, T, F, T)),
        (["writes-files", "destructive"], "updates", False, (F, T, F, F)),
        (["writes-files"], None, False, (F, T, F, F)),  # undeclared and privileged: maybe
        (["starts-process"], "creates", False, (F, T, F, F)),  # a process runs anything
        (["starts-process"], "updates", True, (F, F, T, F)),  # resizing runs nothing
        (["writes-files"], "updates", True, (F, T, T, F)),  # overwritten in place
        (["writes-files"], "creates", False, (F, F, F, F)),  # a new branch, a checkpoint
        (["controls-browser"], "updates", False, (F, F, F, T)),  # navigating
    ],
)
def test_the_one_derivation(
    caps: list[str], effect: str | None, idempotent: bool, expected: tuple[bool, ...]
) -> None:
    assert tuple(hints(caps, effect, idempotent)) == expected
    if effect is not None:
        assert Effect(effect).value == effect


def test_an_unknown_effect_is_refused_when_the_tool_is_declared() -> None:
    from meith_core import ToolDefinitionError, tool
    from tests.core.support import NoArgs

    async def poke(ctx: Any, args: NoArgs) -> None:
        """Poke."""

    with pytest.raises(ToolDefinitionError, match="unknown effect"):
        tool(poke, capabilities=["read-only"], effect="smashes", input=NoArgs)


def test_schemas_require_only_what_a_call_must_give(
    descriptors: dict[str, dict[str, Any]],
) -> None:
    """`cwd` defaults to the caller's directory, so no schema marks it required."""
    with_cwd = [d for d in descriptors.values() if "cwd" in d["inputSchema"]["properties"]]
    assert {"git_status", "git_diff", "start_dev_server"} <= {d["name"] for d in with_cwd}
    assert [d["name"] for d in with_cwd if "cwd" in d["inputSchema"].get("required", [])] == []


def test_a_result_too_large_to_send_names_only_arguments_the_tool_has(
    runtime: Runtime,
) -> None:
    huge = ToolResult(ok=True, content={"files": "x" * (MAX_FRAME_BYTES + 1)})
    for name, expected in (("git_diff", ["path", "includePatches", "scope"]), ("git_status", [])):
        registered = runtime.catalogue.get(name)
        assert registered is not None
        assert registered.definition.narrowing_arguments == expected
        frame = json.loads(result_frame("r", name, huge, lambda e=expected: e))
        error = frame["result"]["error"]
        assert error["details"]["narrowWith"] == expected
        assert "limit" not in error["message"]  # git_diff has no such argument
        for argument in expected:
            assert argument in error["message"]
