"""A process an agent session starts calls back as that session: its kind, its session id,
its grants (not the local user's), never approving anything, and not after the session ends.

Real `meith serve`, a real dev server running the real `meith` CLI, the real audit trail.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from meith_core.client import Client, TransportError
from tests.harness import MEITH, wait_until

pytestmark = pytest.mark.slow


def test_a_dev_server_started_by_an_agent_calls_back_as_that_agent(
    meith_server: Any, tmp_path: Path
) -> None:
    srv = meith_server(plugins="process")
    srv.approve("process")
    # The agent may start dev servers; the local user (cli) may only open terminals.
    srv.grant("starts-process", caller="agent", tool="start_dev_server")
    srv.grant("starts-process", caller="cli", tool="create_terminal")
    out = tmp_path / "out"
    out.mkdir()
    script = (
        f'echo "$MEITH_SESSION_TOKEN" > {out}/token; '
        f'echo "${{MEITH_HOME:-none}}" > {out}/home; '
        f'echo "$MEITH_SOCKET" > {out}/socket; '
        f"{MEITH} call start_dev_server --command 'sleep 300' --json > {out}/dev.json 2> {out}/dev.err; "
        f"{MEITH} call create_terminal --json > {out}/term.json; "
        f"touch {out}/done; sleep 300"
    )
    with Client(srv.socket, caller="agent", label="a", cwd=str(tmp_path)) as a:
        session = a.hello()["sessionId"]
        dev = a.call("start_dev_server", {"cwd": str(tmp_path), "command": script})
        assert dev.ok, dev
        assert wait_until(lambda: (out / "done").exists(), timeout=60)
        assert (out / "home").read_text().strip() == "none"  # no way to the trust root
        token = (out / "token").read_text().strip()
        assert token.startswith("mst_")
        # It calls back on the children's socket, where only a session's token is accepted.
        assert (out / "socket").read_text().strip() == srv.socket + ".child"

        # The child's start_dev_server ran under the agent's grant, as the agent's session.
        child_dev = json.loads((out / "dev.json").read_text() or (out / "dev.err").read_text())
        assert child_dev["ok"], child_dev
        # ... and create_terminal, which only the local user may do, was denied.
        child_term = json.loads((out / "term.json").read_text())
        assert child_term["error"]["code"] == "PERMISSION_DENIED", child_term

        # What the child started belongs to the agent's session.
        mine = {s["id"] for s in a.call("list_dev_servers").content}
        assert child_dev["content"]["id"] in mine

        # Every start and terminal call, the agent's own and its child's, is the agent's.
        calls = [
            r
            for r in srv.audit_records()
            if r.get("toolName") in ("start_dev_server", "create_terminal")
        ]
        assert sorted((r["toolName"], r["decision"]) for r in calls) == [
            ("create_terminal", "deny"),
            ("start_dev_server", "allow"),
            ("start_dev_server", "allow"),
        ]
        for record in calls:
            assert (record["caller"], record["sessionId"]) == ("agent", session), record

    # The session ended: its token is refused, never downgraded to another identity.
    env = {**srv.env, "MEITH_SOCKET": srv.socket, "MEITH_SESSION_TOKEN": token}
    env.pop("MEITH_HOME", None)
    done = subprocess.run(
        [MEITH, "call", "app_health", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "sessionToken is not valid" in done.stdout + done.stderr
    # The children's socket serves nobody without a token, whatever they claim.
    with (
        Client(srv.socket + ".child", caller="cli", cwd=str(tmp_path)) as bare,
        pytest.raises(TransportError, match="MEITH_SESSION_TOKEN"),
    ):
        bare.call("app_health")
    assert srv.stop() == 0
    assert not Path(srv.socket + ".child").exists()
