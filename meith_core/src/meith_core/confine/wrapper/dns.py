"""The name-lookup stub inside a network namespace: every query is answered REFUSED at once
(no resolver waits for a timeout), and the name is reported to the runtime, which says in the
call's result which wall refused it and which grant flag would open it."""

from __future__ import annotations

#: DNS header flags of the answer: QR (a response), RA, RCODE 5 (REFUSED).
_REFUSED = 5
MAX_NAME = 253


def question(query: bytes) -> tuple[str, int] | None:
    """(the first question's name, the offset after the question), or None when `query` is
    not a DNS query with one readable question."""
    if len(query) < 12 or query[2] & 0x80 or int.from_bytes(query[4:6], "big") < 1:
        return None
    labels = []
    i = 12
    while True:
        if i >= len(query):
            return None
        length = query[i]
        i += 1
        if length == 0:
            break
        if length > 63 or i + length > len(query):
            return None  # a compression pointer or a truncated label: not a plain question
        labels.append(query[i : i + length].decode("ascii", "replace").lower())
        i += length
    if i + 4 > len(query):
        return None
    name = ".".join(labels)
    return (name[:MAX_NAME], i + 4) if name else None


def refusal(query: bytes) -> tuple[bytes, str] | None:
    """(the answer to send, the name asked for), or None for what is not a query."""
    found = question(query)
    if found is None:
        return None
    name, end = found
    opcode_rd = query[2] & 0x79  # the opcode and RD, echoed
    flags = bytes([0x80 | opcode_rd, 0x80 | _REFUSED])
    counts = b"\x00\x01\x00\x00\x00\x00\x00\x00"
    return query[:2] + flags + counts + query[12:end], name
