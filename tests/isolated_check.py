"""Run by `nox -s isolated` in a venv holding only meith-core and meith-plugins-git.

Proves the plugin layout: the git plugin is discovered and loads, the process and browser
plugins are absent, and a real `meith serve` offers the git tools.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from importlib.metadata import entry_points
from pathlib import Path


def main() -> int:
    names = {ep.name for ep in entry_points(group="meith.plugins")}
    assert "git" in names, names
    assert not names & {"process", "browser", "files"}, f"unexpected plugins installed: {names}"
    for module in (
        "meith_plugins_process",
        "meith_plugins_browser",
        "meith_plugins_files",
        "playwright",
        "psutil",
    ):
        try:
            __import__(module)
        except ImportError:
            continue
        raise AssertionError(f"{module} should not be importable in the isolated venv")

    home = Path(tempfile.mkdtemp(prefix="meith-iso-"))
    sock = os.path.join(tempfile.mkdtemp(prefix="mi-", dir="/tmp"), "s.sock")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MEITH_")},
        "MEITH_HOME": str(home),
    }
    meith = str(Path(sys.executable).parent / "meith")
    plugins = json.loads(
        subprocess.run(
            [meith, "plugins", "--json"], env=env, check=True, capture_output=True, text=True
        ).stdout
    )
    status = {p["id"]: p["status"] for p in plugins}
    assert status == {"core": "loaded", "git": "loaded"}, status

    serve = subprocess.Popen(
        [meith, "serve", "--socket", sock, "--approvals", "deny"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # Ready means accepting: the socket file exists from the bind, before the plugins have
        # loaded and the runtime listens.
        deadline = time.monotonic() + 30
        while not _accepts(sock):
            assert serve.poll() is None, serve.communicate()
            assert time.monotonic() < deadline, "meith serve did not start"
            time.sleep(0.05)
        tools = json.loads(
            subprocess.run(
                [meith, "tools", "--json", "--socket", sock],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        plugins_of_tools = {t["plugin"] for t in tools}
        assert plugins_of_tools == {"core", "git"}, plugins_of_tools
        assert any(t["name"] == "git_status" for t in tools)
    finally:
        serve.terminate()
        serve.wait(timeout=10)
        shutil.rmtree(home, ignore_errors=True)
    print(f"isolated: ok — plugins {sorted(status)}, {len(tools)} tools, no process/browser plugin")
    return 0


def _accepts(path: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


if __name__ == "__main__":
    sys.exit(main())
