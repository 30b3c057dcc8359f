"""Running rg: finding the binary, and one rg as a bounded stream (its pipes served off the
event loop, killed and reaped with its call). The argv is built by `ripgrep`, the one builder."""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Final

import anyio
import anyio.to_thread

from meith_core import ErrorCode, ToolError

_READ_CHUNK: Final = 64 * 1024
#: Of rg's standard error, the start is kept (its message); the rest is read and dropped.
_MAX_STDERR: Final = 64 * 1024
_ENV_KEYS: Final = ("HOME", "XDG_CONFIG_HOME", "LANG", "LC_ALL")


class RipgrepMissing(RuntimeError):
    pass


def locate() -> str | None:
    """The `rg` of the ripgrep wheel beside this interpreter, else one on PATH."""
    candidates = [
        Path(sysconfig.get_path("scripts")) / "rg",
        Path(sys.executable).parent / "rg",
    ]
    with contextlib.suppress(KeyError):
        candidates.append(Path(sysconfig.get_path("scripts", f"{os.name}_user")) / "rg")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("rg")


def version(rg: str) -> str:
    done = subprocess.run(
        [rg, "--version"], capture_output=True, text=True, timeout=10, check=False
    )
    return (done.stdout.splitlines() or ["?"])[0]


def _env() -> dict[str, str]:
    env = {k: os.environ[k] for k in _ENV_KEYS if k in os.environ}
    env["PATH"] = os.defpath
    return env


class Run:
    """One rg: started with Popen, its pipes served by a worker thread with `selectors`.

    Not asyncio's subprocess transport: its child watcher and transports cost several
    milliseconds per process, against a listing or search that takes tens. Each read of rg's
    standard output goes to `consume` (in the worker thread) until rg closes it or `consume`
    says it has enough, which kills rg. A cancelled call kills and reaps rg before the
    cancellation goes on: no rg outlives its call.
    """

    def __init__(self, argv: list[str], cwd: str, pass_fds: tuple[int, ...] = ()) -> None:
        self.argv = argv
        self.cwd = cwd
        self.pass_fds = pass_fds
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr = b""
        self.stopped_early = False

    async def feed(self, consume: Callable[[bytes], bool]) -> None:
        """Run rg, passing each read of its output to `consume` (True: stop rg now)."""
        # Popen only starts the child (vfork + exec); nothing here waits for it on the loop.
        self.proc = proc = subprocess.Popen(  # noqa: ASYNC220
            self.argv,
            cwd=self.cwd,
            env=_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
            pass_fds=self.pass_fds,
        )
        try:
            await anyio.to_thread.run_sync(self._serve, consume, abandon_on_cancel=True)
        except BaseException:
            # Cancelled (or `consume` failed): the thread serving the pipes was abandoned or
            # ended; killing rg ends it, and rg is reaped before the call goes on. Shielded,
            # so a cancelled call still waits for that (SIGKILL makes the wait short).
            _kill(proc)
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(proc.wait)
            raise

    def _serve(self, consume: Callable[[bytes], bool]) -> None:
        proc = self.proc
        assert proc is not None
        assert proc.stdout is not None
        assert proc.stderr is not None
        stdout, stderr = proc.stdout, proc.stderr
        err = bytearray()
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(stdout, selectors.EVENT_READ)
                sel.register(stderr, selectors.EVENT_READ)
                while sel.get_map():
                    for key, _events in sel.select():
                        chunk = os.read(key.fd, _READ_CHUNK)
                        if not chunk:
                            sel.unregister(key.fileobj)
                        elif key.fileobj is stderr:
                            if len(err) < _MAX_STDERR:  # keep the start: rg's message
                                err += chunk[: _MAX_STDERR - len(err)]
                        elif consume(chunk):
                            self.stopped_early = True
                            _kill(proc)
                            return
        except BaseException:
            _kill(proc)  # `consume` failed: rg is not left writing to a pipe nobody reads
            raise
        finally:
            stdout.close()
            stderr.close()
            proc.wait()
            self.stderr = bytes(err)

    def failure(self) -> ToolError | None:
        """An error when rg failed (exit 2 with nothing useful found, or a bad pattern)."""
        assert self.proc is not None
        text = self.stderr.decode("utf-8", "replace").strip()
        if self.stopped_early or self.proc.returncode in (0, 1):
            return None
        if "regex parse error" in text or "error parsing regex" in text or "size limit" in text:
            return ToolError(
                ErrorCode.VALIDATION_ERROR,
                f"query is not a valid regular expression: {text[:2000]}",
                {"reason": "bad pattern"},
            )
        if text:
            return ToolError(ErrorCode.TOOL_FAILED, f"ripgrep failed: {text[:2000]}")
        return None


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


__all__ = ["RipgrepMissing", "Run", "locate", "version"]
