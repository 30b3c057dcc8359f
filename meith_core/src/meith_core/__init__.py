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
    "tool": "meith_core._tooldef",
    "ToolArgs": "meith_core._tooldef",
    "ToolDefinition": "meith_core._tooldef",
    "ToolDefinitionError": "meith_core._tooldef",
    "NO_TIMEOUT": "meith_core._tooldef",
    "Capability": "meith_core._capabilities",
    "hookimpl": "meith_core._plugins.hookspecs",
    "PluginHost": "meith_core._plugins.pluginhost",
    "PLUGIN_API": "meith_core._plugins.api",
    # running
    "ToolContext": "meith_core._context",
    "CallerInfo": "meith_core._caller",
    "CallerKind": "meith_core._caller",
    "CancelToken": "meith_core._cancel",
    # results and errors
    "ToolResult": "meith_core._results",
    "Diagnostic": "meith_core._results",
    "ok_result": "meith_core._results",
    "error_result": "meith_core._results",
    "ToolError": "meith_core._errors",
    "ErrorCode": "meith_core._errors",
    "EventKind": "meith_core._events",
    # paths: the one containment check
    "resolve_within": "meith_core._paths",
    "is_within": "meith_core._paths",
    "PathEscapeError": "meith_core._paths",
    # private files under MEITH_HOME: 0700 directories, 0600 files written atomically
    "new_id": "meith_core._ids",
    "ensure_private_dir": "meith_core._home",
    "write_json_atomic": "meith_core._home",
    "read_json": "meith_core._home",
    "PRIVATE_FILE_MODE": "meith_core._home",
    "write_file_beneath": "meith_core._paths",
    # settings
    "SettingsSection": "meith_core._settings",
    # kernel confinement of started processes (Landlock)
    "Confinement": "meith_core._confinement",
    "landlock_status": "meith_core._confinement",
    # hosting in-process
    "Runtime": "meith_core._runtime.host",
    "MeithHome": "meith_core._home",
    "ApprovalAnswer": "meith_core._permissions.asking",
    "ApprovalRequest": "meith_core._permissions.asking",
}

__all__ = [
    "NO_TIMEOUT",
    "PLUGIN_API",
    "PRIVATE_FILE_MODE",
    "ApprovalAnswer",
    "ApprovalRequest",
    "CallerInfo",
    "CallerKind",
    "CancelToken",
    "Capability",
    "Confinement",
    "Diagnostic",
    "ErrorCode",
    "EventKind",
    "MeithHome",
    "PathEscapeError",
    "PluginHost",
    "Runtime",
    "SettingsSection",
    "ToolArgs",
    "ToolContext",
    "ToolDefinition",
    "ToolDefinitionError",
    "ToolError",
    "ToolResult",
    "__version__",
    "ensure_private_dir",
    "error_result",
    "hookimpl",
    "is_within",
    "landlock_status",
    "new_id",
    "ok_result",
    "read_json",
    "resolve_within",
    "tool",
    "write_file_beneath",
    "write_json_atomic",
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
    from meith_core._caller import CallerInfo, CallerKind
    from meith_core._cancel import CancelToken
    from meith_core._capabilities import Capability
    from meith_core._confinement import Confinement, landlock_status
    from meith_core._context import ToolContext
    from meith_core._errors import ErrorCode, ToolError
    from meith_core._events import EventKind
    from meith_core._home import (
        PRIVATE_FILE_MODE,
        MeithHome,
        ensure_private_dir,
        read_json,
        write_json_atomic,
    )
    from meith_core._ids import new_id
    from meith_core._paths import PathEscapeError, is_within, resolve_within, write_file_beneath
    from meith_core._permissions.asking import ApprovalAnswer, ApprovalRequest
    from meith_core._plugins.api import PLUGIN_API
    from meith_core._plugins.hookspecs import hookimpl
    from meith_core._plugins.pluginhost import PluginHost
    from meith_core._results import Diagnostic, ToolResult, error_result, ok_result
    from meith_core._runtime.host import Runtime
    from meith_core._settings import SettingsSection
    from meith_core._tooldef import (
        NO_TIMEOUT,
        ToolArgs,
        ToolDefinition,
        ToolDefinitionError,
        tool,
    )
