"""A real `meith serve` in a subprocess, and the real `meith` CLI against it.

The one launcher of the tests and the benchmarks (bench/ puts the repository root on
sys.path and imports it). Used through the `meith_server` fixture (tests/conftest.py):

    srv = meith_server()                      # starts `meith serve` on a temp socket and home
    srv.cli("tools", "--json")                # CompletedProcess of `meith tools --json`
    env = srv.call("app_health")              # the JSON envelope of `meith call ... --json`
    srv.approve("git"); srv.grant("writes-files", tool="git_commit")
    srv.stop()                                # SIGTERM; returns the exit code
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from meith_core import MeithHome

BIN_DIR = Path(sys.executable).parent
MEITH = (
    str(BIN_DIR / "meith") if (BIN_DIR / "meith").exists() else (shutil.which("meith") or "meith")
)
START_TIMEOUT_S = 60.0


def wait_until(predicate: Any, timeout: float = 30.0, interval: float = 0.02) -> bool:
    """Poll `predicate` until it is true or `timeout` passes (a liveness bound, not a speed
    assertion); returns whether it became true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def install_plugin_module(
    site: Path, plugin_id: str, source: str, obj: str, *, version: str = "0.1.0"
) -> Path:
    """Install a one-module plugin the way pip would, as far as discovery sees: the module
    `meith_<id>_plugin` and a `.dist-info` whose entry point names `obj` in it, in `site`
    (a directory for PYTHONPATH). Returns `site`."""
    site.mkdir(parents=True, exist_ok=True)
    module = f"meith_{plugin_id}_plugin"
    (site / f"{module}.py").write_text(source)
    dist = site / f"{module}-{version}.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: meith-{plugin_id}-plugin\nVersion: {version}\n"
    )
    (dist / "entry_points.txt").write_text(f"[meith.plugins]\n{plugin_id} = {module}:{obj}\n")
    return site


def reap(proc: subprocess.Popen[Any], sig: int = signal.SIGINT, timeout: float = 10.0) -> int:
    """Stop a long-running child (`meith audit --follow`, `meith devlogs`) with `sig` and wait;
    if it does not exit in time it is killed — never leaked — and the test fails saying so."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"{proc.args!r} did not exit on signal {sig}; killed") from None


def base_env(
    home: Path, extra: dict[str, str] | None = None, drop: tuple[str, ...] = ()
) -> dict[str, str]:
    # Not inherited: MEITH_* (each test picks its runtime), PYTHONUNBUFFERED (the CLI must be
    # live through pipes on its own, as it is for users), and whatever prefixes `drop` names.
    drop = ("MEITH_", *drop)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(drop) and k != "PYTHONUNBUFFERED"
    }
    for keep in ("MEITH_BROWSER_EXECUTABLE", "MEITH_REQUIRE_BROWSER"):
        if keep in os.environ:
            env[keep] = os.environ[keep]
    env["MEITH_HOME"] = str(home)
    env.update(extra or {})
    return env


class MeithServer:
    def __init__(
        self,
        home: Path,
        *,
        approvals: str = "deny",
        env: dict[str, str] | None = None,
        plugins: str | None = None,
        extra_args: tuple[str, ...] = (),
        socket: str | None = None,
        command: tuple[str, ...] = (MEITH,),
        drop_env: tuple[str, ...] = (),
    ) -> None:
        """`command` runs instead of the `meith` executable (a profiler wrapper); `drop_env`
        names more environment prefixes the runtime does not inherit."""
        self.home = MeithHome(home).ensure()
        # A short socket path: pytest's tmp paths can exceed the 107-byte sun_path limit.
        self._sockdir = tempfile.mkdtemp(prefix="meith-", dir="/tmp")
        self.socket = socket or os.path.join(self._sockdir, "s.sock")
        extra_env = dict(env or {})
        if plugins is not None:
            extra_env["MEITH_PLUGINS"] = plugins
        self.env = base_env(self.home.root, extra_env, drop_env)
        self.cli_env = {**self.env, "MEITH_SOCKET": self.socket}
        self._out = open(self.home.root / "serve.stdout", "w+b")  # noqa: SIM115 - closed in stop()
        self._err = open(self.home.root / "serve.stderr", "w+b")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                *command,
                "serve",
                "--socket",
                self.socket,
                "--approvals",
                approvals,
                "--log-format",
                "json",
                *extra_args,
            ],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=self._err,
            start_new_session=True,
        )
        self.pid = self.proc.pid
        self.last: subprocess.CompletedProcess[str] | None = None
        self._wait_listening()

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if b"listening on" in Path(self._out.name).read_bytes():
                return
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"meith serve exited with {self.proc.returncode}:\n{self.output()}"
                )
            time.sleep(0.05)
        raise RuntimeError(f"meith serve did not start within {START_TIMEOUT_S}s:\n{self.output()}")

    def output(self) -> str:
        out = Path(self._out.name).read_text(errors="replace")
        err = Path(self._err.name).read_text(errors="replace")
        return f"--- stdout\n{out}\n--- stderr\n{err}"

    @property
    def stdout(self) -> str:
        return Path(self._out.name).read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return Path(self._err.name).read_text(errors="replace")

    # -- driving the CLI ----------------------------------------------------------------

    def cli(
        self,
        *args: str,
        input: str | None = None,
        timeout: float = 60,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        self.last = subprocess.run(
            [MEITH, *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**self.cli_env, **(env or {})},
            cwd=cwd,
        )
        return self.last

    def call(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *cli_args: str,
        timeout: float = 60,
        cwd: str | None = None,
    ) -> dict[str, Any]:
        """`meith call TOOL --arg-json ... --json`; returns the envelope (exit code in `.last`)."""
        proc = self.cli(
            "call",
            tool,
            "--arg-json",
            json.dumps(arguments or {}),
            "--json",
            *cli_args,
            timeout=timeout,
            cwd=cwd,
        )
        try:
            envelope = json.loads(proc.stdout)
        except ValueError:
            raise AssertionError(
                f"meith call {tool} printed no JSON (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
            ) from None
        assert isinstance(envelope, dict)
        return envelope

    def content(self, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        """The content of a successful `meith call` (raises when the call failed)."""
        envelope = self.call(tool, arguments)
        if envelope.get("ok") is not True:
            raise RuntimeError(f"meith call {tool} failed: {envelope}")
        return envelope.get("content")

    def approve(self, plugin_id: str, *capabilities: str) -> None:
        proc = self.cli("plugins", "approve", plugin_id, *capabilities)
        assert proc.returncode == 0, proc.stderr

    def grant(
        self,
        *capabilities: str,
        tool: str | None = None,
        cwd: str | None = None,
        caller: str = "cli",
        uses: int | None = None,
    ) -> str:
        args = ["grants", "add", "--caller", caller, "--json"]
        for cap in capabilities:
            args += ["--capability", cap]
        if tool:
            args += ["--tool", tool]
        if cwd:
            args += ["--cwd", cwd]
        if uses is not None:
            args += ["--uses", str(uses)]
        proc = self.cli(*args)
        assert proc.returncode == 0, proc.stderr
        return str(json.loads(proc.stdout)["id"])

    def audit_records(self) -> list[dict[str, Any]]:
        """The outcome record of every call so far (a privileged call also has an intent
        record, written before it runs; trail records are left out)."""
        records: list[dict[str, Any]] = []
        for path in sorted(self.home.root.glob("audit*.jsonl*")):
            for line in path.read_text().splitlines():
                if line.strip():
                    record = json.loads(line)
                    if record.get("kind", "outcome") == "outcome":
                        records.append(record)
        return records

    # -- lifecycle ----------------------------------------------------------------------

    def send_signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            os.kill(self.pid, sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        """Signal the runtime and wait; returns its exit code (SIGKILL if it does not stop)."""
        if self.proc.poll() is None:
            os.kill(self.pid, sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        for fh in (self._out, self._err):
            if not fh.closed:
                fh.close()
        shutil.rmtree(self._sockdir, ignore_errors=True)
        return self.proc.returncode


class PtyServe:
    """`meith serve` on a real pseudo-terminal, as a person starts it; `read_until` reads its
    screen."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.sock = str(Path(tempfile.mkdtemp(prefix="mp-", dir="/tmp")) / "s.sock")
        self.cli_env = {**env, "MEITH_SOCKET": self.sock}
        self.screen = b""
        # openpty + Popen rather than pty.fork: forking a multi-threaded test process in Python
        # can deadlock the child (Python 3.12 warns), while Popen forks and execs in C.
        self.fd, terminal = os.openpty()
        try:
            self.proc = subprocess.Popen(
                [MEITH, "serve", "--socket", self.sock, *args],
                env=env,
                stdin=terminal,
                stdout=terminal,
                stderr=terminal,
                start_new_session=True,
            )
        finally:
            os.close(terminal)
        self.pid = self.proc.pid

    def read_until(self, needle: bytes, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while needle not in self.screen and time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                try:
                    self.screen += os.read(self.fd, 65536)
                except OSError:
                    break
        assert needle in self.screen, self.screen.decode(errors="replace")
        return self.screen.decode(errors="replace")

    def call(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [MEITH, "call", *args, "--json"],
            env=self.cli_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def close(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait()
        os.close(self.fd)
