"""The text a model reads of a process tool's result (`@tool(render=...)`)."""

from __future__ import annotations

from typing import Any


def _duration(ms: int) -> str:
    return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def render_result(content: dict[str, Any]) -> str:
    """The result as a model reads it (`@tool(render=...)`): one line saying how it ended,
    then each stream that printed anything under its name, the cap's elision marks included.

    `exit 1 in 2.3 s`, `killed by SIGKILL in 40 ms`, `timed out, ended by SIGTERM after
    120.1 s`; `, confined to DIR` when it ran confined.
    """
    took = _duration(int(content.get("durationMs") or 0))
    signal_ = content.get("signal")
    if content.get("timedOut"):
        how = f"ended by {signal_}" if signal_ else f"exit {content.get('exitCode')}"
        line = f"timed out, {how} after {took}"
    elif signal_:
        line = f"killed by {signal_} in {took}"
    else:
        line = f"exit {content.get('exitCode')} in {took}"
    if content.get("confinedTo"):
        line += f", confined to {content['confinedTo']}"
    parts = [line]
    for stream in ("stdout", "stderr"):
        text = str(content.get(stream) or "").removesuffix("\n")
        if text:
            parts.append(f"--- {stream}\n{text}")
    return "\n".join(parts)
