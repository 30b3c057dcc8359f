"""The escape corpus: every attack on meith's walls that was ever reproduced, one entry each.

An entry names the wall it tests, says the attack in a few lines, and brings two runs of the
same trick: the *control*, without the wall (unconfined, as the local user, against a plain
directory), which must work, and the *attack*, against the wall, which must not. An entry
that needs a plugin, a program or a wall this host does not build is skipped with the reason.
The entries live one per module in `meith_core.doctor.escapes`, each defining `ENTRY`, the
module named after the entry's id (`write-outside-directory`: `write_outside_directory.py`).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from meith_core.doctor.lab import Lab

#: The walls of the corpus, in the order the score card lists them: what each keeps out.
WALLS: Final[dict[str, str]] = {
    "writes": "a confined process writes only beneath its directory",
    "secrets": "no confined process, and no agent's files tool, reads a secret path",
    "environment": "nothing of the caller's environment runs before the walls, or leads out",
    "terminals": "a confined process sees only its own terminal",
    "signals": "a confined process signals nothing outside its domain",
    "runtimes": "no runtime takes a process meith started for the local user",
    "unix-sockets": "a confined process reaches none of the user's Unix sockets",
    "network": "a confined process reaches only the destinations its grant names",
    "host-loopback": "the host's own services are reached only when a grant names them",
    "ports": "the port forwarder opens only what was asked, and leads only to the process",
    "planted-git": "git metadata a confined process plants never runs in the user's git",
    "git-tools": "the git tools run no program a repository names",
    "files-tools": "the files tools act only inside their scope, races included",
    "lifetime": "nothing a call started outlives it",
    "sessions": "an agent session never reads or acts on what another session started",
    "trust-root": "no caller but the local user changes grants, approvals or policy",
    "audit": "the audit trail keeps every record, and says when it cannot",
}

_ID: Final = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)+$")


@dataclass(frozen=True, slots=True)
class Seen:
    """What one run of a trick showed: whether it worked, and the evidence either way."""

    worked: bool
    evidence: str


#: One run of a trick against the doctor's lab.
Trick = Callable[["Lab"], Seen]


@dataclass(frozen=True, slots=True)
class Needs:
    """What an entry needs to mean anything here; without it the entry is skipped."""

    #: Plugin ids the runtime must have loaded.
    plugins: tuple[str, ...] = ()
    #: Programs that must be on PATH.
    programs: tuple[str, ...] = ()
    #: Walls of `confine.status` this host must build (the attack is against them).
    walls: tuple[str, ...] = ()
    #: A Chromium for the browser plugin.
    browser: bool = False


@dataclass(frozen=True, slots=True)
class Entry:
    """One attack: `control` shows the trick works without the wall, `attack` runs it against
    the wall; the wall held when the attack did not work."""

    id: str
    wall: str
    attack: str
    assertion: str
    control: Trick
    trick: Trick
    needs: Needs = Needs()

    def __post_init__(self) -> None:
        if not _ID.match(self.id):
            raise ValueError(f"entry id {self.id!r} is not kebab-case")
        if self.wall not in WALLS:
            raise ValueError(f"entry {self.id}: unknown wall {self.wall!r}")


def entries() -> list[Entry]:
    """Every entry of the corpus, by wall (in `WALLS` order) then id."""
    from meith_core.doctor import escapes

    found: dict[str, Entry] = {}
    for info in pkgutil.iter_modules(escapes.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{escapes.__name__}.{info.name}")
        entry = getattr(module, "ENTRY", None)
        if not isinstance(entry, Entry):
            raise TypeError(f"{module.__name__} defines no ENTRY")
        if entry.id.replace("-", "_") != info.name:
            raise ValueError(f"entry {entry.id} lives in {info.name}.py, not in its own name")
        if entry.id in found:
            raise ValueError(f"two entries named {entry.id}")
        found[entry.id] = entry
    order = list(WALLS)
    return sorted(found.values(), key=lambda e: (order.index(e.wall), e.id))


def select(all_entries: list[Entry], only: list[str]) -> list[Entry]:
    """The entries `only` names, by id or by wall (all when it is empty); a name that matches
    nothing is an error that lists what exists."""
    if not only:
        return all_entries
    unknown = [n for n in only if n not in WALLS and not any(e.id == n for e in all_entries)]
    if unknown:
        raise ValueError(
            f"no entry or wall named {', '.join(unknown)} (walls: {', '.join(WALLS)}; "
            "meith doctor --walls --list shows the entries)"
        )
    return [e for e in all_entries if e.id in only or e.wall in only]


__all__ = ["WALLS", "Entry", "Needs", "Seen", "Trick", "entries", "select"]
