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
    "tool": "meith_core.call.tooldef",
    "ToolArgs": "meith_core.call.tooldef",
    "ToolDefinition": "meith_core.call.tooldef",
    "ToolDefinitionError": "meith_core.call.tooldef",
    "NO_TIMEOUT": "meith_core.call.tooldef",
    "ActsOn": "meith_core.policy.request",
    "Capability": "meith_core.protocol.capabilities",
    "hookimpl": "meith_core.host.plugins.hookspecs",
    "PluginHost": "meith_core.host.plugins.pluginhost",
    "PLUGIN_API": "meith_core.host.plugins.api",
    # running
    "ToolContext": "meith_core.call.context",
    "CallerInfo": "meith_core.protocol.caller",
    "CallerKind": "meith_core.protocol.caller",
    "CancelToken": "meith_core.base.cancel",
    # results and errors
    "ToolResult": "meith_core.protocol.results",
    "Diagnostic": "meith_core.protocol.results",
    "ok_result": "meith_core.protocol.results",
    "error_result": "meith_core.protocol.results",
    "ToolError": "meith_core.protocol.errors",
    "ownership_error": "meith_core.policy.hints",
    "ErrorCode": "meith_core.protocol.errors",
    "EventKind": "meith_core.protocol.events",
    # paths: the one containment check
    "resolve_within": "meith_core.base.paths",
    "is_within": "meith_core.base.paths",
    "resolved_within": "meith_core.base.paths",
    "PathEscapeError": "meith_core.base.paths",
    # caller-supplied regular expressions: linear time (RE2), memory-bounded
    "compile_pattern": "meith_core.base.patterns",
    "CallerPattern": "meith_core.base.patterns",
    "PatternError": "meith_core.base.patterns",
    # private files under MEITH_HOME: 0700 directories, 0600 files written atomically
    "new_id": "meith_core.base.ids",
    "ensure_private_dir": "meith_core.base.home",
    "write_json_atomic": "meith_core.base.home",
    "read_json": "meith_core.base.home",
    "PRIVATE_FILE_MODE": "meith_core.base.home",
    "write_file_beneath": "meith_core.base.paths",
    # settings
    "SettingsSection": "meith_core.host.settings",
    # kernel confinement of started processes (Landlock)
    "Confinement": "meith_core.policy.confinement",
    "landlock_status": "meith_core.policy.confinement",
    # git metadata a confined process plants: found, neutralised, reported
    "GitMetadataWatch": "meith_core.policy.planted_git",
    "PlantedGit": "meith_core.policy.planted_git",
    "PlantedGitReport": "meith_core.policy.planted_git",
    "GIT_PROGRAM_KEYS": "meith_core.policy.planted_git",
    "is_program_valued": "meith_core.policy.planted_git",
    "NetworkAccess": "meith_core.policy.confinement",
    "discard_env_file": "meith_core.policy.confinement",
    "confine_wrapper_environment": "meith_core.policy.confinement",
    # the network wall: the gate a confined process's connections go through, ports back
    "NetworkGate": "meith_core.policy.netgate",
    "PortForwarder": "meith_core.policy.netgate",
    # the secret paths: what confined processes cannot read and read tools refuse to agents
    "DEFAULT_SECRET_PATHS": "meith_core.policy.secret_paths",
    "secret_paths": "meith_core.policy.secret_paths",
    "is_secret_path": "meith_core.policy.secret_paths",
    # hosting in-process
    "Runtime": "meith_core.host.runtime",
    "MeithHome": "meith_core.base.home",
    "ApprovalAnswer": "meith_core.protocol.call_approval",
    "ApprovalRequest": "meith_core.protocol.call_approval",
}

__all__ = [
    "DEFAULT_SECRET_PATHS",
    "GIT_PROGRAM_KEYS",
    "NO_TIMEOUT",
    "PLUGIN_API",
    "PRIVATE_FILE_MODE",
    "ActsOn",
    "ApprovalAnswer",
    "ApprovalRequest",
    "CallerInfo",
    "CallerKind",
    "CallerPattern",
    "CancelToken",
    "Capability",
    "Confinement",
    "Diagnostic",
    "ErrorCode",
    "EventKind",
    "GitMetadataWatch",
    "MeithHome",
    "NetworkAccess",
    "NetworkGate",
    "PathEscapeError",
    "PatternError",
    "PlantedGit",
    "PlantedGitReport",
    "PluginHost",
    "PortForwarder",
    "Runtime",
    "SettingsSection",
    "ToolArgs",
    "ToolContext",
    "ToolDefinition",
    "ToolDefinitionError",
    "ToolError",
    "ToolResult",
    "__version__",
    "compile_pattern",
    "confine_wrapper_environment",
    "discard_env_file",
    "ensure_private_dir",
    "error_result",
    "hookimpl",
    "is_program_valued",
    "is_secret_path",
    "is_within",
    "landlock_status",
    "new_id",
    "ok_result",
    "ownership_error",
    "read_json",
    "resolve_within",
    "resolved_within",
    "secret_paths",
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
    from meith_core.base.cancel import CancelToken
    from meith_core.base.home import (
        PRIVATE_FILE_MODE,
        MeithHome,
        ensure_private_dir,
        read_json,
        write_json_atomic,
    )
    from meith_core.base.ids import new_id
    from meith_core.base.paths import (
        PathEscapeError,
        is_within,
        resolve_within,
        resolved_within,
        write_file_beneath,
    )
    from meith_core.base.patterns import CallerPattern, PatternError, compile_pattern
    from meith_core.call.context import ToolContext
    from meith_core.call.tooldef import (
        NO_TIMEOUT,
        ToolArgs,
        ToolDefinition,
        ToolDefinitionError,
        tool,
    )
    from meith_core.host.plugins.api import PLUGIN_API
    from meith_core.host.plugins.hookspecs import hookimpl
    from meith_core.host.plugins.pluginhost import PluginHost
    from meith_core.host.runtime import Runtime
    from meith_core.host.settings import SettingsSection
    from meith_core.policy.confinement import (
        Confinement,
        NetworkAccess,
        confine_wrapper_environment,
        discard_env_file,
        landlock_status,
    )
    from meith_core.policy.netgate import NetworkGate, PortForwarder
    from meith_core.policy.planted_git import (
        GIT_PROGRAM_KEYS,
        GitMetadataWatch,
        PlantedGit,
        PlantedGitReport,
        is_program_valued,
    )
    from meith_core.policy.request import ActsOn
    from meith_core.policy.secret_paths import DEFAULT_SECRET_PATHS, is_secret_path, secret_paths
    from meith_core.protocol.call_approval import ApprovalAnswer, ApprovalRequest
    from meith_core.protocol.caller import CallerInfo, CallerKind
    from meith_core.protocol.capabilities import Capability
    from meith_core.protocol.errors import ErrorCode, ToolError
    from meith_core.protocol.events import EventKind
    from meith_core.protocol.results import Diagnostic, ToolResult, error_result, ok_result
