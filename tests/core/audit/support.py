"""What the audit tests share: records to write, the lines of a trail, `meith audit verify`."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from meith_core.audit import segments
from meith_core.audit.log import AuditLog
from meith_core.audit.segments import Limits
from tests.core.support import meith_cli, now_ms

SMALL = Limits(max_bytes=segments.MIN_SEGMENT_BYTES * 4)  # 64 KiB segments, 256 KiB in all


def flood_entry(i: int, pad: int = 1000) -> dict[str, Any]:
    """A record no coalescing window takes (no decision): only retention limits it."""
    return {"id": f"audit_f{i:011x}", "ts": now_ms(), "seq": i, "outcome": "ok", "pad": "x" * pad}


def privileged(i: int, ts: int | None = None) -> dict[str, Any]:
    return {
        "id": f"audit_p{i:011x}",
        "ts": now_ms() if ts is None else ts,
        "requestId": f"req_p{i}",
        "toolName": "start_dev_server",
        "capabilities": ["starts-process", "accesses-network"],
        "decision": "allow",
        "outcome": "ok",
        "priv": i,
    }


def denied(i: int) -> dict[str, Any]:
    return {
        "id": f"audit_d{i:011x}",
        "ts": now_ms(),
        "toolName": "set_app_settings",
        "capabilities": ["writes-files"],
        "decision": "deny",
        "outcome": "PERMISSION_DENIED",
        "denied": i,
    }


def cli_verify(home: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return meith_cli(home, "audit", "verify", *flags)


def fill_with_evidence(path: Path) -> AuditLog:
    """Privileged records alone, far more than half the budget: some must go before their
    age."""
    log = AuditLog(path, limits=SMALL)
    for i in range(1200):
        record = privileged(i)
        record["pad"] = "y" * 400
        assert log.write(record)
    log.close()
    return log


def entry(i: int, pad: int = 0) -> dict[str, Any]:
    return {"id": f"audit_{i:012x}", "seq": i, "outcome": "ok", "pad": "x" * pad}


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def seqs(log: AuditLog) -> list[int]:
    return [r["seq"] for r in log.read() if "seq" in r]
