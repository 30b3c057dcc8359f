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

Two candidate fixes, measured the same way (sketches that keep the observable behaviour for the
benchmark's tool, not reviewed implementations):

- `deferred-audit`: the audit record is written in the next event-loop iteration, after the
  server has written the result frame (same record, same CPU; off the response path).
- `one-future-race`: an async tool still runs in a task of its own, raced against the cancel
  token and the deadline, but through one future resolved by callbacks instead of a second
  task (`CancelToken.wait`) and `asyncio.wait`.
"""

from __future__ import annotations

import asyncio
import sys
from importlib.metadata import entry_points
from typing import Any

VARIANTS = (
    "full",
    "no-audit",
    "no-summaries",
    "direct-await",
    "lean",
    "deferred-audit",
    "one-future-race",
)


def apply(variant: str) -> None:
    global ORIGINAL_RUN
    from meith_core import registry

    ORIGINAL_RUN = registry.ToolRegistry._run
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
    if variant == "deferred-audit":
        audit = registry.ToolRegistry._audit

        def deferred(self: Any, *args: Any) -> None:
            asyncio.get_running_loop().call_soon(audit, self, *args)

        registry.ToolRegistry._audit = deferred  # type: ignore[method-assign,assignment]
    if variant == "one-future-race":
        registry.ToolRegistry._run = one_future_race  # type: ignore[method-assign]


async def one_future_race(
    self: Any, defn: Any, ctx: Any, args: Any, token: Any, timeout_ms: int | None
) -> Any:
    from meith_core import registry
    from meith_core._errors import ErrorCode
    from meith_core._results import error_result

    if token.is_set() or not defn.is_async:
        return await ORIGINAL_RUN(self, defn, ctx, args, token, timeout_ms)
    loop = asyncio.get_running_loop()
    task = loop.create_task(registry._invoke_async(defn, ctx, args))
    self._tasks.add(task)
    task.add_done_callback(self._forget_task)
    settled: asyncio.Future[None] = loop.create_future()

    def settle(*_: Any) -> None:
        if not settled.done():
            settled.set_result(None)

    task.add_done_callback(settle)
    remove = token.add_callback(lambda: loop.call_soon_threadsafe(settle))
    timer = loop.call_later(timeout_ms / 1000, settle) if timeout_ms else None
    try:
        await settled
    except asyncio.CancelledError:
        token.cancel("caller cancelled")
        task.cancel()
        raise
    finally:
        remove()
        if timer is not None:
            timer.cancel()
    if not task.done():
        if token.is_set():
            done, _ = await asyncio.wait({task}, timeout=registry.CANCEL_GRACE_S)
            if task not in done:
                task.cancel()
                return error_result(ErrorCode.CANCELLED, f'Tool "{defn.name}" was cancelled')
        else:
            token.cancel("timeout")
            task.cancel()
            return error_result(
                ErrorCode.TIMEOUT, f'Tool "{defn.name}" timed out after {timeout_ms}ms'
            )
    if task.cancelled():
        return error_result(ErrorCode.TOOL_FAILED, f'Tool "{defn.name}" was cancelled from inside')
    return self._normalise(defn, task.result())


ORIGINAL_RUN: Any = None


if __name__ == "__main__":
    apply(sys.argv[1])
    sys.argv = ["meith", *sys.argv[2:]]
    (script,) = entry_points(group="console_scripts", name="meith")
    script.load()()
