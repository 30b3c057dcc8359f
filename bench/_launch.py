"""The benchmarks start `meith serve` with the tests' launcher (`tests/harness.py`): one
launcher, so a change to how the runtime starts reaches both or breaks both."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.harness import MEITH, MeithServer  # noqa: E402 - needs the root on sys.path

__all__ = ["MEITH", "ROOT", "MeithServer", "serve"]


def serve(
    work: Path,
    *,
    plugins: str,
    grant: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    drop_env: tuple[str, ...] = (),
) -> MeithServer:
    """`meith serve` with only `plugins` (approved, and a standing cli grant for each of
    `grant` when given); its home under `work`."""
    server = MeithServer(work / "meith-home", plugins=plugins, env=env, drop_env=drop_env)
    if grant:
        server.approve(plugins)
        for capability in grant:
            server.grant(capability)
    return server
