"""The name-lookup stub's answers: REFUSED at once, the question echoed, the name reported;
anything that is not a plain query is ignored."""

from __future__ import annotations

import socket
import struct

from meith_core.confine.wrapper.dns import question, refusal


def query(name: str, *, qid: int = 0x1234, flags: int = 0x0100, qtype: int = 1) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".") if p)
    return (
        struct.pack("!HHHHHH", qid, flags, 1, 0, 0, 0)
        + labels
        + b"\0"
        + struct.pack("!HH", qtype, 1)
    )


def test_a_query_is_refused_with_its_question() -> None:
    asked = query("Example.COM", qtype=28)
    answered = refusal(asked)
    assert answered is not None
    reply, name = answered
    assert name == "example.com"
    qid, flags, qd, an, ns, ar = struct.unpack("!HHHHHH", reply[:12])
    assert qid == 0x1234
    assert flags & 0x8000  # a response
    assert flags & 0x0100  # recursion desired, echoed
    assert flags & 0x000F == 5  # REFUSED
    assert (qd, an, ns, ar) == (1, 0, 0, 0)
    assert reply[12:] == asked[12:]


def test_the_opcode_is_echoed() -> None:
    answered = refusal(query("a.example", flags=0x0800))  # opcode 1 (inverse query)
    assert answered is not None
    assert struct.unpack("!H", answered[0][2:4])[0] & 0x7800 == 0x0800


def test_what_is_not_a_plain_query_is_ignored() -> None:
    assert refusal(b"") is None
    assert refusal(query("a.example")[:11]) is None
    assert refusal(query("a.example", flags=0x8100)) is None  # a response
    no_question = bytearray(query("a.example"))
    no_question[5] = 0
    assert refusal(bytes(no_question)) is None
    pointer = query("a.example")[:12] + b"\xc0\x0c" + b"\0\1\0\1"
    assert refusal(pointer) is None
    truncated = query("a.example")[:-3]
    assert refusal(truncated) is None
    cut_label = query("a.example")[:14]
    assert refusal(cut_label) is None
    assert refusal(query("")) is None  # the root: no name to report


def test_question_reports_where_it_ends() -> None:
    asked = query("a.b")
    found = question(asked)
    assert found == ("a.b", len(asked))


def test_a_resolver_gets_the_refusal_at_once() -> None:
    """A real datagram round trip: the reply is what a resolver reads as REFUSED."""
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    client.settimeout(5)
    with server, client:
        client.sendto(query("pypi.example.org"), server.getsockname())
        data, peer = server.recvfrom(4096)
        answered = refusal(data)
        assert answered is not None
        server.sendto(answered[0], peer)
        reply = client.recv(4096)
    assert struct.unpack("!H", reply[2:4])[0] & 0x000F == 5
