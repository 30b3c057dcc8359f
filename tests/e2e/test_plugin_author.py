"""A new plugin author's first fifteen minutes, exactly as docs/plugin-guide.md's tutorial
says: its shell blocks are run in order (activate, scaffold, test in the plugin's own venv,
check, install, list, approve, serve, call, build) in a fresh venv where `python3 install.py`
puts meith's (`~/.local/share/meith/venv` of a new HOME), holding only meith-core installed
from this tree: nothing comes from an index that does not have it, and the plugin's test tools
stay out of meith's environment."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import wait_until

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "plugin-guide.md"

pytestmark = pytest.mark.slow


def tutorial_commands() -> list[str]:
    tutorial = GUIDE.read_text().split("## Tutorial", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", tutorial, flags=re.S)
    return [line.strip() for b in blocks for line in b.splitlines() if line.strip()]


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


def test_the_tutorial_runs_as_written_in_a_fresh_venv(tmp_path: Path) -> None:
    home = tmp_path / "you"
    venv = home / ".local" / "share" / "meith" / "venv"
    _run(sys.executable, "-m", "venv", venv)
    bin_dir = venv / "bin"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEITH_", "VIRTUAL_ENV", "PYTHON", "XDG_DATA_HOME"))
    }
    # pip's configuration and cache stay the machine's.
    env.setdefault("XDG_CONFIG_HOME", str(Path.home() / ".config"))
    env.setdefault("XDG_CACHE_HOME", str(Path.home() / ".cache"))
    env |= {"HOME": str(home), "MEITH_HOME": str(tmp_path / "home")}
    _run(bin_dir / "python", "-m", "pip", "install", "-q", ROOT / "meith_core", env=env)

    commands = tutorial_commands()
    # Activation is the shell's state: each command below runs in a shell of its own, so it is
    # applied here as `activate` would (its PATH first, VIRTUAL_ENV set).
    assert commands[0] == ". ~/.local/share/meith/venv/bin/activate"
    env |= {"PATH": f"{bin_dir}{os.pathsep}{env['PATH']}", "VIRTUAL_ENV": str(venv)}
    commands = commands[1:]
    assert commands[0] == "meith plugins new weather --dir meith-weather"
    cwd = tmp_path
    out: dict[str, str] = {}
    serve: subprocess.Popen[bytes] | None = None
    serve_log = tmp_path / "serve.out"
    try:
        for command in commands:
            if command.startswith("cd "):
                cwd = (cwd / command[3:]).resolve()
            elif command == "meith serve":
                with serve_log.open("wb") as log:
                    serve = subprocess.Popen(
                        [bin_dir / "meith", "serve"],
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                assert wait_until(lambda: b"listening on" in serve_log.read_bytes(), 120)
                out[command] = serve_log.read_text()
            else:
                out[command] = _run("bash", "-c", command, cwd=cwd, env=env).stdout
    finally:
        if serve is not None:
            serve.send_signal(signal.SIGTERM)
            serve.wait(60)

    project = tmp_path / "meith-weather"
    tested = out[".venv/bin/pytest -q -p no:cacheprovider"]
    assert " passed" in tested
    assert "failed" not in tested
    # The test tools are the plugin's: meith's environment has the plugin, not them.
    assert (project / ".venv" / "bin" / "pytest").exists()
    for tool in ("pytest", "ruff", "mypy"):
        assert not (bin_dir / tool).exists(), tool
    assert out["meith plugins check ."].rstrip().endswith("checked 1 plugin: 0 errors, 0 warnings")
    listed = out["meith plugins"]
    assert "weather  (meith-weather 0.1.0)  loaded" in listed
    assert "weather_count_lines, weather_write_note" in listed
    approved = out["meith plugins approve weather"]
    assert approved.startswith("Approved weather 0.1.0 for: read-only, writes-files")
    assert "plugins: core, weather" in out["meith serve"]
    envelope = json.loads(out["meith call weather_count_lines --path README.md --json"])
    assert envelope["ok"] is True
    assert envelope["content"] == {
        "path": str((project / "README.md").resolve()),
        "lines": len((project / "README.md").read_text().splitlines()),
    }
    assert list((project / "dist").glob("meith_weather-0.1.0-*.whl"))
    # and the installed plugin passes the check as well
    checked = _run(bin_dir / "meith", "plugins", "check", "weather", env=env).stdout
    assert checked.startswith("weather (meith-weather 0.1.0): ok - 2 tools")
