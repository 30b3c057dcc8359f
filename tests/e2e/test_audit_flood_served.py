"""The flood attack against a real `meith serve`: a peer with no grant sends more calls of
nonexistent tools than the old trail kept records; the earlier privileged call stays in the
trail, every flooded call is accounted for, and the chain verifies."""

from __future__ import annotations

import json
import socket

import pytest

from meith_core.audit.coalesce import BURST_ALL_SESSIONS
from meith_core.audit.log import AuditLog

FLOOD = 41_000  # what pushed every earlier record out of the old trail (20,000 kept, twice)
BATCH = 500


def _flood(path: str) -> None:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(path)
        reader = sock.makefile("rb")
        for start in range(0, FLOOD, BATCH):
            frames = b"".join(
                json.dumps(
                    {
                        "type": "tool_call",
                        "protocol": 1,
                        "requestId": f"f{i}",
                        "toolName": f"no_such_tool_{i}",
                        "arguments": {},
                    }
                ).encode()
                + b"\n"
                for i in range(start, min(start + BATCH, FLOOD))
            )
            sock.sendall(frames)
            for _ in range(min(BATCH, FLOOD - start)):
                result = json.loads(reader.readline())
                assert result["type"] == "tool_result"
                assert result["result"]["error"]["code"] == "UNKNOWN_TOOL"


@pytest.mark.slow
def test_a_flood_over_the_socket_keeps_the_evidence(meith_server) -> None:
    srv = meith_server()
    srv.grant("writes-files", tool="set_app_settings")
    assert srv.call("set_app_settings", {"settings": {"git": {"runHooks": True}}})["ok"]
    _flood(srv.socket)
    srv.stop()  # closes the trail: the open coalescing window is written

    records = list(AuditLog(srv.home.audit_path).read())
    evidence = [r for r in records if r["toolName"] == "set_app_settings"]
    assert [(r.get("kind"), r["outcome"]) for r in evidence] == [
        ("intent", "started"),
        (None, "ok"),
    ]
    flood = [r for r in records if str(r.get("requestId", "")).startswith("f")]
    counted = sum(r["count"] if r.get("kind") == "coalesced" else 1 for r in flood)
    assert counted == FLOOD
    assert len(flood) < FLOOD // 100
    verified = srv.cli("audit", "verify", "--json")
    assert verified.returncode == 0, verified.stdout
    assert json.loads(verified.stdout)["ok"] is True


@pytest.mark.slow
def test_a_new_connection_for_every_call_is_coalesced_too(meith_server) -> None:
    srv = meith_server()
    n = 2_000
    for i in range(n):
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(srv.socket)
            frame = {"type": "tool_call", "protocol": 1, "requestId": f"c{i}"}
            frame |= {"toolName": f"no_such_tool_{i}", "arguments": {}}
            sock.sendall(json.dumps(frame).encode() + b"\n")
            result = json.loads(sock.makefile("rb").readline())
            assert result["result"]["error"]["code"] == "UNKNOWN_TOOL"
    srv.stop()
    flood = [r for r in AuditLog(srv.home.audit_path).read() if r.get("outcome") == "UNKNOWN_TOOL"]
    counted = sum(r["count"] if r.get("kind") == "coalesced" else 1 for r in flood)
    assert counted == n
    # Each coalescing window spanning the sessions writes at most a burst in full (how many
    # windows the run spans depends on the machine's speed, so that number is not asserted).
    wide = [r for r in flood if r.get("kind") == "coalesced" and r["sessionId"] == "*"]
    in_full = [r for r in flood if r.get("kind") is None]
    assert wide
    assert len(in_full) <= BURST_ALL_SESSIONS * (len(wide) + 1)
