"""`@tool` and `ToolDefinition`: what a plugin declares about each tool."""

from __future__ import annotations

import copy
import inspect
import re
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from meith_core.call.schema import model_schema
from meith_core.policy.request import ActsOn
from meith_core.protocol.capabilities import Capability, Effect, parse_capabilities
from meith_core.protocol.constants import DEFAULT_TOOL_TIMEOUT_MS, MAX_TIMEOUT_MS

if TYPE_CHECKING:
    from meith_core.call.context import ToolContext

TOOL_NAME_RE: Final = re.compile(r"^[a-z][a-z0-9_]*$")

#: `timeout_ms=NO_TIMEOUT`: the tool runs until cancelled (streams such as log attachment).
NO_TIMEOUT: Final = 0

ToolFunc = Callable[["ToolContext", Any], Any]
#: How a privileged tool taking a path honours a grant confined to a directory
#: (`ctx.grant_scope`): "enforced" — it refuses to act outside it; "not-applicable" — its
#: paths never lead to writes or processes. `meith plugins check` asks for one of them.
GrantScope = Literal["enforced", "not-applicable"]


class ToolArgs(BaseModel):
    """Base of a tool's argument model: unknown arguments are rejected (`extra="forbid"`)."""

    model_config = ConfigDict(extra="forbid")


#: The argument the pipeline fills with the caller's directory when a call leaves it out.
DEFAULTED_CWD: Final = "cwd"
#: Arguments that, when a tool has them, ask it for less (named when a result is too large).
NARROWING_ARGUMENTS: Final = ("path", "paths", "limit", "sinceSeq", "includePatches", "scope")


class ToolDefinitionError(ValueError):
    """A tool declaration that cannot be registered; the message says what to fix."""


@dataclass(frozen=True, eq=False)
class ToolDefinition:
    """A tool: its name, contract and the function that runs it.

    `func(ctx, args)` may be sync (it then runs in a worker thread) or async.
    """

    name: str
    description: str
    input_model: type[BaseModel]
    capabilities: tuple[Capability, ...]
    func: ToolFunc = field(repr=False)
    timeout_ms: int | None = None
    output_model: type[BaseModel] | None = None
    #: Calling it again with the same arguments has no further effect (a hint for agents).
    idempotent: bool = False
    grant_scope: GrantScope | None = None
    #: `content -> text`: the successful result written for a model to read (porcelain-like
    #: lines, a diff, a list as lines), sent as the MCP text content; the structured content
    #: stays the machine form. None: agents get the content as compact JSON.
    render: Callable[[Any], str] | None = field(default=None, repr=False)
    #: What it acts on (`policy.request.ActsOn`; "path:cwd", "global", ActsOn.object(...)):
    #: the permission service matches directory-confined grants against it.
    acts_on: ActsOn | str | None = None
    #: What it does at worst (`Effect`): with the capabilities, what the hints say.
    effect: Effect | None = None

    def __post_init__(self) -> None:
        where = f"tool {self.name!r}"
        if not isinstance(self.name, str) or not TOOL_NAME_RE.fullmatch(self.name):
            raise ToolDefinitionError(
                f"{where}: name must match {TOOL_NAME_RE.pattern} (snake_case, starting with a letter)"
            )
        if not isinstance(self.description, str) or not self.description.strip():
            raise ToolDefinitionError(
                f"{where}: description must be non-empty (or give a docstring)"
            )
        if not (isinstance(self.input_model, type) and issubclass(self.input_model, BaseModel)):
            raise ToolDefinitionError(f"{where}: input model must be a pydantic BaseModel subclass")
        if self.input_model.model_config.get("extra") != "forbid":
            raise ToolDefinitionError(
                f"{where}: input model {self.input_model.__name__} must set "
                'model_config = ConfigDict(extra="forbid") so unknown arguments are rejected'
            )
        if self.output_model is not None and not (
            isinstance(self.output_model, type) and issubclass(self.output_model, BaseModel)
        ):
            raise ToolDefinitionError(
                f"{where}: output model must be a pydantic BaseModel subclass"
            )
        if not self.capabilities:
            raise ToolDefinitionError(f"{where}: declare at least one capability")
        try:
            caps = parse_capabilities(self.capabilities)
        except ValueError as exc:
            raise ToolDefinitionError(f"{where}: {exc}") from None
        object.__setattr__(self, "capabilities", caps)
        if self.effect is not None:
            try:
                object.__setattr__(self, "effect", Effect(self.effect))
            except ValueError:
                allowed = ", ".join(e.value for e in Effect)
                raise ToolDefinitionError(
                    f"{where}: unknown effect {self.effect!r}; expected one of: {allowed}"
                ) from None
        if self.timeout_ms is not None and (
            not isinstance(self.timeout_ms, int)
            or isinstance(self.timeout_ms, bool)
            or not 0 <= self.timeout_ms <= MAX_TIMEOUT_MS
        ):
            raise ToolDefinitionError(
                f"{where}: timeout_ms must be a positive int of milliseconds, or NO_TIMEOUT"
            )
        if not callable(self.func):
            raise ToolDefinitionError(f"{where}: func must be callable")
        if self.acts_on is not None:
            try:
                acts_on = ActsOn.parse(self.acts_on)
            except ValueError as exc:
                raise ToolDefinitionError(f"{where}: {exc}") from None
            if acts_on.kind == "path" and acts_on.name not in self.input_model.model_fields:
                raise ToolDefinitionError(
                    f"{where}: acts_on={acts_on.describe()!r} names no argument of "
                    f"{self.input_model.__name__}"
                )
            object.__setattr__(self, "acts_on", acts_on)
        if self.grant_scope not in (None, "enforced", "not-applicable"):
            raise ToolDefinitionError(
                f"{where}: grant_scope must be 'enforced' or 'not-applicable', not {self.grant_scope!r}"
            )

    @cached_property
    def is_async(self) -> bool:
        # An object with `async def __call__` is async too; run in a thread it would only
        # return an un-awaited coroutine.
        return inspect.iscoroutinefunction(self.func) or inspect.iscoroutinefunction(
            getattr(self.func, "__call__", None)  # noqa: B004 - the method itself, not callability
        )

    @property
    def declared_target(self) -> ActsOn | None:
        """`acts_on`, parsed (None: the tool does not say)."""
        return self.acts_on if isinstance(self.acts_on, ActsOn) else None

    @property
    def effective_timeout_ms(self) -> int | None:
        """The deadline when the call names none; None when the tool runs until cancelled."""
        if self.timeout_ms == NO_TIMEOUT:
            return None
        return self.timeout_ms if self.timeout_ms is not None else DEFAULT_TOOL_TIMEOUT_MS

    @cached_property
    def input_schema(self) -> dict[str, Any]:
        """The input model's schema, `required` true to the call: an argument named `cwd` is
        never required, because the pipeline gives it the caller's directory."""
        schema = model_schema(self.input_model)
        required = schema.get("required")
        if isinstance(required, list) and DEFAULTED_CWD in required:
            schema = copy.deepcopy(schema)  # the model's schema may be shared (cached)
            schema["required"] = [r for r in required if r != DEFAULTED_CWD]
            if not schema["required"]:
                del schema["required"]
            prop = schema.get("properties", {}).get(DEFAULTED_CWD)
            if isinstance(prop, dict) and "default" not in prop:
                prop["description"] = (
                    f"{prop.get('description', 'Working directory')} (default: the caller's "
                    "working directory)"
                )
        return schema

    @property
    def narrowing_arguments(self) -> list[str]:
        """The arguments of this tool that ask it for a smaller result."""
        fields = self.input_model.model_fields
        return [name for name in NARROWING_ARGUMENTS if name in fields]

    @cached_property
    def output_schema(self) -> dict[str, Any] | None:
        return model_schema(self.output_model) if self.output_model is not None else None

    def descriptor(self, plugin: str | None) -> dict[str, Any]:
        """The wire descriptor `{name, description, inputSchema, capabilities, plugin, timeoutMs,
        idempotent, effect?, outputSchema?}`."""
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "capabilities": [c.value for c in self.capabilities],
            "plugin": plugin,
            "timeoutMs": self.effective_timeout_ms,
            "idempotent": self.idempotent,
        }
        if self.effect is not None:
            out["effect"] = self.effect.value
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        return out


def _infer_input_model(func: ToolFunc) -> type[BaseModel] | None:
    params = list(inspect.signature(func).parameters.values())
    if len(params) < 2:
        return None
    try:
        hints = typing.get_type_hints(func)
    except Exception:
        return None
    hint = hints.get(params[1].name)
    return hint if isinstance(hint, type) and issubclass(hint, BaseModel) else None


@typing.overload
def tool(
    func: ToolFunc,
    *,
    capabilities: Iterable[Capability | str],
    name: str | None = None,
    description: str | None = None,
    input: type[BaseModel] | None = None,
    output: type[BaseModel] | None = None,
    timeout_ms: int | None = None,
    idempotent: bool = False,
    grant_scope: GrantScope | None = None,
    render: Callable[[Any], str] | None = None,
    acts_on: ActsOn | str | None = None,
    effect: Effect | str | None = None,
) -> ToolDefinition: ...


@typing.overload
def tool(
    func: None = None,
    *,
    capabilities: Iterable[Capability | str],
    name: str | None = None,
    description: str | None = None,
    input: type[BaseModel] | None = None,
    output: type[BaseModel] | None = None,
    timeout_ms: int | None = None,
    idempotent: bool = False,
    grant_scope: GrantScope | None = None,
    render: Callable[[Any], str] | None = None,
    acts_on: ActsOn | str | None = None,
    effect: Effect | str | None = None,
) -> Callable[[ToolFunc], ToolDefinition]: ...


def tool(
    func: ToolFunc | None = None,
    *,
    capabilities: Iterable[Capability | str],
    name: str | None = None,
    description: str | None = None,
    input: type[BaseModel] | None = None,
    output: type[BaseModel] | None = None,
    timeout_ms: int | None = None,
    idempotent: bool = False,
    grant_scope: GrantScope | None = None,
    render: Callable[[Any], str] | None = None,
    acts_on: ActsOn | str | None = None,
    effect: Effect | str | None = None,
) -> ToolDefinition | Callable[[ToolFunc], ToolDefinition]:
    """Declare a tool.

    ```python
    class EchoArgs(ToolArgs):
        text: str = Field(description="What to echo")

    @tool(capabilities=["read-only"])
    async def echo(ctx: ToolContext, args: EchoArgs) -> str:
        "Return the text it was given."
        return args.text
    ```

    The name defaults to the function name, the description to its docstring, the input model
    to the annotation of the second parameter. `grant_scope` says how a privileged tool that
    takes a path honours a grant confined to a directory (see `GrantScope`). `render` writes
    the successful result for a model to read (see `ToolDefinition.render`). `acts_on` says
    what the tool acts on — `"path:cwd"` (a path argument), `"global"` / `"global:settings"`
    (state every session shares), or `ActsOn.object(resolver, what="dev server")` (an existing
    object's own directory) — and decides which directory-confined grants cover a call
    (`policy.request`; docs/plugin-guide.md, "What a tool acts on").
    `effect` says what
    it does at worst (`reads`, `creates`, `appends`, `updates`, `reloads`, `removes`, `acts`):
    a tool that kills or removes is destructive, one that appends is not idempotent.
    """

    def wrap(fn: ToolFunc) -> ToolDefinition:
        model = input or _infer_input_model(fn)
        tool_name: str = name or str(getattr(fn, "__name__", ""))
        if model is None:
            raise ToolDefinitionError(
                f"tool {tool_name!r}: give input=Model or annotate the second parameter with a "
                "pydantic model"
            )
        return ToolDefinition(
            name=tool_name,
            description=description or inspect.cleandoc(fn.__doc__ or ""),
            input_model=model,
            # Unchecked here on purpose: ToolDefinition reports a bad one with the tool's name.
            capabilities=tuple(
                typing.cast(Iterable[Capability], [capabilities])
                if isinstance(capabilities, str)
                else typing.cast(Iterable[Capability], capabilities)
            ),
            func=fn,
            timeout_ms=timeout_ms,
            output_model=output,
            idempotent=idempotent,
            grant_scope=grant_scope,
            render=render,
            acts_on=acts_on,
            effect=typing.cast(Effect | None, effect),
        )

    if func is not None:
        return wrap(func)
    return wrap
