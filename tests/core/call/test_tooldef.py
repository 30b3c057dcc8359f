"""`@tool` / `ToolDefinition`: what a tool must declare, and the descriptor it yields."""

from __future__ import annotations

import json
import threading
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from meith_core import (
    NO_TIMEOUT,
    Capability,
    Runtime,
    ToolContext,
    ToolDefinition,
    ToolDefinitionError,
    tool,
)
from meith_core.call.catalogue import DuplicateToolError
from meith_core.call.schema import SchemaError
from meith_core.protocol import DEFAULT_TOOL_TIMEOUT_MS


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = "hi"


class LooseArgs(BaseModel):
    text: str = "hi"


class IgnoreArgs(BaseModel):
    model_config = ConfigDict(extra="ignore")


async def echo(ctx: ToolContext, args: Args) -> str:
    """Echo the text."""
    return args.text


def defn(**overrides: Any) -> ToolDefinition:
    fields: dict[str, Any] = {
        "name": "echo",
        "description": "Echo.",
        "input_model": Args,
        "capabilities": ("read-only",),
        "func": echo,
    }
    fields.update(overrides)
    return ToolDefinition(**fields)


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


# -- schemas ----------------------------------------------------------------------------


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["a", "b"] = "a"
    depth: int = Field(default=1, ge=0, description="How deep")


class Middle(BaseModel):
    model_config = ConfigDict(extra="forbid")
    inner: Inner
    inners: list[Inner] = []


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    middle: Middle
    maybe: Inner | None = None
    by_name: dict[str, Inner] = {}


def _refs(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("$ref", "$defs", "definitions"):
                found.append(k)
            found.extend(_refs(v))
    elif isinstance(node, list):
        for item in node:
            found.extend(_refs(item))
    return found


def test_input_schemas_are_self_contained_with_nested_models_inlined() -> None:
    schema = defn(input_model=Outer).input_schema
    assert _refs(schema) == []
    inner = schema["properties"]["middle"]["properties"]["inner"]
    assert inner["properties"]["mode"]["enum"] == ["a", "b"]
    assert inner["properties"]["depth"]["description"] == "How deep"
    assert inner["additionalProperties"] is False
    assert schema["properties"]["middle"]["properties"]["inners"]["items"]["properties"]["depth"]
    assert schema["additionalProperties"] is False
    json.dumps(schema)  # plain JSON


@pytest.mark.anyio
async def test_a_recursive_input_model_is_refused_at_registration(runtime: Runtime) -> None:
    class Node(BaseModel):
        model_config = ConfigDict(extra="forbid")
        children: list[Node] = []

    Node.model_rebuild()
    d = defn(input_model=Node)
    with pytest.raises(SchemaError, match="recursive"):
        runtime.register(d)
    assert "echo" not in runtime.catalogue


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


@pytest.mark.anyio
async def test_registering_a_taken_name_is_refused_and_registers_nothing_of_the_batch(
    runtime: Runtime,
) -> None:
    runtime.register(defn(name="taken"))
    with pytest.raises(DuplicateToolError, match="already registered"):
        runtime.catalogue.register_many([defn(name="fresh"), defn(name="taken")], "other")
    assert "fresh" not in runtime.catalogue
    assert runtime.catalogue.get("taken").plugin_id == "app"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_batch_declaring_one_name_twice_is_refused(runtime: Runtime) -> None:
    with pytest.raises(DuplicateToolError, match="twice"):
        runtime.catalogue.register_many([defn(name="twin"), defn(name="twin")], "p")
    assert "twin" not in runtime.catalogue


@pytest.mark.anyio
async def test_describe_lists_tools_in_registration_order(runtime: Runtime) -> None:
    runtime.register([defn(name="zeta"), defn(name="alpha")])
    runtime.register(defn(name="mid"), plugin_id="other")
    described = [d for d in runtime.describe() if d["plugin"] in ("app", "other")]
    assert [d["name"] for d in described] == ["zeta", "alpha", "mid"]
    assert [d["plugin"] for d in described] == ["app", "app", "other"]
