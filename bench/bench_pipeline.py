"""Where a trivial call's server CPU goes, without sockets: meith's own Python work per call.

A runtime with the benchmark plugin (`bench_echo`) runs in this process. One connection is fed
`tool_call` frames directly (`SocketConnection.data_received`) through an in-memory transport, so a
call is everything the server does for it except the socket syscalls and the event loop's
`select`: framing and frame validation, the pipeline (argument validation, permission gate,
deadline, normalisation), the audit record (redaction of the summaries, then sealing and
appending it under the trail's lock), and the result frame. A call whose tool never awaits is
answered within `data_received` (tasks start eagerly), so process CPU time over N calls,
divided by N, is the cost of one.

Beside it, the two parts of the audit record, measured alone on the same call's values:

- `summaries`: `summarize_call` of the call's arguments and result (redaction, serialisation);
- `append`: `AuditLog.write` of the record the runtime wrote for the call (encode, hash,
  flock, fstat, one `os.write`), into a trail of its own.

    python bench/bench_pipeline.py [--quick] [--calls N] [--reps R]

Writes bench/results/pipeline.json. Compare the total with `bench_core.py`'s server CPU per
call: the difference is the socket, the event loop and the kernel.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _core_plugin import BenchPlugin  # bench/ is the script's directory: sys.path[0]
from _timing import us_per_item

from meith_core.audit.log import AuditLog
from meith_core.audit.redact import summarize_call
from meith_core.base.home import MeithHome
from meith_core.host.runtime import Runtime
from meith_core.serve.socket_connection import SocketConnection
from meith_core.serve.socket_server import SocketServer
from meith_core.serve.socketbind import bind_socket

RESULTS_PATH = Path(__file__).resolve().parent / "results" / "pipeline.json"
ARGS = {"text": "hello"}


class MemoryTransport(asyncio.Transport):
    """Collects what the server writes; its `socket` is one end of a real socket pair, so the
    server's peer check (SO_PEERCRED) runs as for any client."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.sock = sock
        self.frames: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.frames.append(bytes(data))

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return False

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.sock if name == "socket" else default

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


def call_frames(n: int, start: int) -> list[bytes]:
    return [
        json.dumps(
            {
                "type": "tool_call",
                "protocol": 1,
                "requestId": f"r{start + i}",
                "toolName": "bench_echo",
                "arguments": ARGS,
            }
        ).encode()
        + b"\n"
        for i in range(n)
    ]


async def measure(calls: int, reps: int, tmp: Path) -> dict[str, Any]:
    home = MeithHome(tmp / "home")
    runtime = Runtime(home, load_plugins=False, cwd=os.getcwd())
    runtime.load_plugin("bench", BenchPlugin)
    runtime.approve_plugin("bench")
    await runtime.start()
    bound = bind_socket(str(tmp / "s"), create_dir=False)
    # The connection's peer is this process (a socket pair): admitted as the embedding test
    # harness admits it.
    server = SocketServer(runtime, bound, admit_own_process=True)
    ours, theirs = socket.socketpair(socket.AF_UNIX)
    try:
        conn = SocketConnection(server)
        transport = MemoryTransport(ours)
        conn.connection_made(transport)
        conn.data_received(b'{"type":"hello","protocol":1,"clientInfo":{"name":"bench"}}\n')
        frames = call_frames(calls * (reps + 1), 0)
        position = 0

        def feed(n: int) -> None:
            nonlocal position
            for frame in frames[position : position + n]:
                conn.data_received(frame)
            position += n

        feed(calls)  # warm-up: imports, caches, the trail's file
        await asyncio.sleep(0)
        last = json.loads(transport.frames[-1])
        if last.get("type") != "tool_result" or not last["result"].get("ok"):
            raise SystemExit(f"bench_echo did not answer as expected: {last}")
        total = us_per_item(feed, calls, reps, clock=time.process_time)
        await asyncio.sleep(0)
        answered = sum(1 for f in transport.frames if f.startswith(b'{"type":"tool_result"'))
        if answered != calls * (reps + 1):
            raise SystemExit(f"{answered} results for {calls * (reps + 1)} calls")
        record = _last_record(home.root)
    finally:
        ours.close()
        theirs.close()
        await server.shutdown()
        await runtime.aclose()
        bound.release()

    result = last["result"]
    summaries = us_per_item(
        lambda n: [summarize_call(ARGS, result) for _ in range(n)],
        calls,
        reps,
        clock=time.process_time,
    )
    trail = AuditLog(tmp / "trail.jsonl")
    entry = {k: v for k, v in record.items() if k not in ("prev", "hash")}
    try:
        append = us_per_item(
            lambda n: [trail.write(dict(entry)) for _ in range(n)],
            calls,
            reps,
            clock=time.process_time,
        )
    finally:
        trail.close()
    return {
        "callsPerRep": calls,
        "reps": reps,
        "usPerCall": {
            "total": round(total, 1),
            "auditSummaries": round(summaries, 1),
            "auditAppend": round(append, 1),
            "rest": round(total - summaries - append, 1),
        },
        "auditRecordBytes": len(json.dumps(record, separators=(",", ":"))),
    }


def _last_record(home: Path) -> dict[str, Any]:
    lines = (home / "audit.jsonl").read_bytes().splitlines()
    for line in reversed(lines):
        record = json.loads(line)
        if record.get("toolName") == "bench_echo":
            return dict(record)
    raise SystemExit("no audit record of bench_echo in the trail")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--calls", type=int, default=5000, help="calls per repetition")
    parser.add_argument("--reps", type=int, default=5)
    opts = parser.parse_args()
    calls, reps = (300, 2) if opts.quick else (opts.calls, opts.reps)
    with tempfile.TemporaryDirectory(prefix="meith-bench-pipeline-") as tmp:
        out = asyncio.run(measure(calls, reps, Path(tmp)))
    out["python"] = sys.version.split()[0]
    per = out["usPerCall"]
    total = per["total"]
    print(
        f"meith's own CPU per trivial call, in process (python {out['python']}, median of {reps})"
    )
    for label, key in (
        ("whole server path (no socket, no select)", "total"),
        ("  audit: redacted summaries", "auditSummaries"),
        ("  audit: seal and append the record", "auditAppend"),
        ("  everything else (framing, pipeline, result)", "rest"),
    ):
        share = f"{per[key] / total:6.0%}" if total else ""
        print(f"  {label:<48} {per[key]:8.1f} us {share}")
    print(f"  audit record: {out['auditRecordBytes']} bytes")
    RESULTS_PATH.parent.mkdir(parents=True, exist_ok=True)
    RESULTS_PATH.write_text(json.dumps(out, indent=2) + "\n")
    print(f"JSON: {RESULTS_PATH}")


if __name__ == "__main__":
    main()
