"""Micro benchmark of the audit writer: what one record costs.

Compares, per record of a realistic size (~600 bytes), medians of several runs:

- `raw`: one `os.write` of the same line to an O_APPEND file (the floor);
- `encode+write`: serialising the record and one `os.write` (what the writer did before it
  hashed, locked and checked the file);
- `sha256`: hashing the line alone;
- `write`: `AuditLog.write` (flock, one stat, seal with sha256, one `os.write`);
- `coalesced`: `AuditLog.write` of a repeated refused call (counted, not written);
- `summaries`: redacting an ordinary call's arguments and result (`summarize_call`).

    python bench/bench_audit.py [--records N] [--runs N]

Writes bench/results/audit.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from _timing import us_per_item

from meith_core.audit.log import AuditLog
from meith_core.audit.redact import summarize_call
from meith_core.protocol.framing import dumps_bytes


def record(i: int) -> dict[str, Any]:
    return {
        "id": f"audit_{i:012x}",
        "ts": 1_796_000_000_000 + i,
        "requestId": f"req_{i:012x}",
        "caller": "agent",
        "sessionId": "agent:3f1c5a52-6d3e-4d7e-9a55-0e1f2b3c4d5e",
        "toolName": "git_status",
        "plugin": "git",
        "capabilities": ["read-only"],
        "decision": "allow",
        "reason": "no privileged capability",
        "outcome": "ok",
        "cwd": "/home/user/projects/meith",
        "spaceId": None,
        "tabId": None,
        "argsSummary": '{"cwd":"/home/user/projects/meith","includeUntracked":true}',
        "resultSummary": '{"ok":true,"content":{"branch":"main","ahead":0,"behind":0,'
        '"files":[{"path":"README.md","status":"modified"}]}}',
        "durationMs": 3.217,
    }


def refused(i: int) -> dict[str, Any]:
    return {**record(i), "toolName": f"nope_{i}", "plugin": None, "outcome": "UNKNOWN_TOOL"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    opts = parser.parse_args()
    n, runs = (500, 1) if opts.quick else (opts.records, opts.runs)
    line = dumps_bytes(record(0)) + b"\n"
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        entries = [record(i) for i in range(n)]
        fd = os.open(root / "raw.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

        def raw(k: int) -> None:
            for _ in range(k):
                os.write(fd, line)

        def encode_write(k: int) -> None:
            for e in entries[:k]:
                os.write(fd, dumps_bytes(e) + b"\n")

        def sha(k: int) -> None:
            for _ in range(k):
                hashlib.sha256(line).hexdigest()

        log = AuditLog(root / "audit.jsonl")

        def write(k: int) -> None:
            for e in entries[:k]:
                log.write(e)

        flood = AuditLog(root / "flood.jsonl")
        refusals = [{**refused(i), "sessionId": "s"} for i in range(n)]

        def coalesced(k: int) -> None:
            for e in refusals[:k]:
                flood.write(e)

        args = {"cwd": "/home/user/projects/meith", "includeUntracked": True}
        result = {"ok": True, "content": {"branch": "main", "files": [{"path": "README.md"}]}}

        def summaries(k: int) -> None:
            for _ in range(k):
                summarize_call(args, result)

        for name, fn in [
            ("raw", raw),
            ("encode+write", encode_write),
            ("sha256", sha),
            ("write", write),
            ("coalesced", coalesced),
            ("summaries", summaries),
        ]:
            results[name] = round(us_per_item(fn, n, runs), 2)
        os.close(fd)
        log.close()
        flood.close()
    out = {"recordBytes": len(line), "records": n, "runs": runs, "usPerRecord": results}
    print(json.dumps(out, indent=2))
    target = Path(__file__).parent / "results" / "audit.json"
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
