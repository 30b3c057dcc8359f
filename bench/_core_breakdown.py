"""Where one meith call's time goes, measured in-process in CPU microseconds.

Two kinds of figures, all interleaved round-robin (every round times every item once), on the process CPU clock rather than the wall clock: on a shared
machine the wall clock also counts the time other jobs held the core.

The figure kept for each item is its minimum over the rounds: noise on a shared machine only
ever adds time, so the minimum is the best estimate of what the code itself costs.

- Socket-path stages the server runs around the registry for each `tool_call` frame, and the
  client's own work, each timed on its own.
- The registry pipeline by ablation: `ToolRegistry.call` in full, then with one part replaced by
  a no-op (monkeypatched in this process only; meith_core is not modified). The difference is
  what that part costs inside the real pipeline, including its share of allocation and
  event-loop work, which a stand-alone timing would miss.

Some items use private core names (`ToolRegistry._audit`, `_run`, `ServerConnection`,
`frames.result_frame`); an item that no longer fits the core reports n/a instead of failing
the benchmark.

    python bench/_core_breakdown.py [--quick]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOOL = "bench_echo"
TEXT = "hello meith"
RID = "req_0123456789ab"

_clock = time.process_time


@dataclass
class Item:
    name: str
    side: str  # "client", "server" or "pipeline"
    run: Callable[[int], Awaitable[float]]  # n -> CPU seconds for n operations
    in_sum: bool = True


def sync_item(name: str, side: str, fn: Callable[[], Any], in_sum: bool = True) -> Item:
    async def run(n: int) -> float:
        t0 = _clock()
        for _ in range(n):
            fn()
        return _clock() - t0

    return Item(name, side, run, in_sum)


def async_item(
    name: str,
    side: str,
    fn: Callable[[], Awaitable[Any]],
    in_sum: bool = True,
    patch: Callable[[], contextlib.AbstractContextManager[None]] | None = None,
) -> Item:
    async def run(n: int) -> float:
        with patch() if patch is not None else contextlib.nullcontext():
            t0 = _clock()
            for _ in range(n):
                await fn()
            return _clock() - t0

    return Item(name, side, run, in_sum)


@contextlib.contextmanager
def patched(obj: Any, attr: str, value: Any) -> Iterator[None]:
    old = getattr(obj, attr)
    setattr(obj, attr, value)
    try:
        yield
    finally:
        setattr(obj, attr, old)


async def _measure(home_dir: Path, n: int, rounds: int) -> dict[str, Any]:
    from _core_plugin import BenchPlugin, EchoArgs

    import meith_core._registry as registry_mod
    from meith_core._audit.redact import summarize
    from meith_core._caller import CallerInfo, CallerKind
    from meith_core._home import MeithHome
    from meith_core._permissions.service import Decision
    from meith_core._protocol.framing import NdjsonFramer, encode_frame
    from meith_core._protocol.messages import ToolCall, client_message_adapter
    from meith_core._results import ToolResult
    from meith_core._runtime.connection import ServerConnection
    from meith_core._runtime.frames import result_frame as build_result_frame
    from meith_core._runtime.host import Runtime
    from meith_core.client._core import client_info, tool_call_frame

    runtime = Runtime(MeithHome(home_dir), load_plugins=False)
    await runtime.start()
    runtime.load_plugin("bench", BenchPlugin)
    registry = runtime.registry
    reg = registry.get(TOOL)
    assert reg is not None
    args = {"text": TEXT}
    info = client_info("cli", None)
    frame_bytes = encode_frame(
        tool_call_frame(TOOL, args, request_id=RID, info=info, timeout_ms=None)
    )
    message = json.loads(frame_bytes)
    parsed = client_message_adapter.validate_python(message)
    if not isinstance(parsed, ToolCall):
        raise RuntimeError(f"not parsed as a tool call: {parsed!r}")
    caller = CallerInfo(caller=CallerKind.CLI, session_id="socket:bench", cwd=runtime.cwd)
    result = await registry.call(caller, TOOL, args, request_id=RID)
    if not result.ok or result.content != args:
        raise RuntimeError(f"{TOOL} did not echo in-process: {result}")
    wire = result.to_wire()
    result_frame = build_result_frame(RID, TOOL, result)
    rules = ServerConnection("socket:bench", runtime_cwd=runtime.cwd, server_version="bench")

    def connection_rules() -> None:
        rules.receive_data(frame_bytes, 0.0)
        rules.call_finished(RID, 0.0)

    loop = asyncio.get_running_loop()
    server_framer, client_framer = NdjsonFramer(), NdjsonFramer()

    async def noop() -> None:
        return None

    async def one_task() -> None:
        await loop.create_task(noop())

    async def pipeline() -> Any:
        return await registry.call(caller, TOOL, args, request_id=RID)

    allowed = Decision(True, "no privileged capability")

    async def allow(*_a: Any, **_k: Any) -> Decision:
        return allowed

    async def run_direct(
        defn_: Any, ctx: Any, parsed_args: Any, token: Any, timeout_ms: Any
    ) -> ToolResult:
        # What _run reduces to without its task, cancel waiter and deadline race.
        return registry._normalise(
            defn_, registry_mod._Outcome(value=await defn_.func(ctx, parsed_args))
        )

    def ablation(name: str, patch: Callable[[], contextlib.AbstractContextManager[None]]) -> Item:
        return async_item(name, "ablation", pipeline, in_sum=False, patch=patch)

    items = [
        sync_item(
            "client: build + encode the tool_call frame (incl. new request id)",
            "client",
            lambda: encode_frame(
                tool_call_frame(TOOL, args, request_id=None, info=info, timeout_ms=None)
            ),
        ),
        sync_item(
            "server: framing (NdjsonFramer.feed: split + json decode)",
            "server",
            lambda: server_framer.feed(frame_bytes),
        ),
        sync_item(
            "server: message validation (pydantic ClientMessage union)",
            "server",
            lambda: client_message_adapter.validate_python(message),
        ),
        sync_item(
            "server: connection rules (ServerConnection: framing, validation, identity)",
            "server",
            connection_rules,
            in_sum=False,
        ),
        async_item("server: one task per call (create_task + await it)", "server", one_task),
        async_item("server: ToolRegistry.call, whole pipeline", "server", pipeline),
        sync_item(
            "server: result frame (frames.result_frame)",
            "server",
            lambda: build_result_frame(RID, TOOL, result),
        ),
        sync_item(
            "client: decode the tool_result frame",
            "client",
            lambda: client_framer.feed(result_frame),
        ),
        sync_item(
            "client (AsyncClient only): ToolResult.model_validate",
            "client-async",
            lambda: ToolResult.model_validate(wire),
            in_sum=False,
        ),
        # Inside ToolRegistry.call, stand-alone:
        sync_item(
            "  argument validation (EchoArgs.model_validate)",
            "pipeline",
            lambda: EchoArgs.model_validate(args),
            in_sum=False,
        ),
        sync_item(
            "  audit summaries alone (redact + serialise args and result)",
            "pipeline",
            lambda: (summarize(args), summarize(wire)),
            in_sum=False,
        ),
        # Inside ToolRegistry.call, by ablation (what the pipeline saves without it):
        ablation(
            "  audit, all of it (ToolRegistry._audit)",
            lambda: patched(registry, "_audit", lambda *a, **k: None),
        ),
        ablation(
            "  audit summaries (redact + serialise)",
            lambda: patched(registry_mod, "summarize", lambda value: ""),
        ),
        ablation(
            "  audit write (entry JSON, stat, os.write)",
            lambda: patched(registry.audit, "write", lambda entry: True),
        ),
        ablation(
            "  permission check (PermissionService.authorize)",
            lambda: patched(registry.permissions, "authorize", allow),
        ),
        ablation(
            "  tool task + cancel waiter + deadline race (_run minus the tool)",
            lambda: patched(registry, "_run", run_direct),
        ),
        ablation(
            "  result normalise + encode (_run's _normalise, with the race)",
            lambda: patched(registry, "_normalise", lambda d, o: result),
        ),
    ]

    samples: dict[str, list[float]] = {i.name: [] for i in items}
    errors: dict[str, str] = {}
    for item in items[:]:  # warm-up, and drop items that no longer fit the core
        try:
            await item.run(max(20, n // 10))
        except Exception as exc:
            errors[item.name] = repr(exc)
            items.remove(item)
    for _ in range(rounds):
        for item in items:
            samples[item.name].append(await item.run(n) / n * 1e6)
    await runtime.aclose()

    us = {name: min(v) for name, v in samples.items() if v}
    whole = us.get("server: ToolRegistry.call, whole pipeline")
    stages: list[dict[str, Any]] = []
    for item in items:
        value = us[item.name]
        if item.side == "ablation" and whole is not None:
            value = whole - value
        stages.append(
            {"stage": item.name, "side": item.side, "us": round(value, 2), "sum": item.in_sum}
        )
    for name, err in errors.items():
        stages.append({"stage": name, "side": "n/a", "us": float("nan"), "error": err})
    server = sum(s["us"] for s in stages if s.get("sum") and s["side"] == "server")
    client = sum(s["us"] for s in stages if s.get("sum") and s["side"] == "client")
    return {
        "stages": stages,
        "serverUs": round(server, 2),
        "clientUs": round(client, 2),
        "clock": "process CPU time, minimum over rounds",
        "rounds": rounds,
        "opsPerRound": n,
    }


def breakdown(quick: bool = False) -> dict[str, Any]:
    """Time every item; `stages` in order, `serverUs`/`clientUs` the sums of the parts."""
    n, rounds = (200, 3) if quick else (300, 11)
    with tempfile.TemporaryDirectory(prefix="meith-bench-bd-") as tmp:
        return asyncio.run(_measure(Path(tmp) / "home", n, rounds))


def print_table(out: dict[str, Any], print_: Callable[[str], None] = print) -> None:
    for row in out["stages"]:
        print_(f"  {row['stage']:<70}{row['us']:>8.1f}")
    print_(f"  {'= server, sum of the stages above':<70}{out['serverUs']:>8.1f}")
    print_(f"  {'= client (sync Client), sum of its stages':<70}{out['clientUs']:>8.1f}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    print_table(breakdown(quick="--quick" in sys.argv))
