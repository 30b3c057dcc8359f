"""`meith serve` with one part of the call pipeline patched out, for `bench_core.py --profile`.

    python _core_serve_variant.py VARIANT serve --socket PATH ...

Not a configuration anyone should run: each variant answers "how fast would a call be if this
part cost nothing?", measured through the real socket server and client. The patches live in
this process only; meith_core is not modified.

- `full`: nothing patched (the reference, started the same way as the variants).
- `no-audit`: `ToolRegistry._audit` does nothing (no entry, no summaries, no write).
- `no-summaries`: the audit record is written, with empty argument/result summaries.
- `direct-await`: an async tool is awaited directly instead of running in a task of its own
  raced against the cancel token and the deadline (`ToolRegistry._run`).
- `lean`: `no-audit` and `direct-await` together.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points
from typing import Any

VARIANTS = ("full", "no-audit", "no-summaries", "direct-await", "lean")


def apply(variant: str) -> None:
    from meith_core import registry

    if variant not in VARIANTS:
        raise SystemExit(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")
    if variant in ("no-audit", "lean"):

        def no_audit(self: Any, *args: Any, **kwargs: Any) -> None:
            return None

        registry.ToolRegistry._audit = no_audit  # type: ignore[method-assign]
    if variant == "no-summaries":
        registry.summarize = lambda value: ""  # type: ignore[attr-defined]
    if variant in ("direct-await", "lean"):

        async def direct(
            self: Any, defn: Any, ctx: Any, args: Any, token: Any, timeout_ms: Any
        ) -> Any:
            return self._normalise(defn, registry._Outcome(value=await defn.func(ctx, args)))

        registry.ToolRegistry._run = direct  # type: ignore[method-assign]


if __name__ == "__main__":
    apply(sys.argv[1])
    sys.argv = ["meith", *sys.argv[2:]]
    (script,) = entry_points(group="console_scripts", name="meith")
    script.load()()
