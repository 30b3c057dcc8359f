"""The README followed literally by a newcomer: the quick start's install command in a fresh
home, then every command of the walkthrough's transcripts typed as shown, each printing the
lines shown under it, then the commands of the pages the README links to (configuration, MCP
grants, the protocol); then a plugin written from docs/plugins.md's example is pip-installed
next to meith-core while the runtime runs, and its tool is called without a restart.

Slow: the install makes a virtual environment and pip-installs meith and its plugins into it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from tests.harness import reap, wait_until
from tests.readme import (
    ROOT,
    Block,
    assert_shown,
    doc_block,
    doc_section,
    readme_block,
    readme_section,
    transcript,
)

# The installs (a venv with meith and its plugins, then a plugin) take most of it: about 2 min
# on a quiet 2-core machine, over 5 on a busy one, so this test has more than the suite's 300 s.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _person_env(home: Path) -> dict[str, str]:
    """A newcomer's shell: their own HOME (so `~/.meith`, `~/.local/bin` are theirs), `meith`
    found through `~/.local/bin` on PATH, no MEITH_* from the test run. pip's and git's
    configuration and pip's cache stay the machine's (XDG_* pointing at the real ones)."""
    real_home = Path.home()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEITH_", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PIP_USER"))
    }
    env.setdefault("XDG_CONFIG_HOME", str(real_home / ".config"))
    env.setdefault("XDG_CACHE_HOME", str(real_home / ".cache"))
    env.pop("XDG_DATA_HOME", None)  # install.py puts the venv under it
    env["HOME"] = str(home)
    env["PATH"] = f"{home / '.local' / 'bin'}{os.pathsep}{env['PATH']}"
    for keep in ("MEITH_BROWSER_EXECUTABLE",):
        if keep in os.environ:
            env[keep] = os.environ[keep]
    return env


def _sh(command: str, cwd: Path, env: dict[str, str], rc: int = 0) -> tuple[int, str]:
    """`command` in bash, `$?` starting as `rc` (so `echo $?` sees the previous command's)."""
    done = subprocess.run(
        ["bash", "-c", f"(exit {rc}); {command}"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
        check=False,
    )
    return done.returncode, done.stdout


def _ok(command: str, cwd: Path, env: dict[str, str], rc: int = 0) -> str:
    """The output of `command`, which must succeed (exit `rc`)."""
    got, out = _sh(command, cwd, env)
    assert got == rc, f"`{command}` exited {got}, not {rc}:\n{out}"
    return out


def _run_transcripts(console: list[Block], cwd: Path, env: dict[str, str], home: Path) -> None:
    rc = 0
    for block in console:
        for step in transcript(block):
            rc, out = _sh(step.command, cwd, env, rc)
            shows_error = any(line.startswith("error (") for line in step.expected)
            assert rc == 0 or shows_error, f"`{step.command}` exited {rc}:\n{out}"
            assert_shown(step, out, str(home))


def test_the_readme_as_a_newcomer_follows_it(tmp_path: Path) -> None:
    home = tmp_path / "you"
    home.mkdir()
    env = _person_env(home)
    (home / ".gitconfig").write_text("[user]\n\tname = You\n\temail = you@example.com\n")

    # Quick start: install, then the runtime in the foreground of "one terminal".
    quick = readme_block("python3 install.py && ", "sh").text.strip()
    install, serve_command = quick.split(" && ")
    installed = _ok(install, ROOT, env)  # "from a clone of this repository"
    venv_python = home / ".local" / "share" / "meith" / "venv" / "bin" / "python"
    assert f"meith's Python is {venv_python}" in installed, installed  # for Python examples
    log = tmp_path / "serve.out"
    # In "one terminal": a real one, so it prints what a person sees (its log included).
    serve, copier = _on_a_terminal(f"exec {serve_command}", home, env, log)
    try:
        assert wait_until(lambda: b"runtime started" in log.read_bytes(), 120), log.read_text()
        walkthrough = readme_section("Walkthrough")
        started = transcript(walkthrough[0])
        assert [s.command for s in started] == ["meith serve"]
        assert_shown(started[0], _screen(log), str(home))

        # "In another terminal, inside a git repository": ~/src/demo with a change to commit.
        repo = home / "src" / "demo"
        repo.mkdir(parents=True)
        for git in ("init -q -b main", "add README.md", "commit -q -m first"):
            if git == "add README.md":
                (repo / "README.md").write_text("# demo\n")
            _sh(f"git {git}", repo, env)
        with (repo / "README.md").open("a") as readme:
            readme.write("a second line\n")
        _run_transcripts(walkthrough[1:], repo, env, home)
        assert "second commit" in _sh("git log --format=%s", repo, env)[1]

        _run_transcripts(doc_section("docs/configuration.md"), repo, env, home)

        # Standing grants for agents, as the MCP page shows them (in a project of its own).
        (home / "src" / "app").mkdir()
        for line in doc_block(
            "docs/mcp.md", "--caller agent --agent claude-code", "sh"
        ).text.splitlines():
            assert _ok(line, repo, env)

        # The protocol, from the standard library (and with socat where it is installed).
        one_liner = doc_block("docs/protocol.md", "import socket,os,sys", "sh").text.strip()
        out = _ok(one_liner, repo, env)
        assert '"type":"tool_result"' in out, out
        assert '"ok":true' in out, out
        if shutil.which("socat"):
            (step,) = transcript(doc_block("docs/protocol.md", "socat - UNIX-CONNECT", "console"))
            assert '"type":"tool_result"' in _ok(step.command, repo, env)

        _install_the_example_plugin_while_it_runs(tmp_path, repo, env, log)
    finally:
        assert reap(serve, signal.SIGTERM, 60) == 0, log.read_text()
        copier.join(30)


def _on_a_terminal(
    command: str, cwd: Path, env: dict[str, str], log: Path
) -> tuple[subprocess.Popen[bytes], threading.Thread]:
    """`command` in bash on a pseudo-terminal, its screen copied to `log` as it comes."""
    log.write_bytes(b"")
    master, terminal = os.openpty()
    try:
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            env=env,
            stdin=terminal,
            stdout=terminal,
            stderr=terminal,
            start_new_session=True,
        )
    finally:
        os.close(terminal)

    def copy() -> None:
        with log.open("ab") as sink:
            while True:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the terminal closed with its last process
                    break
                if not data:
                    break
                sink.write(data)
                sink.flush()
        os.close(master)

    copier = threading.Thread(target=copy, daemon=True)
    copier.start()
    return proc, copier


def _screen(log: Path) -> str:
    """What the terminal showed, as text: without colours and carriage returns."""
    return re.sub(r"\x1b\[[0-9;]*m", "", log.read_text(errors="replace")).replace("\r", "")


def _install_the_example_plugin_while_it_runs(
    tmp_path: Path, repo: Path, env: dict[str, str], log: Path
) -> None:
    """ "Install it next to meith-core (`python3 install.py ./meith-plugins-hello` ...) and it
    appears in `meith plugins` and `meith tools`; its privileged tools work once the user runs
    `meith plugins approve hello`". The install names the plugin and installs only it."""
    project = tmp_path / "meith-plugins-hello"
    package = project / "src" / "meith_plugins_hello"
    package.mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        doc_block("docs/plugins.md", "meith-plugins-hello", "toml").text
    )
    (package / "__init__.py").write_text(
        doc_block("docs/plugins.md", "class Plugin:", "python").text
    )
    added = _ok(f"python3 {ROOT / 'install.py'} ./{project.name}", tmp_path, env)
    assert "meith-core and the git, process, browser and files plugins" not in added, added
    assert "installed meith-plugins-hello 0.1.0: plugin hello" in added, added

    listed = _ok("meith plugins", repo, env)
    assert "hello  (meith-plugins-hello 0.1.0)  loaded" in listed, listed
    assert "write_note" in _ok("meith tools", repo, env)
    denied = _ok("meith call write_note --name note.txt --text hi", repo, env, rc=4)
    assert "meith plugins approve hello" in denied
    approved = _ok("meith plugins approve hello", repo, env)
    assert approved.startswith("Approved hello 0.1.0 for: writes-files"), approved
    # The walkthrough's grant (writes-files under this repository) covers it.
    _ok("meith call write_note --name note.txt --text hi", repo, env)
    assert (repo / "note.txt").read_text() == "hi"
    assert "plugins: core, browser, files, git, process" in log.read_text()  # never restarted
