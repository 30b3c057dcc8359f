"""Where the runtime tells what confinement found planted: the audit trail and `app_health`.

A plugin that runs a confined process scans it with `GitMetadataWatch` (`confine.planted_watch`)
and hands each non-empty report to `PluginHost.report_planted_git` (and, where there is a
result, puts `report.diagnostics()` in it). Each report becomes one audit record of its own
kind, `planted-git` (redacted like every record: a planted credential helper may quote a
secret), and the newest ones are shown by `app_health` in the `planted-git` check.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any, Final

import structlog

from meith_core.audit.log import AuditLog, now_ms
from meith_core.audit.redact import redact
from meith_core.base.ids import new_id
from meith_core.confine.planted_report import PlantedGitReport

_log = structlog.get_logger("meith.confinement")

#: Reports `app_health` keeps to show.
RECENT: Final = 20


class PlantedFindings:
    """The planted-git reports of one runtime."""

    def __init__(self, audit: AuditLog) -> None:
        self._audit = audit
        self._recent: deque[dict[str, Any]] = deque(maxlen=RECENT)
        self._lock = threading.Lock()
        self.total = 0
        self.neutralised = 0
        self.incomplete = 0

    def record(self, plugin_id: str, report: PlantedGitReport, subject: Mapping[str, Any]) -> None:
        """Audit one report and keep it for `app_health` (a report with nothing in it is
        dropped)."""
        if not report:
            return
        what = dict(subject)
        summary = {
            "subject": redact(what),
            "findings": [redact(f.to_dict()) for f in report.findings],
            "complete": report.complete,
            **({"note": report.note} if report.note else {}),
        }
        changed = report.neutralised
        reason = (
            f"neutralised planted git metadata in {len(changed)} place(s)"
            if changed
            else "git metadata appeared or changed; nothing in it runs programs"
        )
        if not report.complete:
            reason += "; the scan was incomplete"
        record = {
            "id": new_id("audit"),
            "ts": now_ms(),
            "kind": "planted-git",
            "plugin": plugin_id,
            "caller": what.get("caller"),
            "sessionId": what.get("sessionId"),
            "toolName": what.get("tool"),
            "outcome": "neutralised" if changed else "found",
            "reason": reason,
            **summary,
            "pid": os.getpid(),
        }
        with self._lock:
            self.total += len(report.findings)
            self.neutralised += len(changed)
            self.incomplete += 0 if report.complete else 1
            self._recent.append({"ts": record["ts"], "reason": reason, **summary})
        if not self._audit.write(record):
            _log.error("could not audit planted git metadata", reason=reason)
        for finding in report.findings:
            _log.warning("planted git metadata", message=finding.message(), **redact(what))

    def check(self) -> dict[str, Any]:
        """The `app_health` check: `warn` once anything was neutralised or a scan was
        incomplete (advice: the overall status stays ok)."""
        with self._lock:
            recent = list(self._recent)
            status = "warn" if self.neutralised or self.incomplete else "ok"
            return {
                "name": "planted-git",
                "status": status,
                "details": {
                    "found": self.total,
                    "neutralised": self.neutralised,
                    "incompleteScans": self.incomplete,
                    "recent": recent,
                },
            }
