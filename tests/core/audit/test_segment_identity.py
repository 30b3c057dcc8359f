"""Issue 31, case 2 (audit part): the audit trail notices a vanished segment.

A process that could delete files in ~/.meith deleted the live segment again and again; the
runtime re-created the file chained to the previous segment's head and `meith audit verify`
said OK. Now the writer keeps the chain head and the live segment's identity in memory (and in
`audit.head`, outside the segment), checks before each append that the file it holds is still
the one at the name, and records a deleted, replaced or truncated segment as a
`segment-vanished` record of its own, on which `meith audit verify` fails.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from meith_core.audit import segments
from meith_core.audit.log import AuditLog
from meith_core.audit.segments import Limits
from meith_core.audit.verify import verify
from tests.harness import MEITH, base_env


def entry(i: int, pad: int = 0) -> dict[str, Any]:
    return {"id": f"audit_{i:012x}", "seq": i, "outcome": "ok", "pad": "x" * pad}


def cli_verify(home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEITH, "audit", "verify"], env=base_env(home), capture_output=True, text=True, timeout=60
    )


def vanished(path: Path) -> list[dict[str, Any]]:
    return [r for r in AuditLog(path).read() if r.get("kind") == "segment-vanished"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    return home


def test_a_live_segment_deleted_under_the_writer_is_recorded_and_fails_verify(
    home: Path,
) -> None:
    path = home / "audit.jsonl"
    log = AuditLog(path)
    for i in range(5):
        assert log.write(entry(i))
    st = path.stat()
    last = json.loads(path.read_bytes().splitlines()[-1])["hash"]
    path.unlink()
    assert log.write(entry(5))
    log.close()

    [record] = vanished(path)
    assert record["how"] == "deleted"
    assert record["lost"]["device"] == st.st_dev
    assert record["lost"]["inode"] == st.st_ino
    assert record["lost"]["lastHash"] == last
    assert record["lost"]["bytes"] == st.st_size
    report = verify(path)
    assert not report.ok
    assert "vanished" in report.problems[0]["problem"]
    done = cli_verify(home)
    assert done.returncode == 6, done.stdout + done.stderr
    assert "segment vanished" in done.stdout


def test_a_segment_replaced_or_truncated_under_the_writer_is_recorded(home: Path) -> None:
    path = home / "audit.jsonl"
    log = AuditLog(path)
    for i in range(3):
        log.write(entry(i))
    os.rename(path, home / "elsewhere.jsonl")
    path.write_bytes(b"")
    log.write(entry(3))
    assert [r["how"] for r in vanished(path)] == ["replaced"]
    for i in range(4, 7):
        log.write(entry(i))
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.truncate(size - 40)
    log.write(entry(7))
    log.close()
    assert [r["how"] for r in vanished(path)] == ["replaced", "truncated"]
    assert not verify(path).ok


def test_a_segment_deleted_while_no_writer_held_it_is_noticed_at_the_next_start(
    home: Path,
) -> None:
    path = home / "audit.jsonl"
    log = AuditLog(path)
    for i in range(3):
        log.write(entry(i))
    log.close()
    path.unlink()
    again = AuditLog(path)
    again.write(entry(3))
    again.close()
    [record] = vanished(path)
    assert record["how"] == "deleted or replaced while no runtime held it"
    assert not verify(path).ok


def test_rotation_by_this_or_another_writer_is_no_loss(home: Path) -> None:
    path = home / "audit.jsonl"
    small = Limits(max_bytes=segments.MIN_SEGMENT_BYTES * 4)
    a, b = AuditLog(path, limits=small), AuditLog(path, limits=small)
    for i in range(400):
        assert (a if i % 3 else b).write(entry(i, pad=600))
    a.close()
    b.close()
    assert len(segments.sealed_segments(path)) >= 2
    assert vanished(path) == []
    later = AuditLog(path, limits=small)
    later.write(entry(400))
    later.close()
    assert vanished(path) == []
    assert verify(path).ok


@pytest.mark.slow
def test_a_real_runtime_records_its_deleted_segment_and_verify_fails(meith_server: Any) -> None:
    server = meith_server()
    assert server.call("app_health")["ok"]
    live = server.home.audit_path
    assert live.exists()
    inodes = []
    for _ in range(3):
        inodes.append(live.stat().st_ino)
        live.unlink()
        assert server.call("app_health")["ok"]
    # Each deletion took the record of the one before with it; the last says how many.
    [record] = vanished(live)
    assert record["how"] == "deleted"
    assert record["lost"]["inode"] == inodes[-1]
    assert record["noticed"] == 3
    done = cli_verify(server.home.root)
    assert done.returncode == 6, done.stdout
    assert "segment vanished" in done.stdout
