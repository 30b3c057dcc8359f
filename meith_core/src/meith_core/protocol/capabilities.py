"""Tool capabilities: what a tool may do, the input to both permission gates."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Capability(StrEnum):
    READ_ONLY = "read-only"
    WRITES_FILES = "writes-files"
    CONTROLS_BROWSER = "controls-browser"
    STARTS_PROCESS = "starts-process"
    ACCESSES_NETWORK = "accesses-network"
    DESTRUCTIVE = "destructive"


#: Capabilities that need consent. `read-only` and `accesses-network` alone do not
#: (network access stays declared and audited).
PRIVILEGED: frozenset[Capability] = frozenset(
    {
        Capability.WRITES_FILES,
        Capability.CONTROLS_BROWSER,
        Capability.STARTS_PROCESS,
        Capability.DESTRUCTIVE,
    }
)

_ORDER = {cap: i for i, cap in enumerate(Capability)}


def parse_capabilities(values: Iterable[str | Capability]) -> tuple[Capability, ...]:
    """Validate capability names; keeps the canonical order and drops repeats.

    Raises ValueError naming the unknown value and the accepted ones.
    """
    out: set[Capability] = set()
    for value in values:
        try:
            out.add(Capability(value))
        except ValueError:
            allowed = ", ".join(c.value for c in Capability)
            raise ValueError(f"unknown capability {value!r}; expected one of: {allowed}") from None
    return tuple(sorted(out, key=_ORDER.__getitem__))


def privileged_of(capabilities: Iterable[Capability]) -> tuple[Capability, ...]:
    """The privileged subset, in canonical order."""
    if type(capabilities) is not tuple:
        return tuple(c for c in capabilities if c in PRIVILEGED)
    # Asked several times per call with a tool's own (few, distinct) capability tuples.
    found = _PRIVILEGED_OF.get(capabilities)
    if found is None:
        found = tuple(c for c in capabilities if c in PRIVILEGED)
        if len(_PRIVILEGED_OF) < 1024:
            _PRIVILEGED_OF[capabilities] = found
    return found


_PRIVILEGED_OF: dict[tuple[Capability, ...], tuple[Capability, ...]] = {}


class Effect(StrEnum):
    """What a tool does to the world it acts on, at worst: the other half (beside its
    capabilities) of the hints a client is given (`hints`)."""

    #: Observes only.
    READS = "reads"
    #: Makes something new at each call (a process, a tab, a checkpoint).
    CREATES = "creates"
    #: Adds to what is there (a commit to history, text to a log).
    APPENDS = "appends"
    #: Changes state in place; the same call again leaves the same state (stage, resize).
    UPDATES = "updates"
    #: Reloads what the host runs (plugins); nothing is lost.
    RELOADS = "reloads"
    #: Kills, removes, discards or overwrites (kill a terminal, remove a worktree).
    REMOVES = "removes"
    #: Sends input whose consequences are the target's (keys to a shell, a click in a page).
    ACTS = "acts"


#: Effects a repeated call always adds to: never idempotent, whatever the tool says.
_NEVER_IDEMPOTENT = frozenset({Effect.CREATES, Effect.APPENDS, Effect.ACTS})
_OPEN_WORLD = frozenset({Capability.ACCESSES_NETWORK, Capability.CONTROLS_BROWSER})


class Hints(tuple[bool, bool, bool, bool]):
    """`(read_only, destructive, idempotent, open_world)`, as MCP's tool annotations."""

    __slots__ = ()

    @property
    def read_only(self) -> bool:
        return self[0]

    @property
    def destructive(self) -> bool:
        return self[1]

    @property
    def idempotent(self) -> bool:
        return self[2]

    @property
    def open_world(self) -> bool:
        return self[3]


def hints(
    capabilities: Iterable[Capability | str], effect: Effect | str | None, idempotent: bool
) -> Hints:
    """The one derivation of a tool's hints from its capabilities and declared effect.

    Read-only: it only reads, and reaches neither the network nor anything privileged.
    Destructive (it may do more than add): the `destructive` capability; an effect that
    removes or acts; one that updates files or settings in place (`writes-files`); a process
    it creates (`starts-process`: a process runs whatever it is told); and a privileged tool
    that declares no effect. Idempotent: as the tool declares, unless its effect adds at every
    call. Open world: it reaches the network or a browser. Without a declared effect, a tool
    whose only capability is `read-only` reads.
    """
    caps = set(parse_capabilities(capabilities))
    declared = Effect(effect) if effect is not None else None
    if declared is None and caps == {Capability.READ_ONLY}:
        declared = Effect.READS
    read_only = declared is Effect.READS and caps <= {Capability.READ_ONLY}
    destructive = (
        Capability.DESTRUCTIVE in caps
        or declared in (Effect.REMOVES, Effect.ACTS)
        or (declared is Effect.UPDATES and Capability.WRITES_FILES in caps)
        or (declared is Effect.CREATES and Capability.STARTS_PROCESS in caps)
        or (declared is None and bool(caps & PRIVILEGED))
    )
    return Hints(
        (
            read_only,
            destructive,
            idempotent and declared not in _NEVER_IDEMPOTENT,
            bool(caps & _OPEN_WORLD),
        )
    )
