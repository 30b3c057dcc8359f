"""The live segment's identity, kept outside the segment.

A writer holds the segment it appends to open. Before each append it checks that the file it
holds is still the one at the segment's name (`fstat` of its descriptor against `stat` of the
name, and a link count above zero); a rotation makes the held file read-only first, so a
rotation is told from a loss. A segment deleted, replaced or cut short under the writer is a
loss of evidence: the writer says so in a `segment-vanished` record, the first of the segment
it then writes, with what was lost (the file's identity, the last hash it held, its size).

What the writer knows is also kept beside the trail, in `audit.head` (one fixed-size JSON
record, rewritten after each append): a segment that vanished while no writer held it is
noticed by the next one to open the trail. `meith audit verify` fails on a trail holding a
`segment-vanished` record.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from meith_core.audit import segments

KIND: Final = "segment-vanished"
#: The size `audit.head` is written at (padded), so each rewrite is one `pwrite` in place.
HEAD_BYTES: Final = 256
_FLAGS: Final = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW


@dataclass(frozen=True, slots=True)
class Identity:
    device: int
    inode: int

    @classmethod
    def of(cls, st: os.stat_result) -> Identity:
        return cls(st.st_dev, st.st_ino)


def identity_at(path: Path) -> Identity | None:
    """The identity of the file at `path` (never following a link); None when there is none."""
    try:
        return Identity.of(os.stat(path, follow_symlinks=False))
    except FileNotFoundError:
        return None


def was_rotated(current: Path, identity: Identity) -> bool:
    """Whether a segment of that identity is now a sealed segment of the trail."""
    return any(identity_at(s.path) == identity for s in reversed(segments.sealed_segments(current)))


def head_path(current: Path) -> Path:
    return current.with_name(current.name.removesuffix(".jsonl") + ".head")


class HeadFile:
    """`audit.head`: the identity, size and last hash of the live segment as last written."""

    def __init__(self, current: Path) -> None:
        self.path = head_path(current)
        self._fd = -1

    def read(self) -> dict[str, Any] | None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            data = json.loads(os.pread(fd, HEAD_BYTES, 0))
        except (OSError, ValueError):
            return None
        finally:
            os.close(fd)
        return data if isinstance(data, dict) else None

    def write(self, identity: Identity, size: int, head: str | None) -> None:
        """Rewrite the record in place (the caller holds the trail's lock)."""
        record = {"device": identity.device, "inode": identity.inode, "bytes": size, "hash": head}
        data = json.dumps(record, separators=(",", ":")).encode().ljust(HEAD_BYTES)
        with contextlib.suppress(OSError):
            if self._fd < 0:
                self._fd = os.open(self.path, _FLAGS, 0o600)
            os.pwrite(self._fd, data, 0)

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1


def lost_while_closed(current: Path, known: dict[str, Any] | None) -> dict[str, Any] | None:
    """What `audit.head` says of a live segment that is gone (or shorter) now that a writer
    opens the trail; None when nothing was lost."""
    if known is None:
        return None
    try:
        identity = Identity(int(known["device"]), int(known["inode"]))
        size = int(known["bytes"])
    except (KeyError, TypeError, ValueError):
        return None
    at_name = identity_at(current)
    if at_name == identity:
        with contextlib.suppress(OSError):
            if os.stat(current, follow_symlinks=False).st_size >= size:
                return None
        how = "truncated while no runtime held it"
    elif was_rotated(current, identity):
        return None
    else:
        how = "deleted or replaced while no runtime held it"
    hashed = known.get("hash")
    return lost(how, identity, size, hashed if isinstance(hashed, str) else None)


def lost(how: str, identity: Identity, size: int, last_hash: str | None) -> dict[str, Any]:
    """The `lost` part of a `segment-vanished` record (with `how`, kept apart until written)."""
    return {
        "how": how,
        "lost": {
            "device": identity.device,
            "inode": identity.inode,
            "bytes": size,
            "lastHash": last_hash,
        },
    }


def describe(record: dict[str, Any]) -> str:
    """A `segment-vanished` record in words, for `meith audit verify`."""
    was = record.get("lost") if isinstance(record.get("lost"), dict) else {}
    assert isinstance(was, dict)
    last = str(was.get("lastHash") or "?")[:16]
    return (
        f"segment vanished ({record.get('how', '?')}): the live segment (device "
        f"{was.get('device', '?')}, inode {was.get('inode', '?')}, {was.get('bytes', '?')} "
        f"bytes, last record {last}…) is not in the trail; noticed by pid {record.get('pid', '?')}"
    )


__all__ = [
    "KIND",
    "HeadFile",
    "Identity",
    "describe",
    "identity_at",
    "lost",
    "lost_while_closed",
    "was_rotated",
]
