"""A loader variable in a dev server's environment runs the caller's library before the
walls are up: in the wrapper, outside every wall."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import compile_constructor_library


def _preload(lab: Lab, *, confined: bool) -> Seen:
    ws, out = lab.dir("preload"), lab.dir("preload", outside=True)
    canary = out / "ran"
    lib = compile_constructor_library(ws, canary)
    text = lab.agent(ws, confined=confined).dev(
        "echo seen:$LD_PRELOAD", env={"LD_PRELOAD": str(lib)}
    )
    ran = canary.read_text().split() if canary.exists() else []
    return Seen(
        bool(ran),
        f"the library's constructor wrote outside in {len(ran)} process(es); the command saw: {text.splitlines()[0] if text else ''}",
    )


ENTRY = Entry(
    id="env-preload-dev-server",
    wall="environment",
    attack="An agent holding `starts-process --cwd WS` compiles a library whose constructor "
    "writes OUTSIDE/ran, and starts a dev server with `env: {LD_PRELOAD: WS/evil.so}`.",
    assertion="the constructor never writes outside (it never runs before the walls)",
    control=partial(_preload, confined=False),
    trick=partial(_preload, confined=True),
    needs=Needs(plugins=("process",), programs=("cc",), walls=("writes",)),
)
