"""The evidence of privileged calls outlives floods (issue 20): size-based retention carries
intent, privileged and denied records younger than the retention period forward; beyond their
share they are dropped and `meith audit verify --strict` says so; successful unprivileged calls
beyond a rate are counted into summaries."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from meith_core import Runtime
from meith_core.audit import segments
from meith_core.audit.coalesce import Coalescer
from meith_core.audit.log import AuditLog
from meith_core.audit.segments import Limits
from meith_core.audit.verify import verify
from meith_core.protocol.capabilities import PRIVILEGED
from tests.harness import MEITH, base_env

SMALL = Limits(max_bytes=segments.MIN_SEGMENT_BYTES * 4)  # 64 KiB segments, 256 KiB in all


def now_ms() -> int:
    return time.time_ns() // 1_000_000


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
    return subprocess.run(
        [MEITH, "audit", "verify", *flags],
        env=base_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_privileged_names_match_the_capabilities() -> None:
    assert {c.value for c in PRIVILEGED} == segments.PRIVILEGED_NAMES


def test_retention_by_size_carries_young_privileged_and_denied_records_forward(
    tmp_path: Path,
) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, limits=SMALL)
    assert log.write(privileged(1))
    assert log.write(denied(1))
    for i in range(2000):  # about 2 MB against a 256 KiB budget
        assert log.write(flood_entry(i))
    log.close()
    records = list(AuditLog(path).read())
    assert [r["priv"] for r in records if "priv" in r] == [1]
    assert [r["denied"] for r in records if "denied" in r] == [1]
    assert min(r["seq"] for r in records if "seq" in r) > 0  # the flood itself was pruned
    report = verify(path)
    assert report.ok, report.problems
    assert report.carried >= 2
    assert report.evidence_dropped == 0


def test_records_older_than_the_retention_period_are_not_carried(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    limits = Limits(max_bytes=SMALL.max_bytes, retention_s=86_400)
    log = AuditLog(path, limits=limits)
    assert log.write(privileged(1, ts=now_ms() - 2 * 86_400_000))
    for i in range(2000):
        assert log.write(flood_entry(i))
    log.close()
    assert not [r for r in AuditLog(path).read() if "priv" in r]
    assert verify(path).evidence_dropped == 0


def test_a_carried_record_that_was_edited_breaks_verification(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, limits=SMALL)
    assert log.write(privileged(1))
    for i in range(2000):
        assert log.write(flood_entry(i))
    log.close()
    for file in segments.all_files(path):
        data = file.read_bytes()
        if b'"kind":"carried"' in data:
            file.chmod(0o600)
            file.write_bytes(data.replace(b'\\"priv\\":1', b'\\"priv\\":2', 1))
            break
    else:
        raise AssertionError("nothing was carried")
    report = verify(path)
    assert not report.ok
    assert any("carried record" in p["problem"] for p in report.problems)


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


def test_evidence_beyond_its_share_is_dropped_and_said(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = fill_with_evidence(path)
    report = verify(path)
    assert report.ok, report.problems  # the chain is sound...
    assert report.evidence_dropped > 0  # ...but evidence went early, and it is said
    assert log.evidence_dropped == report.evidence_dropped
    kept = [r["priv"] for r in AuditLog(path).read() if "priv" in r]
    assert kept == sorted(kept)
    assert kept[-1] == 1199  # the newest evidence is what stays
    assert sum(p.stat().st_size for p in segments.all_files(path)) <= 2 * SMALL.max_bytes


@pytest.mark.slow
def test_meith_audit_verify_strict_fails_when_evidence_was_dropped(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, limits=SMALL)
    assert log.write(privileged(1))
    log.close()
    assert cli_verify(tmp_path, "--strict").returncode == 0
    path.unlink()
    fill_with_evidence(path)
    report = verify(path)
    plain = cli_verify(tmp_path)
    assert plain.returncode == 0, plain.stdout
    assert "Evidence dropped" in plain.stdout
    strict = cli_verify(tmp_path, "--strict")
    assert strict.returncode == 7, strict.stdout
    as_json = json.loads(cli_verify(tmp_path, "--json").stdout)
    assert as_json["evidenceDropped"] == report.evidence_dropped


def test_a_flood_of_successful_unprivileged_calls_is_summarised() -> None:
    c = Coalescer(window_s=10.0, ok_burst=5)

    def ok_call(i: int, tool: str = "get_active_tab", caps: tuple[str, ...] = ("read-only",)):
        return {
            "requestId": f"r{i}",
            "ts": 1000 + i,
            "caller": "agent",
            "sessionId": "s1",
            "toolName": tool,
            "plugin": "browser",
            "capabilities": list(caps),
            "decision": "allow",
            "outcome": "ok",
        }

    absorbed = [c.absorb(ok_call(i), now=1.0) for i in range(50)]
    assert absorbed.count(False) == 5  # written in full
    # Another successful tool has a window of its own; a privileged one is never coalesced.
    assert not c.absorb(ok_call(99, "git_status"), now=1.0)
    assert not any(
        c.absorb(ok_call(100 + i, "start_dev_server", ("starts-process",)), now=1.0)
        for i in range(50)
    )
    (summary,) = c.due(now=20.0)
    assert summary["kind"] == "coalesced"
    assert summary["count"] == 45
    assert summary["toolName"] == "get_active_tab"
    assert "succeeded" in summary["reason"]


@pytest.mark.anyio
async def test_app_health_warns_when_the_trail_is_near_its_limit(runtime: Runtime) -> None:
    runtime.settings.merge({"audit": {"maxBytes": segments.MIN_MAX_BYTES}})
    health = await runtime.call("app_health")
    assert not [c for c in health.content["checks"] if c["name"] == "audit.capacity"]
    for i in range(1000):  # about 1 MB: near (and at) the 1 MiB budget
        assert runtime.audit.write(flood_entry(i))
    health = await runtime.call("app_health")
    (check,) = [c for c in health.content["checks"] if c["name"] == "audit.capacity"]
    assert check["status"] == "warn"
    assert "audit.maxBytes" in check["message"]
    assert health.content["status"] == "ok"  # advice, not a failure
