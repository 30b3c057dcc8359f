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
