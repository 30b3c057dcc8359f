"""The audit trail is evidence: hash-chained records across segments, retention by age and size,
repair of a torn tail, one chain for several writers, and `meith audit verify`."""

from __future__ import annotations

import itertools
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from meith_core import ErrorCode, MeithHome, Runtime
from meith_core.audit import segments
from meith_core.audit.chain import check_line, seal
from meith_core.audit.log import AuditLog
from meith_core.audit.segments import Limits
from meith_core.audit.verify import verify
from meith_core.host.settings import SettingsError, SettingsStore
from tests.harness import MEITH, base_env

SMALL = Limits(max_bytes=segments.MIN_SEGMENT_BYTES * 4)  # 64 KiB segments, 256 KiB in all


def entry(i: int, pad: int = 0) -> dict[str, Any]:
    return {"id": f"audit_{i:012x}", "seq": i, "outcome": "ok", "pad": "x" * pad}


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def seqs(log: AuditLog) -> list[int]:
    return [r["seq"] for r in log.read() if "seq" in r]


def cli_verify(home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEITH, "audit", "verify"], env=base_env(home), capture_output=True, text=True, timeout=60
    )


# -- the chain ----------------------------------------------------------------------------------


def test_each_record_links_to_the_one_before(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    for i in range(5):
        assert log.write(entry(i))
    log.close()
    checked = [check_line(line) for line in lines_of(tmp_path / "audit.jsonl")]
    assert all(c.error is None and c.hash for c in checked)
    assert checked[0].prev is None
    for before, after in itertools.pairwise(checked):
        assert after.prev == before.hash
    report = verify(tmp_path / "audit.jsonl")
    assert report.ok, report.problems
    assert report.records == 5
    assert report.head == checked[-1].hash


def test_the_hash_covers_the_bytes_written(tmp_path: Path) -> None:
    line, digest = seal({"a": "é", "n": 1.5}, None)
    assert line.endswith(f',"hash":"{digest}"}}\n'.encode())
    assert check_line(line.rstrip(b"\n")).hash == digest
    edited = line.replace(b"1.5", b"2.5").rstrip(b"\n")
    assert check_line(edited).error == "hash does not match the record (edited)"


def test_the_chain_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    first = AuditLog(path)
    first.write(entry(1))
    first.close()
    second = AuditLog(path)
    second.write(entry(2))
    second.close()
    a, b = (check_line(line) for line in lines_of(path))
    assert b.prev == a.hash
    assert verify(path).ok


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        ("edit", "hash does not match the record (edited)"),
        ("delete", "broken link: prev is not the hash of the record before"),
        ("reorder", "broken link: prev is not the hash of the record before"),
        ("truncate", "truncated record at the end of the file"),
        ("insert_unhashed", "record without a hash after chained records"),
    ],
)
def test_verify_reports_the_first_tampered_record_and_exits_non_zero(
    tmp_path: Path, tamper: str, problem: str
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    path = home / "audit.jsonl"
    log = AuditLog(path)
    for i in range(6):
        log.write(entry(i))
    log.close()
    lines = lines_of(path)
    if tamper == "edit":
        lines[2] = lines[2].replace(b'"seq":2', b'"seq":7')
    elif tamper == "delete":
        del lines[2]
    elif tamper == "reorder":
        lines[2], lines[3] = lines[3], lines[2]
    elif tamper == "insert_unhashed":
        lines.insert(3, b'{"seq":99}')
    data = b"".join(line + b"\n" for line in lines)
    if tamper == "truncate":
        data = data[:-20]
    path.write_bytes(data)

    report = verify(path)
    assert not report.ok
    assert report.problems[0]["problem"] == problem
    assert report.problems[0]["file"] == "audit.jsonl"
    assert report.problems[0]["line"] == {"truncate": 6, "insert_unhashed": 4}.get(tamper, 3)
    done = cli_verify(home)
    assert done.returncode == 6, done.stdout + done.stderr
    assert "BROKEN" in done.stdout
    assert problem in done.stdout


def test_verify_on_a_good_trail_prints_the_head_and_exits_zero(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    log = AuditLog(home / "audit.jsonl")
    log.write(entry(1))
    log.close()
    done = subprocess.run(
        [MEITH, "audit", "verify", "--json"],
        env=base_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"]
    assert report["records"] == 1
    assert len(report["head"]) == 64


# -- a torn tail ------------------------------------------------------------------------------


def test_a_torn_tail_is_recorded_and_the_chain_continues_from_the_last_whole_record(
    tmp_path: Path,
) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    for i in range(3):
        log.write(entry(i))
    log.close()
    whole = check_line(lines_of(path)[-1])
    with open(path, "ab") as fh:  # what a crash in the middle of os.write leaves
        fh.write(b'{"id":"audit_torn","seq":3,"outco')
    assert not verify(path).ok  # a torn tail nobody has seen yet is a problem

    restarted = AuditLog(path)
    assert restarted.write(entry(4))
    restarted.close()
    lines = lines_of(path)
    assert lines[3] == b'{"id":"audit_torn","seq":3,"outco'  # the fragment is kept as evidence
    repair = check_line(lines[4])
    assert repair.record is not None
    assert repair.record["kind"] == "torn-tail"
    assert repair.record["tornBytes"] == len(lines[3])
    assert repair.prev == whole.hash
    assert check_line(lines[5]).prev == repair.hash
    report = verify(path)
    assert report.ok, report.problems
    assert any("cut short by a crash" in note for note in report.notes)
    assert seqs(AuditLog(path)) == [0, 1, 2, 4]


def test_a_torn_record_without_acknowledgement_in_the_middle_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    for i in range(3):
        log.write(entry(i))
    log.close()
    lines = lines_of(path)
    lines.insert(1, b'{"id":"audit_x","se')
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    report = verify(path)
    assert report.problems[0] == {"file": "audit.jsonl", "line": 2, "problem": "truncated record"}


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


# -- several writers --------------------------------------------------------------------------


def test_two_writers_in_one_process_extend_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    a, b = AuditLog(path, limits=SMALL), AuditLog(path, limits=SMALL)
    for i in range(400):
        assert (a if i % 3 else b).write(entry(i, pad=600))
    a.close()
    b.close()
    report = verify(path)
    assert report.ok, report.problems
    assert len(segments.sealed_segments(path)) >= 2


_WRITER = """
import sys
from pathlib import Path
from meith_core.audit.log import AuditLog
from meith_core.audit.segments import Limits
log = AuditLog(Path(sys.argv[1]), limits=Limits(max_bytes=64 * 1024 * 16))
for i in range(int(sys.argv[3])):
    assert log.write({"writer": sys.argv[2], "seq": i, "pad": "y" * 300})
log.close()
"""


@pytest.mark.slow
def test_writers_in_several_processes_extend_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), name, "700"])
        for name in ("a", "b", "c")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    report = verify(path)
    assert report.ok, report.problems
    records = list(AuditLog(path).read())
    for name in ("a", "b", "c"):
        assert [r["seq"] for r in records if r.get("writer") == name] == list(range(700))


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


@pytest.mark.anyio
async def test_a_runtime_starting_on_a_torn_trail_records_it(meith_home: MeithHome) -> None:
    async with Runtime(meith_home, load_plugins=False) as rt:
        await rt.call("app_health", request_id="req_before")
    with open(meith_home.audit_path, "ab") as fh:
        fh.write(b'{"id":"audit_x","requestId":"req_torn","cal')
    async with Runtime(meith_home, load_plugins=False) as rt:
        await rt.call("app_health", request_id="req_after")
    records = list(AuditLog(meith_home.audit_path).read())
    assert [r.get("kind") or r["requestId"] for r in records] == [
        "req_before",
        "torn-tail",
        "req_after",
    ]
    assert verify(meith_home.audit_path).ok


@pytest.mark.anyio
async def test_a_granted_agent_cannot_shorten_the_retention_to_flush_the_trail(
    runtime: Runtime,
) -> None:
    agent = runtime.open_session("agent")
    runtime.grant(agent, ["writes-files"])
    for patch in ({"retentionDays": 1}, {"maxBytes": 1024 * 1024}):
        result = await runtime.call(
            "set_app_settings", {"settings": {"audit": patch}}, caller=agent
        )
        assert result.error.code is ErrorCode.PERMISSION_DENIED, result
        assert "meith settings set" in result.error.message
    assert "audit" not in runtime.settings.load()
    # The local user changes it (what `meith settings set audit.retentionDays 7` does).
    runtime.settings.merge({"audit": {"retentionDays": 7}})
    assert Limits.from_settings(runtime.settings.snapshot()["audit"]).retention_s == 7 * 86_400
