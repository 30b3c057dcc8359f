"""A call's arguments against its tool's input model, and the one line that says what is wrong
with them (an unknown argument names the close ones, or the ones the tool takes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from meith_core.base.suggest import did_you_mean
from meith_core.call.tooldef import DEFAULTED_CWD, ToolDefinition
from meith_core.protocol.errors import ErrorCode
from meith_core.protocol.results import ToolResult, error_result


def validate_arguments(defn: ToolDefinition, arguments: Any, cwd: str) -> BaseModel | ToolResult:
    """The tool's input model from a call's arguments, or a VALIDATION_ERROR."""
    if not isinstance(arguments, Mapping):
        return error_result(
            ErrorCode.VALIDATION_ERROR,
            f'Invalid arguments for "{defn.name}": arguments must be a JSON object',
        )
    if DEFAULTED_CWD not in arguments and DEFAULTED_CWD in defn.input_model.model_fields:
        # Convention: an argument named `cwd` defaults to the caller's working directory
        # (clientInfo.cwd, else the runtime's), so `meith call git_status` works in a repo.
        arguments = {**arguments, DEFAULTED_CWD: cwd}
    try:
        return defn.input_model.model_validate(arguments)
    except ValidationError as exc:
        details = validation_details(exc)
        first = (
            _id_hint(details) or _unknown_argument(details, _argument_names(defn))
        ) or first_error(details)
        return error_result(
            ErrorCode.VALIDATION_ERROR, f'Invalid arguments for "{defn.name}": {first}', details
        )


def validation_details(exc: ValidationError) -> dict[str, Any]:
    # Only locations and messages: the offending input may be huge or hostile.
    errors = [
        {
            "path": [p if isinstance(p, int) else str(p) for p in err["loc"]],
            "message": err["msg"],
            "type": err["type"],
        }
        for err in exc.errors(include_url=False, include_context=False, include_input=False)[:50]
    ]
    return {"errors": errors}


def first_error(details: dict[str, Any]) -> str:
    err = details["errors"][0] if details["errors"] else None
    if err is None:
        return "invalid"
    where = ".".join(str(p) for p in err["path"]) or "arguments"
    return f"{where}: {err['message']}"


def _argument_names(defn: ToolDefinition) -> list[str]:
    return [field.alias or name for name, field in defn.input_model.model_fields.items()]


def _unknown_argument(details: dict[str, Any], names: list[str]) -> str | None:
    """`unknown argument "cmd". Did you mean "command"?`, else the arguments the tool takes."""
    unknown = [
        str(e["path"][0])
        for e in details["errors"]
        if e["type"] == "extra_forbidden" and len(e["path"]) == 1
    ]
    if not unknown:
        return None
    given = unknown[0]
    hint = did_you_mean(given, names, quote='"')
    if not hint:
        hint = f" It takes: {', '.join(names) or 'no arguments'}."
    return f'unknown argument "{given}".{hint}'


def _id_hint(details: dict[str, Any]) -> str | None:
    """Results name an object's id `id` (`create_terminal` → `{"id": "term_…"}`) where the
    tools that act on it take `terminalId`, `tabId`, …: a call that passes `id` for the one
    missing `…Id` argument is told which name to use, in the one line."""
    errors = details["errors"]
    extra = any(e["type"] == "extra_forbidden" and e["path"] == ["id"] for e in errors)
    missing = [
        str(e["path"][0])
        for e in errors
        if e["type"] == "missing" and len(e["path"]) == 1 and str(e["path"][0]).endswith("Id")
    ]
    if not extra or len(missing) != 1:
        return None
    return f'unknown argument "id": this tool takes the id as "{missing[0]}"'
