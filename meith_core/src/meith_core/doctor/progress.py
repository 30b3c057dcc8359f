"""Progress of a corpus run on stderr: a bar redrawn in place on a terminal, one plain line
per entry otherwise (a log, CI)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, TextIO

if TYPE_CHECKING:
    from meith_core.doctor.corpus import Entry
    from meith_core.doctor.runner import Result

WIDTH: Final = 24


class Progress:
    def __init__(self, total: int, stream: TextIO) -> None:
        self.total = total
        self.stream = stream
        self.tty = stream.isatty()
        self.counts = {"held": 0, "breached": 0, "skipped": 0}

    def starting(self) -> None:
        """Before the first entry: the lab's runtime starts (a few seconds)."""
        if self.tty:
            self.stream.write(
                f"\r\x1b[K[{'-' * WIDTH}] 0/{self.total} starting a runtime of its own"
            )
        else:
            self.stream.write(
                f"meith doctor: starting a runtime of its own for {self.total} entries\n"
            )
        self.stream.flush()

    def __call__(self, index: int, entry: Entry, result: Result | None) -> None:
        if result is not None:
            self.counts[result.result] += 1
        if self.tty:
            done = index + (result is not None)
            filled = WIDTH * done // max(self.total, 1)
            bar = "#" * filled + "-" * (WIDTH - filled)
            tally = " ".join(f"{n} {k}" for k, n in self.counts.items() if n)
            self.stream.write(f"\r\x1b[K[{bar}] {done}/{self.total} {entry.id}  {tally}")
        elif result is not None:
            self.stream.write(
                f"[{index + 1}/{self.total}] {entry.id}: {result.result} ({result.seconds:.1f} s)\n"
            )
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


__all__ = ["Progress"]
