"""The plugin listing shared by `meith plugins --json` and the `list_plugins` tool."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from meith_core._permissions.approvals import PluginApprovals
from meith_core._permissions.service import HOST_PROVIDERS
from meith_core._plugins.manager import PluginRecord


def describe_plugins(
    records: Iterable[PluginRecord], approvals: PluginApprovals
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for record in records:
        entry = record.summary()
        requested = entry["requestedCapabilities"]
        approval = approvals.get(record.id)
        if record.id in HOST_PROVIDERS:
            entry["approval"] = {"capabilities": requested, "implicit": True, "valid": True}
        elif approval is not None:
            entry["approval"] = {
                "capabilities": [c.value for c in approval.capabilities],
                "approvedAt": approval.approved_at,
                "implicit": False,
                # void when the plugin changed (version or tools) since it was approved
                "valid": approval.fingerprint == record.fingerprint,
            }
        else:
            entry["approval"] = None
        out.append(entry)
    return out
