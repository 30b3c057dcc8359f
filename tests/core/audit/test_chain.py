"""The hash chain of the audit trail: each record links to the one before, the hash covers the
bytes written, a torn tail is recorded and the chain goes on from the last whole record, and
several writers extend one chain."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from meith_core import MeithHome, Runtime
from meith_core.audit import segments
from meith_core.audit.chain import check_line, seal
from meith_core.audit.log import AuditLog
from meith_core.audit.verify import verify
from tests.core.audit.support import SMALL, entry, lines_of, seqs

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
