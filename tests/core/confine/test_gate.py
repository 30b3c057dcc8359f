"""The real gate, connecting to names: a private network and /etc/hosts (`gate_lab`), streams
handed to the gate as the control channel hands them, real listeners answering at each address.
A local address is reached only through a rule naming it; `any` and name rules mean the
internet; a name's local addresses are never connected to unless named; malformed requests are
refused with a 403 and an audit record, never dropped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meith_core import landlock_status

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(
    not landlock_status().namespaces or shutil.which("ip") is None,
    reason="needs user and network namespaces and ip(8)",
)


class Lab:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.core.confine.gate_lab"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join(
                    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
                ),
            },
        )
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()
        assert "ready" in ready, ready

    def ask(self, rules: list[str], request: str = "", **options: Any) -> dict[str, Any]:
        """What the gate answered `request` (or the `raw` bytes) under `rules`; options:
        `tcp` (the gate on a loopback port), `close_after` (close the gate mid-relay)."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        asked = {"rules": rules, "request": request, **options}
        self.proc.stdin.write(json.dumps(asked) + "\n")
        self.proc.stdin.flush()
        got: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return got

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    running = Lab()
    try:
        yield running
    finally:
        running.close()


def connect(lab: Lab, rules: list[str], target: str) -> dict[str, Any]:
    return lab.ask(rules, f"CONNECT {target} HTTP/1.1")


def reached(answer: dict[str, Any]) -> str | None:
    """The address whose listener answered, or None when the gate did not connect."""
    # However it went, the gate lets go of the connection once both sides are done.
    assert answer.get("released", True) is True, answer
    text = answer["answer"]
    if not text.startswith("HTTP/1.1 200"):
        return None
    return str(text.split("hello from ", 1)[1].strip())


def refused(answer: dict[str, Any]) -> bool:
    return bool(answer["answer"].startswith("HTTP/1.1 403") and answer["refused"])


@pytest.mark.parametrize(
    "name",
    ["loop.test", "private.test", "metadata.test", "cgnat.test", "metadata6.test", "mapped.test"],
)
def test_a_name_that_resolves_to_a_local_address_is_refused_under_any(lab: Lab, name: str) -> None:
    answer = connect(lab, ["any"], f"{name}:8080")
    assert refused(answer), answer
    assert "resolves to a local address" in answer["answer"]
    assert answer["refused"][0][0] == f"{name}:8080"


def test_a_name_s_local_address_opens_when_a_rule_names_it(lab: Lab) -> None:
    assert reached(connect(lab, ["loop.test", "127.0.0.1:8080"], "loop.test:8080")) == "127.0.0.1"
    assert reached(connect(lab, ["*.test", "10.1.2.3"], "private.test:8080")) == "10.1.2.3"
    # A rule for another port of that address does not.
    assert refused(connect(lab, ["loop.test", "127.0.0.1:9999"], "loop.test:8080"))
    # Nor does naming the address without a rule for the name.
    assert refused(connect(lab, ["127.0.0.1:8080"], "loop.test:8080"))


def test_a_public_name_and_address_are_the_internet(lab: Lab) -> None:
    assert reached(connect(lab, ["any"], "public.test:8080")) == "203.0.113.7"
    assert reached(connect(lab, ["any"], "public6.test:8080")) == "2001:db8::7"
    assert reached(connect(lab, ["any"], "[2001:db8::7]:8080")) == "2001:db8::7"
    assert reached(connect(lab, ["public.test:8080"], "PUBLIC.Test.:8080")) == "203.0.113.7"
    assert refused(connect(lab, ["public.test:443"], "public.test:8080"))
    assert refused(connect(lab, ["*.public.test"], "public.test:8080"))


def test_a_mixed_answer_connects_only_to_the_public_address(lab: Lab) -> None:
    answer = connect(lab, ["any"], "mixed.test:8080")
    assert reached(answer) == "203.0.113.7", answer
    # Only local addresses in the answer: refused, nothing connected.
    assert refused(connect(lab, ["any"], "rebound.test:8080"))


@pytest.mark.parametrize(
    "target",
    [
        "127.0.0.1:8080",
        "localhost:8080",
        "LOCALHOST:8080",
        "[::1]:8080",
        "[::ffff:127.0.0.1]:8080",
        "[::ffff:7f00:1]:8080",
        "0.0.0.0:8080",
        "127.1:8080",
        "2130706433:8080",
        "169.254.169.254:8080",
        "[fd00:ec2::254]:8080",
        "100.64.1.1:8080",
        "10.1.2.3:8080",
    ],
)
def test_local_addresses_are_never_reached_under_any(lab: Lab, target: str) -> None:
    answer = connect(lab, ["any", "*.test"], target)
    assert refused(answer), answer
    assert "meith" in answer["answer"]


def test_a_rule_naming_a_local_address_or_localhost_opens_it(lab: Lab) -> None:
    assert reached(connect(lab, ["127.0.0.1:8080"], "127.0.0.1:8080")) == "127.0.0.1"
    assert reached(connect(lab, ["127.0.0.1:8080"], "[::ffff:127.0.0.1]:8080")) == "127.0.0.1"
    assert reached(connect(lab, ["[::1]:8080"], "[::1]:8080")) == "::1"
    assert reached(connect(lab, ["localhost:8080"], "localhost:8080")) in ("127.0.0.1", "::1")
    assert reached(connect(lab, ["localhost"], "127.0.0.1:8080")) == "127.0.0.1"
    assert reached(connect(lab, ["169.254.169.254"], "169.254.169.254:8080")) == "169.254.169.254"
    assert refused(connect(lab, ["localhost"], "10.1.2.3:8080"))
    assert refused(connect(lab, ["127.0.0.1:8080"], "127.0.0.2:8080"))


@pytest.mark.parametrize(
    ("request_line", "why"),
    [
        ("CONNECT .public.test:8080 HTTP/1.1", "is not a host name"),
        ("CONNECT public.test..:8080 HTTP/1.1", "is not a host name"),
        ("CONNECT pub lic.test:8080 HTTP/1.1", "not an HTTP request line"),
        ("CONNECT public.test:0 HTTP/1.1", "the port must be 1-65535"),
        ("CONNECT public.test:99999 HTTP/1.1", "the port must be 1-65535"),
        ("CONNECT public.test:http HTTP/1.1", "the port must be 1-65535"),
        ("CONNECT ::1:8080 HTTP/1.1", "an IPv6 address goes in [ ]"),
        ("CONNECT [::1 HTTP/1.1", "unclosed [ in"),
        ("CONNECT [::1]8080 HTTP/1.1", "expected :PORT after ]"),
        ("CONNECT :8080 HTTP/1.1", "no host in"),
        ("GET ftp://public.test/ HTTP/1.1", "only absolute http:// URLs"),
        ("GET /relative HTTP/1.1", "only absolute http:// URLs"),
        ("CONNECT public.test:8080", "not an HTTP request line"),
        ("CONNECT public.test:8080 HTTP/1.1 extra", "not an HTTP request line"),
        ("CONNECT public.test:8080 FTP/1.1", "not an HTTP request line"),
        ("CONNECT public.test:65536 HTTP/1.1", "the port must be 1-65535"),
    ],
)
def test_a_malformed_request_is_refused_and_audited(lab: Lab, request_line: str, why: str) -> None:
    answer = lab.ask(["any", "*.test"], request_line)
    assert answer["answer"].startswith("HTTP/1.1 403"), answer
    assert "X-Meith-Refused: meith: refused" in answer["answer"], answer
    assert why in answer["answer"], answer
    assert answer["refused"], "every refusal reaches the audit trail"
    target = request_line.split(" ")[1]
    assert answer["refused"][0][0] == target, answer["refused"]
    assert answer["released"] is True


def test_the_ends_of_the_port_range_are_ports(lab: Lab) -> None:
    for port in (1, 65535):
        answer = connect(lab, ["any"], f"public.test:{port}")
        assert f"could not connect to public.test:{port}" in answer["answer"], answer
        assert answer["refused"] == []


def test_a_long_malformed_target_is_recorded_cut(lab: Lab) -> None:
    target = "a" * 400 + ":99999"
    answer = lab.ask(["any"], f"CONNECT {target} HTTP/1.1")
    assert answer["refused"][0][0] == target[:300]


def test_a_reason_that_is_not_latin_1_still_makes_a_header(lab: Lab) -> None:
    answer = lab.ask(
        ["public.test"], "CONNECT other.test:443 HTTP/1.1", hint="meith grants add --cwd /tmp/€"
    )
    head, _, body = answer["answer"].partition("\r\n\r\n")
    assert "X-Meith-Refused: " in head
    assert "/tmp/?" in head  # the header is latin-1: what is not becomes ?
    assert answer["refused"][0][1] in body.encode("latin-1").decode()  # the body is UTF-8


def test_plain_http_is_forwarded_to_the_allowed_host(lab: Lab) -> None:
    answer = lab.ask(["public.test:8080"], "GET http://public.test:8080/x HTTP/1.1\r\nHost: x")
    assert "hello from 203.0.113.7" in answer["answer"], answer
    assert refused(lab.ask(["any"], "GET http://loop.test:8080/ HTTP/1.1\r\nHost: x"))


def test_a_name_that_does_not_resolve_is_a_failure_not_a_refusal(lab: Lab) -> None:
    answer = connect(lab, ["any"], "nowhere.test:8080")
    assert answer["answer"].startswith("HTTP/1.1 403")
    assert "cannot resolve nowhere.test" in answer["answer"]
    assert answer["refused"] == []


def test_the_refusal_names_the_flag_to_add(lab: Lab) -> None:
    answer = connect(lab, ["public.test"], "api.public.test:443")
    assert refused(answer)
    assert "--net api.public.test:443" in answer["answer"]
    assert "(or --net *.public.test)" in answer["answer"]
    local = connect(lab, ["any"], "loop.test:8080")
    assert "--net 127.0.0.1:8080" in local["answer"]


def test_the_gate_on_a_loopback_port_decides_alike(lab: Lab) -> None:
    """On a host without network namespaces the gate listens on the host's loopback."""
    allowed = lab.ask(["public.test:8080"], "CONNECT public.test:8080 HTTP/1.1", tcp=True)
    assert reached(allowed) == "203.0.113.7", allowed
    # Listening from its start to its close, and nothing there once closed.
    assert allowed["listening"] == [False, True, False]
    assert allowed["bound"] == "127.0.0.1"  # the host's loopback only, never every address
    assert allowed["closed_port_refuses"] is True
    assert refused(lab.ask(["any"], "CONNECT 127.0.0.1:8080 HTTP/1.1", tcp=True))


def test_plain_http_is_forwarded_without_the_proxy_s_headers(lab: Lab) -> None:
    head = (
        "POST http://user:pw@public.test:8082/x?y=1 HTTP/1.1\r\nHost: public.test:8082\r\n"
        "Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n"
        "Connection: keep-alive\r\nX-Keep: 1\r\nContent-Length: 4\r\n\r\nbody"
    )
    answer = lab.ask(["public.test:8082"], raw=head)
    text = answer["answer"]
    assert text.startswith("hello from 203.0.113.7\nPOST /x?y=1 HTTP/1.1\r\n"), text
    assert "Host: public.test:8082\r\n" in text
    assert "X-Keep: 1\r\n" in text
    assert "user:pw" not in text  # the request line is rewritten, never passed on
    assert text.count(" HTTP/1.1\r\n") == 1
    assert "Proxy-" not in text
    assert "keep-alive" not in text
    assert text.endswith("Connection: close\r\n\r\nbody"), text
    bare = lab.ask(["public.test:8082"], "GET http://public.test:8082 HTTP/1.1\r\nHost: x")
    assert "GET / HTTP/1.1\r\n" in bare["answer"], bare


def test_default_ports_are_443_for_a_tunnel_and_80_for_http(lab: Lab) -> None:
    tunnel = connect(lab, ["public.test:443"], "public.test")
    assert "could not connect to public.test:443" in tunnel["answer"], tunnel
    assert tunnel["refused"] == []  # allowed, nobody listens: a failure, not a refusal
    plain = lab.ask(["public.test:80"], "GET http://public.test/ HTTP/1.1\r\nHost: x")
    assert "could not connect to public.test:80" in plain["answer"], plain
    assert plain["refused"] == []


def test_the_next_address_is_tried_when_one_does_not_answer(lab: Lab) -> None:
    assert reached(connect(lab, ["two.test"], "two.test:8080")) == "203.0.113.7"


def test_the_403_says_why_in_its_header_and_body(lab: Lab) -> None:
    text = connect(lab, ["any"], "127.0.0.1:8080")["answer"]
    head, _, body = text.partition("\r\n\r\n")
    fields = dict(line.split(": ", 1) for line in head.split("\r\n")[1:])
    assert head.startswith("HTTP/1.1 403 Forbidden\r\n")
    assert fields["Content-Type"] == "text/plain"
    assert fields["Connection"] == "close"
    assert int(fields["Content-Length"]) == len(body.encode())
    assert body == fields["X-Meith-Refused"] + "\n"


def test_a_request_head_is_read_up_to_its_limit(lab: Lab) -> None:
    filler = "X-Fill: " + "f" * 1000 + "\r\n"
    near = "CONNECT public.test:8080 HTTP/1.1\r\n" + filler * 65 + "\r\n"
    assert 65536 < len(near) < 2 * 65536  # more than one read, within the limit
    assert reached(lab.ask(["public.test"], raw=near)) == "203.0.113.7"
    over = "CONNECT public.test:8080 HTTP/1.1\r\n" + filler * 200 + "\r\n"
    answer = lab.ask(["public.test"], raw=over)
    assert answer["answer"].startswith("HTTP/1.1 403"), answer["answer"][:200]
    assert "request head over 65536 bytes" in answer["answer"]
    assert answer["refused"][0][0] == "(request)"


def test_closing_the_gate_drops_what_it_relays(lab: Lab) -> None:
    answer = lab.ask(["127.0.0.1:8081"], "CONNECT 127.0.0.1:8081 HTTP/1.1", close_after=True)
    assert answer["answer"].startswith("HTTP/1.1 200"), answer
    assert answer["dropped"] is True
    assert answer["late"] == ""
