"""meith: a local tool host.

The public API for plugin authors and in-process callers is what this module exports; every
other module may change. Exports are resolved lazily (PEP 562) so that `meith --help` and the
client path do not pay for pydantic, structlog and pluggy at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from meith_core._version import __version__

_EXPORTS: dict[str, str] = {
    # declaring tools
    "tool": "meith_core.tooldef",
    "ToolDefinition": "meith_core.tooldef",
    "ToolDefinitionError": "meith_core.tooldef",
    "NO_TIMEOUT": "meith_core.tooldef",
    "Capability": "meith_core.capabilities",
    "hookimpl": "meith_core.plugins.hookspecs",
    # running
    "ToolContext": "meith_core.context",
    "CallerInfo": "meith_core.caller",
    "CallerKind": "meith_core.caller",
    "CancelToken": "meith_core.cancel",
    # results and errors
    "ToolResult": "meith_core.results",
    "Diagnostic": "meith_core.results",
    "ok_result": "meith_core.results",
    "error_result": "meith_core.results",
    "ToolError": "meith_core.errors",
    "ErrorCode": "meith_core.errors",
    "EventKind": "meith_core.events",
    # paths: the one containment check
    "resolve_within": "meith_core.paths",
    "is_within": "meith_core.paths",
    "PathEscapeError": "meith_core.paths",
    # hosting in-process
    "Runtime": "meith_core.runtime.host",
    "MeithHome": "meith_core.home",
    "ApprovalAnswer": "meith_core.permissions.service",
    "ApprovalRequest": "meith_core.permissions.service",
}

__all__ = [
    "NO_TIMEOUT",
    "ApprovalAnswer",
    "ApprovalRequest",
    "CallerInfo",
    "CallerKind",
    "CancelToken",
    "Capability",
    "Diagnostic",
    "ErrorCode",
    "EventKind",
    "MeithHome",
    "PathEscapeError",
    "Runtime",
    "ToolContext",
    "ToolDefinition",
    "ToolDefinitionError",
    "ToolError",
    "ToolResult",
    "__version__",
    "error_result",
    "hookimpl",
    "is_within",
    "ok_result",
    "resolve_within",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'meith_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from meith_core.caller import CallerInfo, CallerKind
    from meith_core.cancel import CancelToken
    from meith_core.capabilities import Capability
    from meith_core.context import ToolContext
    from meith_core.errors import ErrorCode, ToolError
    from meith_core.events import EventKind
    from meith_core.home import MeithHome
    from meith_core.paths import PathEscapeError, is_within, resolve_within
    from meith_core.permissions.service import ApprovalAnswer, ApprovalRequest
    from meith_core.plugins.hookspecs import hookimpl
    from meith_core.results import Diagnostic, ToolResult, error_result, ok_result
    from meith_core.runtime.host import Runtime
    from meith_core.tooldef import NO_TIMEOUT, ToolDefinition, ToolDefinitionError, tool
