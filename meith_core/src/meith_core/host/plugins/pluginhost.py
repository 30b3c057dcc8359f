"""`PluginHost`: what a lifecycle hook sees of the runtime that loaded the plugin.

Deliberately small and frozen: a plugin gets the places it may use and a way to call tools
as itself, never the registry, the permission service or the server behind them.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from meith_core.base.home import MeithHome
    from meith_core.confine.planted_report import PlantedGitReport
    from meith_core.protocol.results import ToolResult

#: `(plugin_id, name, arguments, timeout_ms) -> ToolResult`, bound by the runtime.
CallAsPlugin = Callable[[str, str, dict[str, Any], int | None], Awaitable["ToolResult"]]
#: `(plugin_id, report, subject) -> None`, bound by the runtime.
ReportPlanted = Callable[[str, "PlantedGitReport", "Mapping[str, Any]"], None]


@dataclass(frozen=True, slots=True)
class PluginHost:
    """Passed to `meith_startup`, `meith_shutdown` and `meith_session_ended`.

    `home` is the runtime's `$MEITH_HOME`; `socket_path` is None for an in-process runtime;
    `cwd` is the runtime's working directory. `shutdown_deadline` (a `time.monotonic()`
    value) is set only for `meith_shutdown`: every plugin's shutdown hook runs at the same
    time and is cancelled at that moment, so finish before it (see `remaining_s()`).
    """

    plugin_id: str
    home: MeithHome
    socket_path: str | None
    cwd: str
    shutdown_deadline: float | None = None
    _call: CallAsPlugin | None = field(default=None, repr=False, compare=False)
    _report: ReportPlanted | None = field(default=None, repr=False, compare=False)

    def remaining_s(self) -> float | None:
        """Seconds left before the shutdown deadline (never negative), or None without one."""
        if self.shutdown_deadline is None:
            return None
        return max(0.0, self.shutdown_deadline - time.monotonic())

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *, timeout_ms: int | None = None
    ) -> ToolResult:
        """Call a tool as caller `plugin` with this plugin's id, through the whole pipeline
        (validation, both permission gates, audit)."""
        if self._call is None:
            raise RuntimeError("this PluginHost is not bound to a runtime")
        return await self._call(self.plugin_id, name, dict(arguments or {}), timeout_ms)

    def report_planted_git(self, report: PlantedGitReport, subject: Mapping[str, Any]) -> None:
        """Tell the runtime what a `GitMetadataWatch` scan of a confined process found and
        neutralised: one audit record of kind `planted-git`, and the `app_health` check of
        that name. `subject` says which process (`processId`, `kind`, `cwd`, `confinedTo`,
        `caller`, `sessionId`, `tool`); a report with nothing in it is dropped."""
        if self._report is not None:
            self._report(self.plugin_id, report, subject)
