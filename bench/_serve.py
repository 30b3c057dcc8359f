"""A real `meith serve` for the benchmarks: a private home and socket, one plugin, optionally
approved and granted for the CLI. (bench_core.py keeps its own launcher: it also starts the
echo floor and the MCP peer with the same process bookkeeping.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
MEITH = str(BIN / "meith") if (BIN / "meith").exists() else (shutil.which("meith") or "meith")
KEEP_ENV = ("MEITH_BROWSER_EXECUTABLE",)


class ServeProcess:
    def __init__(
        self,
        work: Path,
        *,
        plugins: str,
        grant: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        drop_env: tuple[str, ...] = ("MEITH_",),
    ) -> None:
        work.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.home = work / "meith-home"
        self.home.mkdir(mode=0o700)
        self.socket = str(work / "s.sock")
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(drop_env) or k in KEEP_ENV
        }
        self.env.update(env or {})
        self.env.update(MEITH_HOME=str(self.home), MEITH_PLUGINS=plugins, PYTHONUNBUFFERED="1")
        self.cli_env = {**self.env, "MEITH_SOCKET": self.socket}
        self.log = open(work / "serve.out", "w+b")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                MEITH,
                "serve",
                "--socket",
                self.socket,
                "--approvals",
                "deny",
                "--log-format",
                "json",
            ],
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while b"listening on" not in Path(self.log.name).read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(Path(self.log.name).read_text())
            time.sleep(0.05)
        if grant:
            self.cli("plugins", "approve", plugins)
            for capability in grant:
                self.cli("grants", "add", "--caller", "cli", "--capability", capability)

    def cli(self, *args: str) -> str:
        """Run `meith ARGS` against this runtime; its stdout (raises on a non-zero exit)."""
        out = subprocess.run(
            [MEITH, *args], env=self.cli_env, capture_output=True, text=True, timeout=120
        )
        if out.returncode != 0:
            raise RuntimeError(f"meith {' '.join(args)}: {out.stdout}{out.stderr}")
        return out.stdout

    def call(self, tool: str, args: dict[str, Any]) -> Any:
        """The content of `meith call TOOL --json` (raises when the tool failed)."""
        envelope = json.loads(self.cli("call", tool, "--arg-json", json.dumps(args), "--json"))
        if not envelope["ok"]:
            raise RuntimeError(envelope)
        return envelope["content"]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()
