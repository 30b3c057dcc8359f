"""Running the corpus in a lab: each entry skipped for what it needs, else its control, then
its attack; the verdict with its evidence."""

from __future__ import annotations

import shutil
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from meith_core.doctor.corpus import Entry, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.served import LabError

Verdict = Literal["held", "breached", "skipped"]
#: Evidence is cut to this many characters (the card is read by people).
MAX_EVIDENCE: Final = 800


@dataclass(frozen=True, slots=True)
class Result:
    """One entry's verdict. `inconclusive`: skipped because the lab could not play it here
    (the control did not work, or a call failed), not for a missing need."""

    entry: Entry
    result: Verdict
    why: str
    seconds: float
    inconclusive: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.entry.id,
            "wall": self.entry.wall,
            "attack": self.entry.attack,
            "assertion": self.entry.assertion,
            "result": self.result,
            "why": self.why,
            "seconds": round(self.seconds, 2),
        }


def missing(lab: Lab, entry: Entry) -> str | None:
    """Why `entry` cannot mean anything on this host, or None when it can run."""
    needs = entry.needs
    for plugin in needs.plugins:
        if plugin not in lab.plugins:
            return f"the {plugin} plugin is not installed here (or did not load)"
    for program in needs.programs:
        if shutil.which(program, path=lab.env.get("PATH")) is None:
            return f"{program} is not installed here"
    walls = {str(w["wall"]): w for w in lab.status.get("walls", ())}
    if not lab.status.get("available", False) and needs.walls:
        return f"this kernel has no Landlock: nothing is confined ({walls.get('writes', {}).get('fix', '')})"
    for name in needs.walls:
        wall = walls.get(name)
        if wall is None or not wall["built"]:
            fix = wall.get("fix", "") if wall else ""
            return f"the {name} wall is not built on this host: {fix}".rstrip(": ")
    if needs.browser and not lab.browser_found():
        return "no Chromium found here (playwright install chromium, or MEITH_BROWSER_EXECUTABLE)"
    return None


def run_entry(lab: Lab, entry: Entry) -> Result:
    start = time.monotonic()

    def done(verdict: Verdict, why: str, inconclusive: bool = False) -> Result:
        return Result(entry, verdict, why, time.monotonic() - start, inconclusive)

    reason = missing(lab, entry)
    if reason is not None:
        return done("skipped", reason)
    control = _play(entry.control, lab)
    if isinstance(control, str):
        return done("skipped", f"inconclusive: the control failed: {control}", True)
    if not control.worked:
        return done(
            "skipped",
            f"inconclusive: the control did not work here: {_cut(control.evidence)}",
            True,
        )
    seen = _play(entry.trick, lab)
    if isinstance(seen, str):
        return done("skipped", f"inconclusive: the attack could not be played: {seen}", True)
    if seen.worked:
        return done("breached", _cut(seen.evidence))
    return done("held", _cut(seen.evidence))


def _play(trick: Callable[[Lab], Seen], lab: Lab) -> Seen | str:
    """A trick's Seen, or why it could not be played; what it opened is ended after."""
    try:
        return trick(lab)
    except LabError as exc:
        return str(exc)
    except Exception as exc:
        tail = traceback.format_exception(exc)[-3:]
        return f"{type(exc).__name__}: {exc} ({''.join(tail).strip()[-400:]})"
    finally:
        lab.settle()


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_EVIDENCE else text[: MAX_EVIDENCE - 1] + "…"


def run_corpus(
    lab: Lab,
    chosen: list[Entry],
    progress: Callable[[int, Entry, Result | None], None] | None = None,
) -> list[Result]:
    """Every entry of `chosen` in order; `progress(i, entry, None)` before each and
    `progress(i, entry, result)` after."""
    results: list[Result] = []
    for i, entry in enumerate(chosen):
        if progress is not None:
            progress(i, entry, None)
        result = run_entry(lab, entry)
        results.append(result)
        if progress is not None:
            progress(i, entry, result)
    return results


__all__ = ["Result", "Verdict", "missing", "run_corpus", "run_entry"]
