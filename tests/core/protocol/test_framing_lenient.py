"""The clients' framer (strict=False): fast on large trusted frames, still bounded."""

from __future__ import annotations

from meith_core.protocol.framing import Frame, FrameError, NdjsonFramer


def test_lenient_framer_decodes_what_the_strict_one_refuses_for_hostility_only() -> None:
    lenient, strict = NdjsonFramer(strict=False), NdjsonFramer()
    line = b'{"a": 1, "a": 2}\n'
    assert lenient.feed(line) == [Frame({"a": 2})]
    assert isinstance(strict.feed(line)[0], FrameError)
    deep = b'{"x":' + b"[" * 100 + b"]" * 100 + b"}\n"
    assert isinstance(lenient.feed(deep)[0], Frame)
    assert isinstance(strict.feed(deep)[0], FrameError)


def test_lenient_framer_keeps_the_size_utf8_type_and_recursion_guards() -> None:
    framer = NdjsonFramer(strict=False, max_frame_bytes=64)
    events = framer.feed(b'{"big":"' + b"x" * 100 + b'"}\n\xff\n[1]\n' + b"[" * 100_000 + b"\n{}\n")
    assert [type(e).__name__ for e in events[:4]] == ["FrameError"] * 4
    assert events[-1] == Frame({})
