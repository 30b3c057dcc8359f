"""The segment files and retention: segments roll over in one chain, retention by size and by
age says what it deleted, a missing segment is reported, the retention settings."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from meith_core import MeithHome, Runtime
from meith_core.audit import segments
from meith_core.audit.log import AuditLog
from meith_core.audit.segments import Limits
from meith_core.audit.verify import verify
from meith_core.host.settings import SettingsError, SettingsStore
from tests.core.audit.support import SMALL, entry, seqs

# -- segments and retention -----------------------------------------------------------------------


def test_segments_roll_over_and_keep_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, limits=Limits(max_bytes=100 * 1024 * 1024))
    log._segment_bytes = 0  # set at the first write; small segments for the test
    for i in range(300):
        log.write(entry(i, pad=1000))
        log._segment_bytes = segments.MIN_SEGMENT_BYTES
    log.close()
    sealed = segments.sealed_segments(path)
    assert [s.number for s in sealed] == list(range(1, len(sealed) + 1))
    assert len(sealed) >= 3
    assert all(s.path.name == f"audit.{s.number:06d}.jsonl" for s in sealed)
    assert {stat.S_IMODE(s.path.stat().st_mode) for s in sealed} == {0o400}  # sealed: read-only
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert seqs(AuditLog(path)) == list(range(300))  # nothing pruned under a large budget
    reader = AuditLog(path)
    assert [r["seq"] for r in reader.tail(5)] == list(range(295, 300))
    # A sparse filter reaches back into older segments.
    assert [r["seq"] for r in reader.tail(4, lambda r: r["seq"] % 90 == 0)] == [0, 90, 180, 270]
    report = verify(path)
    assert report.ok, report.problems
    assert report.files[-1] == "audit.jsonl"
    assert report.records == 300


def test_retention_by_size_deletes_the_oldest_segments_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, limits=SMALL)
    for i in range(1000):  # about 1 MB against a 256 KiB budget
        assert log.write(entry(i, pad=1000))
    log.close()
    total = sum(p.stat().st_size for p in segments.all_files(path))
    assert total <= SMALL.max_bytes + SMALL.segment_bytes
    kept = seqs(AuditLog(path))
    assert kept == list(range(kept[0], 1000))  # the newest, contiguous
    assert kept[0] > 0
    retention = [r for r in AuditLog(path).read() if r.get("kind") == "retention"]
    assert retention
    assert retention[-1]["pruned"]
    report = verify(path)
    assert report.ok, report.problems
    assert any("deleted by retention" in note for note in report.notes)


def test_retention_by_age(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, limits=Limits(max_bytes=10 * 1024 * 1024, retention_s=30 * 86_400))
    for i in range(5):
        log.write(entry(i))
    log.close()
    old = segments.rotate(path)  # as the writer would when the segment is full
    long_ago = time.time() - 31 * 86_400
    os.utime(old, (long_ago, long_ago))
    log = AuditLog(path, limits=Limits(max_bytes=10 * 1024 * 1024, retention_s=30 * 86_400))
    log.write(entry(5))  # a runtime starting applies retention
    log.close()
    assert not old.exists()
    records = list(AuditLog(path).read())
    assert [r.get("kind") for r in records] == ["retention", None]
    assert records[0]["pruned"] == [old.name]
    assert verify(path).ok


def test_a_missing_segment_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, limits=Limits(max_bytes=100 * 1024 * 1024))
    for i in range(200):
        log.write(entry(i, pad=1000))
        log._segment_bytes = segments.MIN_SEGMENT_BYTES
    log.close()
    sealed = segments.sealed_segments(path)
    sealed[1].path.unlink()  # from the middle
    report = verify(path)
    assert report.problems[0]["file"] == sealed[1].path.name
    assert report.problems[0]["problem"] == "missing segment"
    sealed[0].path.unlink()  # and the oldest, which no retention record accounts for
    report = verify(path)
    assert report.problems[0]["file"] == sealed[1].path.name
    assert "no retention record" in report.problems[0]["problem"]


def test_retention_settings_are_validated_and_read(tmp_path: Path) -> None:
    store = SettingsStore(tmp_path / "settings.json")
    with pytest.raises(SettingsError, match="retentionDays"):
        store.merge({"audit": {"retentionDays": 0}})
    with pytest.raises(SettingsError, match="maxBytes"):
        store.merge({"audit": {"maxBytes": 10}})
    store.merge({"audit": {"retentionDays": 7, "maxBytes": 50_000_000}})
    limits = Limits.from_settings(store.snapshot().get("audit"))
    assert (limits.max_bytes, limits.retention_s) == (50_000_000, 7 * 86_400)
    assert Limits.from_settings(None) == Limits()
    assert (Limits().max_bytes, Limits().retention_s) == (200 * 1024 * 1024, 30 * 86_400)
    assert Limits.from_settings({"retentionDays": "bogus"}) == Limits()


# -- through a runtime ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_runtime_applies_the_retention_settings(meith_home: MeithHome) -> None:
    meith_home.settings_path.write_text(json.dumps({"audit": {"maxBytes": 1024 * 1024}}))
    async with Runtime(meith_home, load_plugins=False) as rt:
        # Sessions of 100 calls each: under the rate beyond which successful calls of one
        # session are only counted.
        sessions = [rt.open_session("cli") for _ in range(25)]
        for i in range(2500):  # about 1.5 MB of records against a 1 MiB budget
            caller = sessions[i // 100]
            assert (await rt.call("app_health", caller=caller, request_id=f"req_{i}")).ok
    files = segments.all_files(meith_home.audit_path)
    assert sum(p.stat().st_size for p in files if p.exists()) <= 1024 * 1024 + 64 * 1024
    records = list(AuditLog(meith_home.audit_path).read())
    assert records[-1]["requestId"] == "req_2499"
    assert any(r.get("kind") == "retention" for r in records)
    assert verify(meith_home.audit_path).ok
