"""The evidence of privileged calls outlives floods (issue 20): size-based retention carries
intent, privileged and denied records younger than the retention period forward; beyond their
share they are dropped, and the trail says so."""

from __future__ import annotations

from pathlib import Path

from meith_core.audit import segments
from meith_core.audit.log import AuditLog
from meith_core.audit.segments import Limits
from meith_core.audit.verify import verify
from meith_core.protocol.capabilities import PRIVILEGED
from tests.core.audit.support import SMALL, denied, fill_with_evidence, flood_entry, privileged
from tests.core.support import now_ms


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
