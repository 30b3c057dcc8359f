"""One output stream within a byte limit: head and tail kept, the middle counted."""

from __future__ import annotations

from meith_plugins_process.outputcap import OutputCap
from tests.process.support import marker


def test_the_cap_counts_every_byte_however_it_arrives() -> None:
    cap = OutputCap(10)
    for _ in range(10_000):
        cap.feed(b"0123456789")
    text, elided = cap.render()
    assert elided == 100_000 - 10
    assert text == "01234" + marker(elided) + "56789"
    small = OutputCap(10)
    small.feed(b"abc")
    small.feed(b"defghij")
    assert small.render() == ("abcdefghij", 0)
