"""Plugin approvals (`$MEITH_HOME/plugins.json`): which capabilities each plugin may use.

An approval is pinned to the plugin's fingerprint (distribution version + tool descriptors).
When the plugin changes, the approval is void until the user approves again. It also keeps the
version and each tool's capabilities it was given for, so what changed since can be said
(`PluginApproval.changes`), not only that something did.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from meith_core.base.home import file_signature, read_json, write_json_atomic
from meith_core.protocol.capabilities import Capability, parse_capabilities

PLUGIN_APPROVALS_FILE_VERSION = 1

#: A plugin's tools as an approval records them: each tool's name and capabilities.
ToolCapabilities = tuple[tuple[str, tuple[str, ...]], ...]


def tool_capabilities(tools: Iterable[Mapping[str, Any]]) -> ToolCapabilities:
    """`[{name, capabilities}, ...]` (the plugin listing's shape) as an approval records it."""
    out = []
    for t in tools:
        caps = t.get("capabilities")
        caps = caps if isinstance(caps, list | tuple) else ()
        out.append((str(t.get("name")), tuple(sorted(str(c) for c in caps))))
    return tuple(sorted(out))


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
class PluginApproval:
    plugin_id: str
    capabilities: tuple[Capability, ...]
    fingerprint: str
    approved_at: int
    distribution: str | None = None
    version: str | None = None
    #: The tools it was given for; None in an approval written before they were recorded.
    tools: ToolCapabilities | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "capabilities": [c.value for c in self.capabilities],
            "fingerprint": self.fingerprint,
            "approvedAt": self.approved_at,
            "distribution": self.distribution,
            "version": self.version,
            **({"tools": {n: list(c) for n, c in self.tools}} if self.tools is not None else {}),
        }

    def changes(
        self, fingerprint: str | None, version: str | None, tools: Iterable[Mapping[str, Any]]
    ) -> list[str]:
        """What changed in the plugin since this approval, in words (empty while it is valid):
        its version, the tools added or removed, the capabilities a tool or the plugin gained
        or lost; or, when only descriptions or schemas changed, that."""
        if fingerprint == self.fingerprint:
            return []
        out: list[str] = []
        if version != self.version:
            out.append(f"version {self.version or '-'} → {version or '-'}")
        if self.tools is None:
            out.append(
                "its tools (names, schemas or capabilities: this approval does not record which)"
            )
            return out
        before, now = dict(self.tools), dict(tool_capabilities(tools))
        tools_changed = [
            *(
                f"tool added: {n} ({', '.join(now[n]) or 'no capabilities'})"
                for n in sorted(now.keys() - before.keys())
            ),
            *(f"tool removed: {n}" for n in sorted(before.keys() - now.keys())),
        ]
        for name in sorted(now.keys() & before.keys()):
            gained, lost = set(now[name]) - set(before[name]), set(before[name]) - set(now[name])
            if gained or lost:
                tools_changed.append(f"tool {name}: capabilities {_delta(gained, lost)}")
        requested_before = {c for caps in before.values() for c in caps}
        requested_now = {c for caps in now.values() for c in caps}
        gained, lost = requested_now - requested_before, requested_before - requested_now
        if gained or lost:
            tools_changed.append(f"requested capabilities {_delta(gained, lost)}")
        if not tools_changed and version == self.version:
            tools_changed.append("tool descriptions or input schemas (same tools and capabilities)")
        out += tools_changed
        return out


def _delta(gained: set[str], lost: set[str]) -> str:
    return ", ".join([*(f"+{c}" for c in sorted(gained)), *(f"-{c}" for c in sorted(lost))])


class PluginApprovals:
    """`plugins.json`, re-read whenever it changes so `meith plugins approve` needs no restart."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._sig: tuple[int, int, int] | None = None
        self._approvals: dict[str, PluginApproval] = {}

    def current(self) -> dict[str, PluginApproval]:
        sig = file_signature(self.path)
        if sig != self._sig:
            self._sig = sig
            self._approvals = self._load()
        return self._approvals

    def get(self, plugin_id: str) -> PluginApproval | None:
        return self.current().get(plugin_id)

    def _load(self) -> dict[str, PluginApproval]:
        data = read_json(self.path)
        if not isinstance(data, dict) or not isinstance(data.get("plugins"), dict):
            return {}
        out: dict[str, PluginApproval] = {}
        for plugin_id, raw in data["plugins"].items():
            try:
                out[str(plugin_id)] = PluginApproval(
                    plugin_id=str(plugin_id),
                    capabilities=parse_capabilities(raw.get("capabilities") or []),
                    fingerprint=str(raw["fingerprint"]),
                    approved_at=int(raw.get("approvedAt") or 0),
                    distribution=raw.get("distribution"),
                    version=raw.get("version"),
                    tools=_tools_of(raw.get("tools")),
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
        tools: Iterable[Mapping[str, Any]] | None = None,
    ) -> PluginApproval:
        approval = PluginApproval(
            plugin_id=plugin_id,
            capabilities=parse_capabilities(capabilities),
            fingerprint=fingerprint,
            approved_at=time.time_ns() // 1_000_000,
            distribution=distribution,
            version=version,
            tools=tool_capabilities(tools) if tools is not None else None,
        )
        approvals = dict(self.current())
        approvals[plugin_id] = approval
        self._save(approvals)
        return approval

    def revoke(self, plugin_id: str) -> PluginApproval | None:
        """The approval withdrawn; None when the plugin had none."""
        approvals = dict(self.current())
        gone = approvals.pop(plugin_id, None)
        if gone is not None:
            self._save(approvals)
        return gone

    def _save(self, approvals: dict[str, PluginApproval]) -> None:
        write_json_atomic(
            self.path,
            {
                "version": PLUGIN_APPROVALS_FILE_VERSION,
                "plugins": {pid: a.to_json() for pid, a in sorted(approvals.items())},
            },
        )
        self._sig = None


def _tools_of(raw: object) -> ToolCapabilities | None:
    if not isinstance(raw, dict):
        return None
    return tool_capabilities({"name": n, "capabilities": c} for n, c in raw.items())
