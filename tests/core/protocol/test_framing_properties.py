"""Property tests of the framer (hypothesis): it never raises, and chunking never matters."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meith_core.protocol import Frame, FrameError, NdjsonFramer, encode_frame

# Property tests: hundreds of generated streams each.
pytestmark = pytest.mark.slow

_settings = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Generating nested JSON is the slow part; fewer, richer examples.
_json_settings = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=10), json_values, max_size=6)


def _run(framer: NdjsonFramer, chunks: list[bytes]) -> list[Frame | FrameError]:
    out: list[Frame | FrameError] = []
    for chunk in chunks:
        out.extend(framer.feed(chunk))
    out.extend(framer.close())
    return out


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    chunks, last = [], 0
    for p in points:
        chunks.append(data[last:p])
        last = p
    chunks.append(data[last:])
    return chunks


@_settings
@given(st.lists(st.binary(max_size=200), max_size=20))
def test_the_framer_never_raises_on_arbitrary_bytes(chunks: list[bytes]) -> None:
    events = _run(NdjsonFramer(max_frame_bytes=64), chunks)
    for event in events:
        assert isinstance(event, Frame | FrameError)
        if isinstance(event, Frame):
            assert isinstance(event.message, dict)


@_settings
@given(
    st.lists(
        st.sampled_from(
            [
                b"{",
                b"}",
                b"[",
                b"]",
                b'"',
                b"\\",
                b":",
                b",",
                b"\n",
                b"\r",
                b" ",
                b"1",
                b"a",
                b"NaN",
                b"\xff",
                b"\xc3",
                b"\xa9",
                b'{"a":',
                b"null",
                b"-Infinity",
                b"\x00",
            ]
        ),
        max_size=400,
    ),
    st.lists(st.integers(min_value=0), max_size=10),
)
def test_the_framer_never_raises_on_json_like_garbage(pieces: list[bytes], cuts: list[int]) -> None:
    data = b"".join(pieces)
    _run(NdjsonFramer(max_frame_bytes=128), _split(data, cuts))


@_json_settings
@given(
    st.lists(json_objects, min_size=1, max_size=8), st.lists(st.integers(min_value=0), max_size=12)
)
def test_valid_frames_split_anywhere_decode_like_the_unsplit_stream(
    messages: list[dict[str, Any]], cuts: list[int]
) -> None:
    stream = b"".join(encode_frame(m) for m in messages)
    whole = _run(NdjsonFramer(), [stream])
    split = _run(NdjsonFramer(), _split(stream, cuts))
    assert split == whole
    assert all(isinstance(e, Frame) for e in whole)
    expected = [
        json.loads(json.dumps({**m, "protocol": 1} if m.get("protocol") is None else m))
        for m in messages
    ]
    assert [e.message for e in whole if isinstance(e, Frame)] == expected


@_json_settings
@given(
    st.lists(st.one_of(json_objects.map(encode_frame), st.binary(max_size=80)), max_size=10),
    st.lists(st.integers(min_value=0), max_size=12),
)
def test_mixed_valid_and_garbage_lines_decode_the_same_however_split(
    parts: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(parts)
    whole = _run(NdjsonFramer(max_frame_bytes=256), [stream])
    split = _run(NdjsonFramer(max_frame_bytes=256), _split(stream, cuts))
    # Oversize errors may be reported at a different point (while buffering vs. at the
    # newline), but the frames and the number of errors are the same.
    assert [e for e in split if isinstance(e, Frame)] == [e for e in whole if isinstance(e, Frame)]
    assert sum(isinstance(e, FrameError) for e in split) == sum(
        isinstance(e, FrameError) for e in whole
    )


@_json_settings
@given(json_objects)
def test_the_encoder_writes_the_utf8_json_of_any_value(value: dict[str, Any]) -> None:
    """`dumps_bytes` takes the ASCII encoder's output when it wrote no `\\u` escape: whatever
    the value (non-ASCII text, control characters, backslashes), the bytes are the compact
    UTF-8 JSON the plain encoder writes."""
    from meith_core.protocol.framing import dumps_bytes

    expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert dumps_bytes(value) == expected
    assert dumps_bytes({"s": "caf\u00e9 \\u0041 \x1b"}) == (
        '{"s":"caf\u00e9 \\\\u0041 \\u001b"}'.encode()
    )
    # DEL is ASCII, but only the ASCII encoder escapes it (found by this property).
    assert dumps_bytes({"\x7f": "a\x7fb"}) == b'{"\x7f":"a\x7fb"}'
