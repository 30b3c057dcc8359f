"""Issue 20 against a real `meith serve`, over real sockets: a grant means what it says (the
target of a call, never the caller's self-reported directory), no socket caller writes policy,
no flood of successful calls erases a privileged record, refused frames are audited, and the
smaller leaks are closed. Each case failed on the code before the change."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from meith_core.audit.verify import verify
from tests.harness import MeithServer

# Every test starts a real `meith serve`.
pytestmark = pytest.mark.slow


class Peer:
    """A raw NDJSON peer: one connection (one session), frames as dicts."""

    def __init__(self, path: str, *, caller: str = "agent", cwd: str | None = None) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.reader = self.sock.makefile("rb")
        self.info: dict[str, Any] = {"caller": caller, "label": "trust-test"}
        if cwd is not None:
            self.info["cwd"] = cwd
        self.n = 0

    def send(self, frame: dict[str, Any] | bytes) -> None:
        data = frame if isinstance(frame, bytes) else json.dumps(frame).encode()
        self.sock.sendall(data + b"\n")

    def read(self) -> dict[str, Any]:
        while True:
            frame = json.loads(self.reader.readline())
            if frame.get("type") != "tool_event":
                return dict(frame)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        self.n += 1
        rid = f"r{self.n}"
        self.send(
            {
                "type": "tool_call",
                "protocol": 1,
                "requestId": rid,
                "toolName": tool,
                "arguments": arguments or {},
                "clientInfo": self.info,
            }
        )
        frame = self.read()
        assert frame.get("requestId") == rid, frame
        return dict(frame["result"])

    def flood(self, tools: list[str], count: int, batch: int = 250) -> None:
        """`count` calls cycling through `tools`, pipelined in batches; all must succeed."""
        for start in range(0, count, batch):
            todo = range(start, min(start + batch, count))
            self.sock.sendall(
                b"".join(
                    json.dumps(
                        {
                            "type": "tool_call",
                            "protocol": 1,
                            "requestId": f"f{i}",
                            "toolName": tools[i % len(tools)],
                            "arguments": {},
                            "clientInfo": self.info,
                        }
                    ).encode()
                    + b"\n"
                    for i in todo
                )
            )
            for _ in todo:
                frame = self.read()
                assert frame["result"]["ok"] is True, frame

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


@contextmanager
def peer(srv: MeithServer, **kwargs: Any) -> Iterator[Peer]:
    p = Peer(srv.socket, **kwargs)
    try:
        yield p
    finally:
        p.close()


def trail(srv: MeithServer) -> list[dict[str, Any]]:
    """Every record, carried ones included, as the runtime reads them."""
    from meith_core.audit.log import AuditLog

    return list(AuditLog(srv.home.audit_path).read())


def git_repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "a.txt").write_text("a\n")
    return path


def denied(result: dict[str, Any]) -> str:
    assert result["ok"] is False, result
    assert result["error"]["code"] == "PERMISSION_DENIED", result
    return str(result["error"]["message"])


# -- 1. the directory that authorises a call is not the caller's to choose ----------------------


def test_a_directory_grant_never_covers_global_state_whatever_the_caller_says(
    meith_server: Callable[..., MeithServer], tmp_path: Path
) -> None:
    srv = meith_server()
    srv.approve("git")
    repo = git_repo(tmp_path / "repo")
    grant = srv.grant("writes-files", caller="agent", cwd=str(repo))
    with peer(srv, cwd=str(repo)) as agent:
        forged = {"git": {"activeIdentityProfileId": "forged"}, "browser": {"headless": False}}
        message = denied(agent.call("set_app_settings", {"settings": forged}))
        # Inside the grant's directory, a tool acting on a path there is covered.
        staged = agent.call("git_stage", {"paths": ["a.txt"]})
    assert f"grant {grant} is confined to {repo.resolve()}" in message
    assert "never covers set_app_settings: it acts on global state (settings)" in message
    assert (
        "meith grants add --caller agent --agent trust-test --capability writes-files "
        "--tool set_app_settings (a grant without --cwd"
    ) in message
    assert "--cwd" not in message.split("the user can run:")[1].split("(")[0]
    assert "forged" not in (
        srv.home.settings_path.read_text() if srv.home.settings_path.exists() else ""
    )
    assert staged["ok"] is True, staged
    record = next(r for r in srv.audit_records() if r["toolName"] == "set_app_settings")
    assert record["decision"] == "deny"
    assert "global state" in record["reason"]


def test_a_sessions_workspace_is_its_first_frames_and_no_later_frame_moves_it(
    meith_server: Callable[..., MeithServer], tmp_path: Path
) -> None:
    """Reads by an agent reach its session's workspace. A connection that opens its session
    for one directory and then says, frame by frame, that it works in another (or in `/`)
    gets no further: the workspace is the first frame's, kept by the runtime."""
    srv = meith_server(plugins="files")
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    for d in (ws, elsewhere):
        d.mkdir()
        (d / "notes.txt").write_text(f"{d.name}\n")
    with peer(srv, cwd=str(ws)) as agent:
        mine = agent.call("workspace_read_file", {"path": "notes.txt"})
        assert mine["ok"] is True, mine
        agent.info["cwd"] = str(elsewhere)
        message = denied(agent.call("workspace_read_file", {"path": "notes.txt"}))
        assert f"its workspace is {ws}" in message
        agent.info["cwd"] = "/"
        denied(agent.call("workspace_read_file", {"cwd": str(elsewhere), "path": "notes.txt"}))
        agent.send({"type": "list_sessions", "requestId": "ls"})
        rows = agent.read()["sessions"]
        assert [r["workspace"] for r in rows if r["caller"] == "agent"] == [str(ws)]


# -- 2. an existing object is matched by its own directory ----------------------------------------


def test_an_object_tool_is_matched_against_the_objects_directory(
    meith_server: Callable[..., MeithServer], tmp_path: Path
) -> None:
    srv = meith_server()
    srv.approve("process")
    work, elsewhere, other = tmp_path / "work", tmp_path / "elsewhere", tmp_path / "other"
    for d in (work, elsewhere, other):
        d.mkdir()
    srv.grant("starts-process", caller="agent", cwd=str(work))
    with peer(srv, cwd=str(elsewhere)) as agent:  # the bridge runs elsewhere
        started = agent.call(
            "start_dev_server", {"cwd": str(work), "command": "sleep", "args": ["60"]}
        )
        assert started["ok"] is True, started
        server_id = started["content"]["id"]
        term = agent.call("create_terminal", {"cwd": str(work)})
        assert term["ok"] is True, term
        tid = term["content"]["id"]
        # Its own server and terminal, in the grant's directory: covered, whatever its cwd.
        assert agent.call("write_terminal", {"terminalId": tid, "data": "true\r"})["ok"]
        assert agent.call("kill_terminal", {"terminalId": tid, "graceMs": 100})["ok"]
        stopped = agent.call("stop_dev_server", {"devServerId": server_id, "graceMs": 100})
        assert stopped["ok"] is True, stopped

    # The reverse: a server in `other` (started under a one-use unconfined grant) is not
    # covered by the grant for `work`, even when the caller says it is in `work`.
    srv.grant("starts-process", caller="agent", uses=1)
    with peer(srv, cwd=str(work)) as agent:
        started = agent.call(
            "start_dev_server", {"cwd": str(other), "command": "sleep", "args": ["60"]}
        )
        assert started["ok"] is True, started
        message = denied(agent.call("stop_dev_server", {"devServerId": started["content"]["id"]}))
        assert f"the dev server's directory, {other.resolve()}, outside it" in message
        assert f"--cwd {other.resolve()}" in message


# -- 3. socket callers never write policy -------------------------------------------------------


def test_a_section_no_loaded_plugin_registered_is_not_writable_over_the_socket(
    meith_server: Callable[..., MeithServer],
) -> None:
    srv = meith_server(plugins="git,process")  # the browser plugin is disabled
    srv.grant("writes-files", caller="agent", tool="set_app_settings")
    with peer(srv) as agent:
        future = denied(agent.call("set_app_settings", {"settings": {"someplugin": {"x": 1}}}))
        disabled = denied(
            agent.call("set_app_settings", {"settings": {"browser": {"cdpUnrestricted": True}}})
        )
        registered = agent.call("set_app_settings", {"settings": {"git": {"runHooks": False}}})
    assert "section 'someplugin' is not registered by any loaded plugin" in future
    assert "section 'browser' is not registered" in disabled
    assert "meith settings set browser.KEY VALUE" in disabled
    assert registered["ok"] is True, registered
    written = json.loads(srv.home.settings_path.read_text())
    assert set(written) == {"git"}
    # The one door stays open.
    assert srv.cli("settings", "set", "someplugin.x", "1").returncode == 0


# -- 4. the evidence of privileged calls outlives floods --------------------------------------


def _privileged_call(srv: MeithServer, work: Path) -> str:
    srv.approve("process")
    srv.grant("starts-process", caller="agent", cwd=str(work))
    with peer(srv, cwd=str(work)) as agent:
        started = agent.call("start_dev_server", {"command": "sleep", "args": ["60"]})
        assert started["ok"] is True, started
        assert agent.call("stop_dev_server", {"devServerId": started["content"]["id"]})["ok"]
    return "start_dev_server"


def _small_trail(srv: MeithServer) -> None:
    assert srv.cli("settings", "set", "audit.maxBytes", str(1024 * 1024)).returncode == 0


def test_a_flood_of_successful_calls_from_one_agent_keeps_the_privileged_record(
    meith_server: Callable[..., MeithServer], tmp_path: Path
) -> None:
    srv = meith_server()
    _small_trail(srv)
    work = tmp_path / "work"
    work.mkdir()
    tool = _privileged_call(srv, work)
    with peer(srv) as flooder:  # no grant at all
        flooder.flood(["get_active_tab"], 4000)  # ~2.5 MB of records, uncoalesced
    srv.stop()
    records = trail(srv)
    evidence = [(r.get("kind"), r["outcome"]) for r in records if r.get("toolName") == tool]
    assert evidence == [("intent", "started"), (None, "ok")]
    summaries = [r for r in records if r.get("kind") == "coalesced"]
    assert sum(r["count"] for r in summaries if r["toolName"] == "get_active_tab") > 0
    assert all("succeeded" in r["reason"] for r in summaries)
    ok = [r for r in records if r.get("toolName") == "get_active_tab" and "kind" not in r]
    assert len(ok) + sum(r["count"] for r in summaries) == 4000  # every call accounted for
    report = verify(srv.home.audit_path)
    assert report.ok, report.problems
    assert report.evidence_dropped == 0


def test_a_flood_of_other_tools_from_many_sessions_keeps_the_privileged_record(
    meith_server: Callable[..., MeithServer], tmp_path: Path
) -> None:
    srv = meith_server()
    _small_trail(srv)
    work = tmp_path / "work"
    work.mkdir()
    tool = _privileged_call(srv, work)
    tools = ["get_app_settings", "app_list_instances", "get_tabs", "list_dev_servers"]
    for _ in range(8):  # a new connection, a new session, each under every rate
        with peer(srv) as flooder:
            flooder.flood(tools, 400)  # 3,200 records in all: more than the trail keeps
    srv.stop()
    records = trail(srv)
    evidence = [(r.get("kind"), r["outcome"]) for r in records if r.get("toolName") == tool]
    assert evidence == [("intent", "started"), (None, "ok")]
    assert all(r.get("carried") for r in records if r.get("toolName") == tool)
    report = verify(srv.home.audit_path)
    assert report.ok, report.problems
    assert report.carried >= 2
    strict = srv.cli("audit", "verify", "--strict")
    assert strict.returncode == 0, strict.stdout
    assert "deleted by retention" in strict.stdout


# -- 5. smaller leaks --------------------------------------------------------------------------


def test_every_refused_tool_call_frame_is_audited(
    meith_server: Callable[..., MeithServer],
) -> None:
    srv = meith_server()
    base = {"type": "tool_call", "protocol": 1, "arguments": {}}
    frames = [
        {**base, "requestId": "wrong-types", "toolName": 5, "arguments": []},
        {**base, "toolName": "app_health"},  # no requestId
        {**base, "protocol": 2, "requestId": "v2", "toolName": "app_health"},
        {**base, "requestId": "long", "toolName": "x" * 300},
    ]
    with peer(srv) as p:
        # The identity the connection fixed is whom the refusals are recorded for.
        p.send({"type": "hello", "protocol": 1, "clientInfo": {"caller": "agent"}})
        assert p.read()["type"] == "welcome"
        for frame in frames:
            p.send(frame)
            answer = p.read()
            assert answer["type"] == "error", answer
            assert answer["code"] == "PROTOCOL_ERROR", answer
        # A frame that is not a tool_call runs nothing and is not a call record.
        p.send({"type": "list_tools", "protocol": 2})
        assert p.read()["type"] == "error"
    srv.stop()
    refused = [r for r in srv.audit_records() if r.get("outcome") == "PROTOCOL_ERROR"]
    assert [r["requestId"] for r in refused] == ["wrong-types", None, "v2", "long"]
    assert all(r["decision"] == "deny" and r["caller"] == "agent" for r in refused)
    assert refused[3]["toolName"] == "x" * 200
    assert "Unsupported protocol version 2" in refused[2]["reason"]


def test_redaction_of_the_new_forms_in_a_served_trail(
    meith_server: Callable[..., MeithServer],
) -> None:
    srv = meith_server()
    secrets = ["Hunter2mysql", "Hunter2glued", "Hunter2pw", "letmein42", "Hunter2is"]
    with peer(srv) as p:
        result = p.call(
            "get_app_settings",
            {
                "command": f"mysql -u root -p{secrets[0]} app",
                "argv": ["mysqldump", "-uroot", f"-p{secrets[1]}"],
                "settings": {"db": {"pw": secrets[2]}},
                "note": f"password: {secrets[3]}",
                "more": f"the password is {secrets[4]}",
            },
        )
        assert result["error"]["code"] == "VALIDATION_ERROR"
    srv.stop()
    raw = b"".join(p.read_bytes() for p in srv.home.root.glob("audit*.jsonl*"))
    assert b"get_app_settings" in raw
    for secret in secrets:
        assert secret.encode() not in raw, secret


def test_what_a_peer_chose_reaches_the_users_terminal_escaped(
    meith_server: Callable[..., MeithServer], tmp_path: Path
) -> None:
    """A socket peer chooses the directory it says it works in and the names it sends; the
    local user's `meith sessions` and `meith audit` tables show them with every control
    character escaped, so no escape sequence reaches the user's terminal."""
    srv = meith_server()
    hostile = str(tmp_path / "ws\x1b]0;owned\x07\x1b[2J")
    with peer(srv, cwd=hostile) as agent:
        agent.call("app_health")
        agent.send(
            {
                "type": "tool_call",
                "protocol": 1,
                "requestId": "bad",
                "toolName": "x\x1b[31mred",
                "arguments": "not an object",
            }
        )
        agent.read()
        sessions = srv.cli("sessions")
        assert sessions.returncode == 0, sessions.stderr
        assert "\x1b" not in sessions.stdout
        assert "ws\\x1b]0;owned\\x07\\x1b[2J" in sessions.stdout
    audit = srv.cli("audit", "-n", "5")
    assert audit.returncode == 0, audit.stderr
    assert "\x1b" not in audit.stdout
