"""`LD_AUDIT` in a command's environment runs the caller's library before the walls."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import compile_constructor_library


def _audit(lab: Lab, *, confined: bool) -> Seen:
    ws, out = lab.dir("ld-audit"), lab.dir("ld-audit", outside=True)
    canary = out / "ran"
    lib = compile_constructor_library(ws, canary)
    done = lab.agent(ws, confined=confined).run("true", env={"LD_AUDIT": str(lib)})
    ran = canary.read_text().split() if canary.exists() else []
    return Seen(
        bool(ran), f"exit {done['exitCode']}; the library wrote outside in {len(ran)} process(es)"
    )


ENTRY = Entry(
    id="env-audit-run-command",
    wall="environment",
    attack="An agent holding `starts-process --cwd WS` compiles an audit library that writes "
    "OUTSIDE/ran and calls `run_command true` with `env: {LD_AUDIT: WS/evil.so}`.",
    assertion="the library never writes outside",
    control=partial(_audit, confined=False),
    trick=partial(_audit, confined=True),
    needs=Needs(plugins=("process",), programs=("cc",), walls=("writes",)),
)
