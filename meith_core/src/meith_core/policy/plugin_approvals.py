"""Plugin approvals (`$MEITH_HOME/plugins.json`): which capabilities each plugin may use.

An approval is pinned to the plugin's fingerprint (distribution version + tool descriptors).
When the plugin changes, the approval is void until the user approves again.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from meith_core.base.home import file_signature, read_json, write_json_atomic
from meith_core.protocol.capabilities import Capability, parse_capabilities

APPROVALS_FILE_VERSION = 1


def plugin_fingerprint(
    distribution: str | None, version: str | None, descriptors: Iterable[dict[str, Any]]
) -> str:
    """sha256 over what the user consented to: which code (name, version) and which tools."""
    tools = sorted(
        ({k: v for k, v in d.items() if k != "plugin"} for d in descriptors),
        key=lambda d: str(d.get("name")),
    )
    blob = json.dumps(
        {"distribution": distribution, "version": version, "tools": tools},
        sort_keys=True,
        separators=(",", ":"),
    )
    return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Approval:
    plugin_id: str
    capabilities: tuple[Capability, ...]
    fingerprint: str
    approved_at: int
    distribution: str | None = None
    version: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "capabilities": [c.value for c in self.capabilities],
            "fingerprint": self.fingerprint,
            "approvedAt": self.approved_at,
            "distribution": self.distribution,
            "version": self.version,
        }


class PluginApprovals:
    """`plugins.json`, re-read whenever it changes so `meith plugins approve` needs no restart."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._sig: tuple[int, int, int] | None = None
        self._approvals: dict[str, Approval] = {}

    def current(self) -> dict[str, Approval]:
        sig = file_signature(self.path)
        if sig != self._sig:
            self._sig = sig
            self._approvals = self._load()
        return self._approvals

    def get(self, plugin_id: str) -> Approval | None:
        return self.current().get(plugin_id)

    def _load(self) -> dict[str, Approval]:
        data = read_json(self.path)
        if not isinstance(data, dict) or not isinstance(data.get("plugins"), dict):
            return {}
        out: dict[str, Approval] = {}
        for plugin_id, raw in data["plugins"].items():
            try:
                out[str(plugin_id)] = Approval(
                    plugin_id=str(plugin_id),
                    capabilities=parse_capabilities(raw.get("capabilities") or []),
                    fingerprint=str(raw["fingerprint"]),
                    approved_at=int(raw.get("approvedAt") or 0),
                    distribution=raw.get("distribution"),
                    version=raw.get("version"),
                )
            except (AttributeError, KeyError, TypeError, ValueError):
                continue  # an unreadable approval is no approval
        return out

    def approve(
        self,
        plugin_id: str,
        capabilities: Iterable[Capability | str],
        fingerprint: str,
        *,
        distribution: str | None = None,
        version: str | None = None,
    ) -> Approval:
        approval = Approval(
            plugin_id=plugin_id,
            capabilities=parse_capabilities(capabilities),
            fingerprint=fingerprint,
            approved_at=time.time_ns() // 1_000_000,
            distribution=distribution,
            version=version,
        )
        approvals = dict(self.current())
        approvals[plugin_id] = approval
        self._save(approvals)
        return approval

    def revoke(self, plugin_id: str) -> bool:
        approvals = dict(self.current())
        if approvals.pop(plugin_id, None) is None:
            return False
        self._save(approvals)
        return True

    def _save(self, approvals: dict[str, Approval]) -> None:
        write_json_atomic(
            self.path,
            {
                "version": APPROVALS_FILE_VERSION,
                "plugins": {pid: a.to_json() for pid, a in sorted(approvals.items())},
            },
        )
        self._sig = None
