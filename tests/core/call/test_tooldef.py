"""`@tool` / `ToolDefinition`: what a tool must declare, and the descriptor it yields."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from meith_core import NO_TIMEOUT, Capability, Runtime, ToolContext, ToolDefinitionError, tool
from meith_core.protocol import DEFAULT_TOOL_TIMEOUT_MS
from tests.core.call.support import Args, defn, echo


class LooseArgs(BaseModel):
    text: str = "hi"


class IgnoreArgs(BaseModel):
    model_config = ConfigDict(extra="ignore")


# -- names ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "git_status", "x1", "a_b_c_9", "tool_"])
def test_valid_tool_names_are_accepted(name: str) -> None:
    assert defn(name=name).name == name


@pytest.mark.parametrize(
    "name", ["", "Git", "1abc", "_x", "git-status", "git status", "gitStatus", "é", "a\n", "a.b"]
)
def test_names_not_matching_the_regex_are_refused(name: str) -> None:
    with pytest.raises(ToolDefinitionError, match="name must match"):
        defn(name=name)


# -- description ------------------------------------------------------------------------


@pytest.mark.parametrize("description", ["", "   ", "\n\t"])
def test_an_empty_description_is_refused(description: str) -> None:
    with pytest.raises(ToolDefinitionError, match="description"):
        defn(description=description)


def test_the_description_defaults_to_the_docstring() -> None:
    @tool(capabilities=["read-only"])
    async def documented(ctx: ToolContext, args: Args) -> None:
        """First line.

        More detail, indented in the source.
        """

    assert documented.description == "First line.\n\nMore detail, indented in the source."


def test_a_tool_without_docstring_or_description_is_refused() -> None:
    async def bare(ctx: ToolContext, args: Args) -> None:
        pass

    with pytest.raises(ToolDefinitionError, match="description"):
        tool(bare, capabilities=["read-only"])


def test_an_explicit_description_wins_over_the_docstring() -> None:
    assert tool(echo, capabilities=["read-only"], description="Other.").description == "Other."


# -- input model ------------------------------------------------------------------------


@pytest.mark.parametrize("model", [LooseArgs, IgnoreArgs])
def test_an_input_model_without_extra_forbid_is_refused(model: type[BaseModel]) -> None:
    with pytest.raises(ToolDefinitionError, match='extra="forbid"'):
        defn(input_model=model)


@pytest.mark.parametrize("model", [dict, str, Args(), None])
def test_an_input_model_that_is_not_a_pydantic_model_is_refused(model: Any) -> None:
    with pytest.raises(ToolDefinitionError, match="input model"):
        defn(input_model=model)


def test_the_input_model_is_inferred_from_the_second_parameter() -> None:
    assert tool(echo, capabilities=["read-only"]).input_model is Args


def test_a_tool_whose_input_model_cannot_be_found_is_refused() -> None:
    async def untyped(ctx, args):  # type: ignore[no-untyped-def]
        """Untyped."""

    with pytest.raises(ToolDefinitionError, match="input=Model"):
        tool(untyped, capabilities=["read-only"])


def test_input_can_be_given_explicitly() -> None:
    async def untyped(ctx, args):  # type: ignore[no-untyped-def]
        """Untyped."""

    assert tool(untyped, capabilities=["read-only"], input=Args).input_model is Args


# -- capabilities -----------------------------------------------------------------------


def test_capabilities_are_parsed_deduplicated_and_ordered() -> None:
    d = defn(capabilities=["destructive", "read-only", "writes-files", "read-only"])
    assert d.capabilities == (
        Capability.READ_ONLY,
        Capability.WRITES_FILES,
        Capability.DESTRUCTIVE,
    )


def test_every_capability_of_the_spec_is_known() -> None:
    names = [
        "read-only",
        "writes-files",
        "controls-browser",
        "starts-process",
        "accesses-network",
        "destructive",
    ]
    assert [c.value for c in defn(capabilities=names).capabilities] == names


@pytest.mark.parametrize("caps", [(), []])
def test_empty_capabilities_are_a_registration_error(caps: Any) -> None:
    with pytest.raises(ToolDefinitionError, match="at least one capability"):
        defn(capabilities=caps)


@pytest.mark.parametrize("caps", [["read"], ["read-only", "root"], ["READ-ONLY"]])
def test_unknown_capabilities_are_a_registration_error(caps: list[str]) -> None:
    with pytest.raises(ToolDefinitionError, match="unknown capability"):
        defn(capabilities=caps)


def test_a_single_capability_string_is_accepted_by_the_decorator() -> None:
    assert tool(echo, capabilities="read-only").capabilities == (Capability.READ_ONLY,)


# -- timeouts ---------------------------------------------------------------------------


def test_timeout_defaults_to_the_protocol_default() -> None:
    d = defn()
    assert d.timeout_ms is None
    assert d.effective_timeout_ms == DEFAULT_TOOL_TIMEOUT_MS
    assert d.descriptor("p")["timeoutMs"] == DEFAULT_TOOL_TIMEOUT_MS


def test_a_tool_timeout_is_kept() -> None:
    assert defn(timeout_ms=1500).effective_timeout_ms == 1500


def test_no_timeout_means_the_tool_runs_until_cancelled() -> None:
    d = defn(timeout_ms=NO_TIMEOUT)
    assert d.effective_timeout_ms is None
    assert d.descriptor("p")["timeoutMs"] is None


@pytest.mark.parametrize("bad", [-1, 1.5, "100", True, 2**40])
def test_a_bad_timeout_is_refused(bad: Any) -> None:
    with pytest.raises(ToolDefinitionError, match="timeout_ms"):
        defn(timeout_ms=bad)


# -- output model -----------------------------------------------------------------------


class Out(BaseModel):
    count: int


def test_an_output_model_must_be_a_pydantic_model() -> None:
    with pytest.raises(ToolDefinitionError, match="output model"):
        defn(output_model=dict)


def test_the_output_schema_is_in_the_descriptor() -> None:
    d = defn(output_model=Out)
    assert d.descriptor("p")["outputSchema"]["properties"]["count"]["type"] == "integer"
    assert "outputSchema" not in defn().descriptor("p")


@pytest.mark.anyio
async def test_a_result_that_does_not_match_the_output_model_is_a_tool_failure(
    runtime: Runtime,
) -> None:
    async def counted(ctx: ToolContext, args: Args) -> Any:
        """Count."""
        return {"count": args.text}

    runtime.register(tool(counted, capabilities=["read-only"], output=Out))
    good = await runtime.call("counted", {"text": "3"})
    assert good.ok
    assert good.content == {"count": 3}  # validated and dumped through the model
    bad = await runtime.call("counted", {"text": "three"})
    assert not bad.ok
    assert bad.error.code == "TOOL_FAILED"
    assert "output schema" in bad.error.message


# -- sync and async ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_sync_tools_run_in_a_worker_thread_and_async_ones_on_the_loop(
    runtime: Runtime,
) -> None:
    loop_thread = threading.get_ident()

    def sync_where(ctx: ToolContext, args: Args) -> bool:
        """Report whether it runs on the event loop thread."""
        return threading.get_ident() == loop_thread

    async def async_where(ctx: ToolContext, args: Args) -> bool:
        """Report whether it runs on the event loop thread."""
        return threading.get_ident() == loop_thread

    runtime.register(
        [
            tool(sync_where, capabilities=["read-only"]),
            tool(async_where, capabilities=["read-only"]),
        ]
    )
    assert (await runtime.call("sync_where")).content is False
    assert (await runtime.call("async_where")).content is True


@pytest.mark.anyio
async def test_bound_async_methods_and_async_callables_run_as_async_tools(
    runtime: Runtime,
) -> None:
    loop_thread = threading.get_ident()

    class Holder:
        async def method(self, ctx: ToolContext, args: Args) -> bool:
            """On the loop."""
            return threading.get_ident() == loop_thread

    class Callable_:
        async def __call__(self, ctx: ToolContext, args: Args) -> bool:
            return threading.get_ident() == loop_thread

    runtime.register(
        [
            tool(Holder().method, name="bound_method", capabilities=["read-only"]),
            tool(
                Callable_(),
                name="async_callable",
                capabilities=["read-only"],
                input=Args,
                description="An object with async __call__.",
            ),
        ]
    )
    assert (await runtime.call("bound_method")).content is True
    assert (await runtime.call("async_callable")).content is True


def test_the_descriptor_has_the_protocol_fields() -> None:
    d = defn(capabilities=["writes-files", "read-only"], timeout_ms=100)
    assert d.descriptor("git") == {
        "name": "echo",
        "description": "Echo.",
        "inputSchema": d.input_schema,
        "capabilities": ["read-only", "writes-files"],
        "plugin": "git",
        "timeoutMs": 100,
        "idempotent": False,
    }
