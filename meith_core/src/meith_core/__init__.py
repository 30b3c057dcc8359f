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
    "write_file_beneath": "meith_core.base.beneath",
    # paths beneath a directory, opened and used through descriptors
    "Beneath": "meith_core.base.beneath",
    "LinkOnTheWay": "meith_core.base.beneath",
    "real_path": "meith_core.base.beneath",
    "replace_in": "meith_core.base.beneath",
    "set_mode_in": "meith_core.base.beneath",
    # settings
    "SettingsSection": "meith_core.host.settings",
    # confinement of started processes (Landlock, namespaces): the one spawn API
    "Confinement": "meith_core.confine.plan",
    "landlock_status": "meith_core.confine.status",
    "ConfinedSpawn": "meith_core.confine.spawn",
    "spawn_confined": "meith_core.confine.spawn",
    "add_meith_cli": "meith_core.confine.spawn",
    "is_session_callback": "meith_core.confine.spawn",
    "write_hook_launchers": "meith_core.confine.hooks",
    "CALLBACK_ENV": "meith_core.base.callback_env",
    "TOKEN_ENV": "meith_core.base.callback_env",
    # what no agent's tool and no confined process writes; what a git directory is
    "write_refusal": "meith_core.confine.protected",
    "gitdir_of": "meith_core.confine.gitdirs",
    "git_metadata_containing": "meith_core.confine.gitdirs",
    # git metadata a confined process plants: found, neutralised, reported
    "GitMetadataWatch": "meith_core.confine.planted_watch",
    "PlantedGit": "meith_core.confine.planted_report",
    "PlantedGitReport": "meith_core.confine.planted_report",
    "GIT_RISKY_KEYS": "meith_core.confine.planted_keys",
    "GitKey": "meith_core.confine.planted_keys",
    "git_key_risk": "meith_core.confine.planted_keys",
    # the secret paths: what confined processes cannot read and read tools refuse to agents
    "DEFAULT_SECRET_PATHS": "meith_core.confine.secret_paths",
    "secret_paths": "meith_core.confine.secret_paths",
    "is_secret_path": "meith_core.confine.secret_paths",
    "secret_patterns": "meith_core.confine.secret_paths",
    "matches_secret_pattern": "meith_core.confine.secret_paths",
    "DEFAULT_SECRET_PATTERNS": "meith_core.confine.secret_paths",
    # hosting in-process
    "Runtime": "meith_core.host.runtime",
    "MeithHome": "meith_core.base.home",
    "ApprovalAnswer": "meith_core.protocol.call_approval",
    "ApprovalRequest": "meith_core.protocol.call_approval",
    "ApprovalView": "meith_core.protocol.call_approval",
}

__all__ = [
    "CALLBACK_ENV",
    "DEFAULT_SECRET_PATHS",
    "DEFAULT_SECRET_PATTERNS",
    "GIT_RISKY_KEYS",
    "NO_TIMEOUT",
    "PLUGIN_API",
    "PRIVATE_FILE_MODE",
    "TOKEN_ENV",
    "ActsOn",
    "ApprovalAnswer",
    "ApprovalRequest",
    "ApprovalView",
    "Beneath",
    "CallerInfo",
    "CallerKind",
    "CallerPattern",
    "CancelToken",
    "Capability",
    "ConfinedSpawn",
    "Confinement",
    "Diagnostic",
    "ErrorCode",
    "EventKind",
    "GitKey",
    "GitMetadataWatch",
    "LinkOnTheWay",
    "MeithHome",
    "PathEscapeError",
    "PatternError",
    "PlantedGit",
    "PlantedGitReport",
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
    "add_meith_cli",
    "compile_pattern",
    "ensure_private_dir",
    "error_result",
    "git_key_risk",
    "git_metadata_containing",
    "gitdir_of",
    "hookimpl",
    "is_secret_path",
    "is_session_callback",
    "is_within",
    "landlock_status",
    "matches_secret_pattern",
    "new_id",
    "ok_result",
    "ownership_error",
    "read_json",
    "real_path",
    "replace_in",
    "resolve_within",
    "resolved_within",
    "secret_paths",
    "secret_patterns",
    "set_mode_in",
    "spawn_confined",
    "tool",
    "write_file_beneath",
    "write_hook_launchers",
    "write_json_atomic",
    "write_refusal",
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
    from meith_core.base.beneath import (
        Beneath,
        LinkOnTheWay,
        real_path,
        replace_in,
        set_mode_in,
        write_file_beneath,
    )
    from meith_core.base.callback_env import CALLBACK_ENV, TOKEN_ENV
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
    from meith_core.confine.gitdirs import git_metadata_containing, gitdir_of
    from meith_core.confine.hooks import write_hook_launchers
    from meith_core.confine.plan import Confinement
    from meith_core.confine.planted_keys import GIT_RISKY_KEYS, GitKey, git_key_risk
    from meith_core.confine.planted_report import PlantedGit, PlantedGitReport
    from meith_core.confine.planted_watch import GitMetadataWatch
    from meith_core.confine.protected import write_refusal
    from meith_core.confine.secret_paths import (
        DEFAULT_SECRET_PATHS,
        DEFAULT_SECRET_PATTERNS,
        is_secret_path,
        matches_secret_pattern,
        secret_paths,
        secret_patterns,
    )
    from meith_core.confine.spawn import (
        ConfinedSpawn,
        add_meith_cli,
        is_session_callback,
        spawn_confined,
    )
    from meith_core.confine.status import landlock_status
    from meith_core.host.plugins.api import PLUGIN_API
    from meith_core.host.plugins.hookspecs import hookimpl
    from meith_core.host.plugins.pluginhost import PluginHost
    from meith_core.host.runtime import Runtime
    from meith_core.host.settings import SettingsSection
    from meith_core.policy.request import ActsOn
    from meith_core.protocol.call_approval import ApprovalAnswer, ApprovalRequest, ApprovalView
    from meith_core.protocol.caller import CallerInfo, CallerKind
    from meith_core.protocol.capabilities import Capability
    from meith_core.protocol.errors import ErrorCode, ToolError
    from meith_core.protocol.events import EventKind
    from meith_core.protocol.results import Diagnostic, ToolResult, error_result, ok_result
