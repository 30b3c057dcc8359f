"""The sans-IO NDJSON framer and encoder: bytes in, frames or frame errors out."""

from __future__ import annotations

import json

import pytest

from meith_core.protocol import (
    DEFAULT_TOOL_TIMEOUT_MS,
    MAX_FRAME_BYTES,
    MAX_JSON_DEPTH,
    PROTOCOL_VERSION,
    Frame,
    FrameError,
    NdjsonFramer,
    decode_frame,
    encode_frame,
)


def feed_all(framer: NdjsonFramer, *chunks: bytes) -> list[Frame | FrameError]:
    out: list[Frame | FrameError] = []
    for chunk in chunks:
        out.extend(framer.feed(chunk))
    return out


def frames(events: list[Frame | FrameError]) -> list[dict[str, object]]:
    return [e.message for e in events if isinstance(e, Frame)]


def errors(events: list[Frame | FrameError]) -> list[str]:
    return [e.reason for e in events if isinstance(e, FrameError)]


def test_constants_match_the_protocol() -> None:
    assert PROTOCOL_VERSION == 1
    assert MAX_FRAME_BYTES == 8 * 1024 * 1024
    assert DEFAULT_TOOL_TIMEOUT_MS == 30_000
    assert MAX_JSON_DEPTH == 64


# -- chunking ---------------------------------------------------------------------------


def test_frames_split_across_every_chunking_decode_the_same() -> None:
    stream = b'{"type":"list_tools"}\n{"a":[1,2,{"b":"\xc3\xa9"}]}\n{"x":null}\n'
    expected = [{"type": "list_tools"}, {"a": [1, 2, {"b": "é"}]}, {"x": None}]
    for size in range(1, len(stream) + 1):
        framer = NdjsonFramer()
        chunks = [stream[i : i + size] for i in range(0, len(stream), size)]
        events = feed_all(framer, *chunks)
        assert frames(events) == expected, size
        assert errors(events) == []
        assert framer.close() == []


def test_a_partial_trailing_frame_is_buffered_until_its_newline() -> None:
    framer = NdjsonFramer()
    assert framer.feed(b'{"a":1}\n{"b":') == [Frame({"a": 1})]
    assert framer.pending_bytes == len(b'{"b":')
    assert framer.feed(b"2}") == []
    assert framer.feed(b"\n") == [Frame({"b": 2})]
    assert framer.pending_bytes == 0


def test_blank_lines_between_frames_are_ignored() -> None:
    framer = NdjsonFramer()
    events = framer.feed(b'\n\n{"a":1}\n   \n\t\r\n\r\n{"b":2}\r\n\n')
    assert events == [Frame({"a": 1}), Frame({"b": 2})]
    assert framer.close() == []


def test_a_malformed_frame_is_reported_and_later_frames_still_parse() -> None:
    framer = NdjsonFramer()
    events = framer.feed(b'{"a":1}\n{not json\n{"b":2}\n')
    assert frames(events) == [{"a": 1}, {"b": 2}]
    assert len(errors(events)) == 1
    assert isinstance(events[1], FrameError)


# -- oversized frames -------------------------------------------------------------------


def test_an_oversized_line_gives_one_error_and_the_next_frame_parses() -> None:
    framer = NdjsonFramer(max_frame_bytes=16)
    events = framer.feed(b'{"big":"' + b"x" * 40 + b'"}\n{"ok":1}\n')
    assert len(errors(events)) == 1
    assert "MAX_FRAME_BYTES" in errors(events)[0]
    assert frames(events) == [{"ok": 1}]


def test_an_oversized_frame_without_newline_discards_its_tail_up_to_the_next_newline() -> None:
    framer = NdjsonFramer(max_frame_bytes=16)
    first = framer.feed(b"y" * 17)
    assert len(first) == 1
    assert isinstance(first[0], FrameError)
    # The tail looks like a perfectly good frame; it must never be parsed as one.
    rest = framer.feed(b'{"type":"tool_call","evil":true}\n{"ok":1}\n')
    assert rest == [Frame({"ok": 1})]


def test_an_oversized_frame_arriving_in_two_feeds_gives_exactly_one_error() -> None:
    framer = NdjsonFramer(max_frame_bytes=16)
    # First feed fits; the second pushes the same frame over the limit (and keeps going).
    assert framer.feed(b'{"evil":"aaaaaa') == []
    second = framer.feed(b'aaaaaaaaaaaaaaaaaaaaaa",')
    third = framer.feed(b'"also":{"evil":2}}')
    fourth = framer.feed(b'\n{"ok":1}\n')
    assert len(errors(second)) == 1
    assert third == []
    assert fourth == [Frame({"ok": 1})]
    assert framer.close() == []


def test_an_oversized_frame_whose_newline_comes_in_the_second_feed_gives_one_error() -> None:
    framer = NdjsonFramer(max_frame_bytes=16)
    assert framer.feed(b'{"evil":"aaaaaa') == []
    events = framer.feed(b'aaaaaaaaaaaaaaaa"}\n{"ok":1}\n')
    assert len(errors(events)) == 1
    assert frames(events) == [{"ok": 1}]


def test_a_frame_of_exactly_the_limit_is_accepted() -> None:
    body = b'{"a":"' + b"x" * 10 + b'"}'
    framer = NdjsonFramer(max_frame_bytes=len(body))
    assert framer.feed(body) == []
    assert framer.feed(b"\n") == [Frame({"a": "x" * 10})]


def test_the_default_limit_is_8_mib() -> None:
    framer = NdjsonFramer()
    payload = b'{"a":"' + b"x" * (MAX_FRAME_BYTES - 8) + b'"}'
    assert len(payload) == MAX_FRAME_BYTES
    assert frames(framer.feed(payload + b"\n")) == [{"a": "x" * (MAX_FRAME_BYTES - 8)}]
    events = framer.feed(b"z" * (MAX_FRAME_BYTES + 1))
    assert len(errors(events)) == 1
    assert framer.pending_bytes <= 1  # nothing of the oversized frame is kept
    assert framer.feed(b'zz\n{"ok":1}\n') == [Frame({"ok": 1})]


# -- hostile content --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b'{"a":"\xff\xfe"}', "UTF-8"),
        (b"\xc3", "UTF-8"),
        (b'{"a":"\xed\xa0\x80"}', "UTF-8"),  # an encoded surrogate is not UTF-8
        (b"[1,2]", "object"),
        (b'"just a string"', "object"),
        (b"42", "object"),
        (b"null", "object"),
        (b'{"a":1,"a":2}', "duplicate"),
        (b'{"a":{"b":1,"b":1}}', "duplicate"),
        (b'{"a":NaN}', "NaN"),
        (b'{"a":Infinity}', "Infinity"),
        (b'{"a":-Infinity}', "Infinity"),
        (b'{"a":1} {"b":2}', "extra data"),
        (b'{"a":', "malformed"),
        (b'{"a":1' + b"9" * 5000 + b"}", "malformed"),
    ],
)
def test_hostile_frames_are_frame_errors_not_exceptions(line: bytes, why: str) -> None:
    framer = NdjsonFramer()
    events = framer.feed(line + b"\n" + b'{"ok":1}\n')
    assert len(events) == 2
    assert isinstance(events[0], FrameError)
    assert why.lower() in events[0].reason.lower()
    assert events[1] == Frame({"ok": 1})


def _nested(depth: int) -> bytes:
    """An object nested `depth` levels deep, counting the outer object."""
    return b'{"a":' * depth + b"1" + b"}" * depth


def test_nesting_up_to_64_levels_is_accepted() -> None:
    assert decode_frame(_nested(MAX_JSON_DEPTH)) is not None
    assert isinstance(decode_frame(_nested(MAX_JSON_DEPTH)), Frame)
    mixed = b'{"a":' + b"[" * (MAX_JSON_DEPTH - 1) + b"]" * (MAX_JSON_DEPTH - 1) + b"}"
    assert isinstance(decode_frame(mixed), Frame)


def test_nesting_deeper_than_64_levels_is_a_frame_error() -> None:
    event = decode_frame(_nested(MAX_JSON_DEPTH + 1))
    assert isinstance(event, FrameError)
    assert "deeper than 64" in event.reason
    mixed = b'{"a":' + b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH + b"}"
    assert isinstance(decode_frame(mixed), FrameError)


@pytest.mark.parametrize("depth", [1_000, 10_000, 100_000])
def test_pathological_nesting_is_a_frame_error_not_a_recursion_error(depth: int) -> None:
    framer = NdjsonFramer()
    events = framer.feed(_nested(depth) + b"\n" + b"[" * depth + b"]" * depth + b"\n")
    assert len(events) == 2
    assert all(isinstance(e, FrameError) for e in events)
    assert framer.feed(b'{"ok":1}\n') == [Frame({"ok": 1})]


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    line = json.dumps({"s": "[" * 500 + "{" * 500}).encode()
    assert decode_frame(line) == Frame({"s": "[" * 500 + "{" * 500})


# -- end of input -----------------------------------------------------------------------


def test_an_unterminated_last_frame_is_reported_by_close_and_not_returned() -> None:
    framer = NdjsonFramer()
    assert framer.feed(b'{"a":1}\n{"type":"tool_call","toolName":"x"}') == [Frame({"a": 1})]
    closing = framer.close()
    assert len(closing) == 1
    assert isinstance(closing[0], FrameError)
    assert "unterminated" in closing[0].reason


def test_close_after_an_oversized_frame_reports_it_once_more() -> None:
    framer = NdjsonFramer(max_frame_bytes=4)
    assert len(framer.feed(b"xxxxxxx")) == 1
    assert len(framer.close()) == 1


def test_close_with_only_whitespace_pending_is_clean() -> None:
    framer = NdjsonFramer()
    framer.feed(b'{"a":1}\n  \r')
    assert framer.close() == []


# -- encoding ---------------------------------------------------------------------------


def test_encode_stamps_protocol_when_absent() -> None:
    line = encode_frame({"type": "list_tools"})
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert json.loads(line) == {"type": "list_tools", "protocol": PROTOCOL_VERSION}


def test_encode_stamps_protocol_when_it_is_none() -> None:
    assert json.loads(encode_frame({"type": "x", "protocol": None}))["protocol"] == 1


def test_encode_never_overrides_an_explicit_protocol() -> None:
    assert json.loads(encode_frame({"type": "x", "protocol": 99}))["protocol"] == 99
    assert json.loads(encode_frame({"type": "x", "protocol": 0}))["protocol"] == 0


def test_encode_does_not_mutate_the_message() -> None:
    message = {"type": "list_tools"}
    encode_frame(message)
    assert message == {"type": "list_tools"}


def test_encoded_frames_round_trip_through_the_framer() -> None:
    messages = [
        {"type": "tool_call", "requestId": "req_1", "toolName": "t", "arguments": {"s": "a\nb"}},
        {"type": "list_tools", "protocol": 1, "clientInfo": {"caller": "cli", "cwd": "/tmp/é"}},
    ]
    stream = b"".join(encode_frame(m) for m in messages)
    decoded = frames(NdjsonFramer().feed(stream))
    assert decoded == [{**messages[0], "protocol": 1}, messages[1]]


def test_encode_escapes_lone_surrogates_instead_of_failing() -> None:
    line = encode_frame({"type": "x", "path": "bad\udcffname"})
    assert line.decode("utf-8")  # valid UTF-8
    assert decode_frame(line.rstrip(b"\n")) == Frame(
        {"type": "x", "path": "bad\udcffname", "protocol": 1}
    )


def test_encode_refuses_values_that_are_not_json() -> None:
    with pytest.raises(ValueError):
        encode_frame({"type": "x", "n": float("nan")})


def test_read_only_mappings_encode_as_objects() -> None:
    import types

    frozen = types.MappingProxyType({"a": types.MappingProxyType({"b": (1, 2)})})
    assert json.loads(encode_frame({"type": "x", "settings": frozen})) == {
        "type": "x",
        "settings": {"a": {"b": [1, 2]}},
        "protocol": 1,
    }
