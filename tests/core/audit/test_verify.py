"""`meith audit verify`: the first tampered record named, the head of a good trail, evidence
dropped early said (and a failure with `--strict`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from meith_core.audit.log import AuditLog
from meith_core.audit.verify import verify
from tests.core.audit.support import (
    SMALL,
    cli_verify,
    entry,
    fill_with_evidence,
    lines_of,
    privileged,
)
from tests.harness import MEITH, base_env


@pytest.mark.slow
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


@pytest.mark.slow
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
