"""A new plugin author's first fifteen minutes, as the plugin guide tells them: in a fresh venv
with only meith-core installed from this tree, scaffold a plugin, test it, install it, approve
it, call its read-only tool through a real `meith serve`, and check it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.harness import wait_until

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _run(
    *argv: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in argv],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
        env=env,
        check=False,
    )
    assert done.returncode == 0, f"{argv}\n{done.stdout}\n{done.stderr}"
    return done


def test_scaffold_test_install_approve_call_check(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    bin_dir = venv / "bin"
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("MEITH_", "VIRTUAL_ENV", "PYTHON"))
    }
    env |= {"MEITH_HOME": str(tmp_path / "home"), "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"}
    _run(bin_dir / "pip", "install", "-q", ROOT / "meith_core", env=env)

    # 1. scaffold
    project = tmp_path / "meith-weather"
    _run(bin_dir / "meith", "plugins", "new", "weather", "--dir", project, env=env)
    # 2. the generated tests pass as generated
    _run(bin_dir / "pip", "install", "-q", "-e", f"{project}[test]", env=env)
    tested = _run(bin_dir / "pytest", "-q", "-p", "no:cacheprovider", cwd=project, env=env)
    assert " passed" in tested.stdout
    assert "failed" not in tested.stdout
    # 3. installed (not editable) it is discovered
    _run(bin_dir / "pip", "install", "-q", project, env=env)
    listed = _run(bin_dir / "meith", "plugins", env=env).stdout
    assert "weather  (meith-weather 0.1.0)  loaded" in listed
    assert "weather_count_lines, weather_write_note" in listed
    # 4. approve
    approved = _run(bin_dir / "meith", "plugins", "approve", "weather", env=env).stdout
    assert approved.startswith("Approved weather 0.1.0 for: read-only, writes-files")
    # 5. its read-only tool through a real runtime
    sock_dir = Path(tempfile.mkdtemp(prefix="meith-", dir="/tmp"))
    socket = str(sock_dir / "s.sock")
    out = open(tmp_path / "serve.out", "w+b")  # noqa: SIM115 - closed below
    serve = subprocess.Popen(
        [bin_dir / "meith", "serve", "--socket", socket, "--log-format", "json"],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert wait_until(lambda: b"listening on" in (tmp_path / "serve.out").read_bytes(), 120)
        assert b"plugins: core, weather" in (tmp_path / "serve.out").read_bytes()
        called = _run(
            bin_dir / "meith",
            "call",
            "weather_count_lines",
            "--path",
            "README.md",
            "--json",
            cwd=project,
            env={**env, "MEITH_SOCKET": socket},
        )
        envelope = json.loads(called.stdout)
        assert envelope["ok"] is True
        assert envelope["content"]["lines"] == len((project / "README.md").read_text().splitlines())
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(60)
        out.close()
    # 6. check passes, for the installed plugin and for the project directory
    checked = _run(bin_dir / "meith", "plugins", "check", env=env).stdout
    assert checked.rstrip().endswith("checked 1 plugin: 0 errors, 0 warnings")
    checked = _run(bin_dir / "meith", "plugins", "check", ".", cwd=project, env=env).stdout
    assert "weather (meith-weather 0.1.0): ok - 2 tools" in checked
