"""A runtime for the bridge when none runs: `meith serve`, detached, found like any other."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from meith_core.base.home import MeithHome
from meith_core.base.instances import can_connect, resolve_target

START_TIMEOUT_S = 60.0


class StartError(RuntimeError):
    pass


def find_or_start(
    home: MeithHome, socket_path: str | None, instance: str | None, *, start: bool
) -> tuple[str, bool]:
    """The socket of a live runtime, and whether this call started it.

    Raises TargetError (no match for --instance) or StartError (none runs and none may start).
    """
    socket_path = socket_path or os.environ.get("MEITH_SOCKET") or None
    target = resolve_target(home, socket_path=socket_path, instance=instance)
    if can_connect(target.socket_path):
        return target.socket_path, False
    if not start or instance:
        raise StartError(
            f"No meith runtime is listening at {target.socket_path}. Start one with: meith serve"
        )
    home.ensure()
    argv = [
        sys.executable,
        "-c",
        "from meith_core.cli import run; run()",
        "serve",
        "--approvals",
        "deny",
        "--log-format",
        "json",
    ]
    if socket_path:
        argv += ["--socket", target.socket_path]
    env = {k: v for k, v in os.environ.items() if k != "MEITH_SOCKET"}
    env["MEITH_HOME"] = str(home.root)
    # Detached (own session, no terminal, no pipes back to us): it outlives this bridge and
    # its console output must never reach the MCP stream. Its logs go to logs.jsonl.
    proc = subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StartError(
                f"meith serve exited with {proc.returncode} while starting; see {home.logs_path}"
            )
        path = target.socket_path if socket_path else resolve_target(home).socket_path
        if can_connect(path):
            return path, True
        time.sleep(0.05)
    raise StartError(f"meith serve did not start within {START_TIMEOUT_S:g}s; see {home.logs_path}")
