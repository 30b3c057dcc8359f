"""What `--net` values mean, and the gate's decision for each destination."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from meith_core.confine.destinations import (
    Destination,
    DestinationError,
    decide,
    host_name,
    is_local,
    parse_destination,
    parse_destinations,
)
from meith_core.confine.gate import NetworkGate
from meith_core.policy.grants import new_grant
from tests.harness import MEITH


def test_destinations_parse_and_match() -> None:
    rules = parse_destinations(["pypi.org,*.pythonhosted.org:443", "[::1]:8080", "10.0.0.1"])
    assert [str(r) for r in rules] == [
        "pypi.org",
        "*.pythonhosted.org:443",
        "[::1]:8080",
        "10.0.0.1",
    ]
    # A public answer for every name (no resolver is asked).
    gate = NetworkGate(rules, resolve=lambda host, port: ["203.0.113.9"])

    def allowed(host: str, port: int) -> bool:
        return gate.decide(host, port).refusal is None

    assert allowed("pypi.org", 443)
    assert allowed("PyPI.org.", 80)
    assert allowed("files.pythonhosted.org", 443)
    assert not allowed("pythonhosted.org", 443)  # subdomains only
    assert not allowed("files.pythonhosted.org", 80)
    assert not allowed("evilpythonhosted.org", 443)
    assert allowed("::1", 8080)
    reason = gate.decide("example.com", 443).refusal
    assert reason is not None
    assert "--net example.com:443" in reason
    anything = NetworkGate(parse_destinations(["any"]), resolve=lambda host, port: ["203.0.113.9"])
    assert anything.decide("example.com", 1).refusal is None
    for bad in ("exa mple.com", "host:0", "host:99999", "[::1", "a:b:c:d]"):
        with pytest.raises(DestinationError):
            parse_destinations([bad])


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("example.org", "example.org"),
        ("Example.ORG.", "example.org"),
        ("example.org:443", "example.org:443"),
        ("*.example.org", "*.example.org"),
        ("*.example.org:443", "*.example.org:443"),
        ("any", "*"),
        ("ANY", "*"),
        ("10.0.0.5:5432", "10.0.0.5:5432"),
        ("[::1]:8080", "[::1]:8080"),
        ("[0:0:0:0:0:0:0:1]", "::1"),
        ("::1", "::1"),
        ("[::ffff:127.0.0.1]:5432", "127.0.0.1:5432"),
        ("localhost:5432", "localhost:5432"),
        ("_srv.example.org", "_srv.example.org"),
        ("x-1.example.org:1", "x-1.example.org:1"),
        ("example.org:65535", "example.org:65535"),
    ],
)
def test_a_destination_parses_to_its_canonical_form(value: str, parsed: str) -> None:
    destination = parse_destination(value)
    assert (destination.host if destination.host == "*" else str(destination)) == parsed


@pytest.mark.parametrize(
    "value",
    [
        "",
        "  ",
        "any:80",
        "any:",
        "[::1]8080",
        "[::1",
        "[::1]:",
        "[example.org]:80",
        "a:b:c:d]",
        "::1:8080:",
        ".example.org",
        "example.org..",
        "exa mple.com",
        "example..org",
        "*.",
        "*",
        "*.*.example.org",
        "foo*.example.org",
        "*.10.0.0.1",
        "host:0",
        "host:65536",
        "host:99999",
        "host:-1",
        "host:http",
        "127.1",
        "2130706433",
        "a" * 64 + ".org",
        ".".join(["a" * 60] * 5),
        "exa/mple.org",
        "example.org:443:1",
    ],
)
def test_a_malformed_destination_is_an_error(value: str) -> None:
    with pytest.raises(DestinationError):
        parse_destination(value)


def test_names_are_held_to_dns_lengths() -> None:
    label = "a" * 63
    longest = ".".join([label, label, label, "b" * 61])  # 253 characters
    assert len(longest) == 253
    assert str(parse_destination(longest)) == longest
    assert str(parse_destination(longest + ".")) == longest
    with pytest.raises(DestinationError):
        parse_destination(longest + "b")
    assert str(parse_destination(label + ".org")) == label + ".org"
    with pytest.raises(DestinationError):
        parse_destination("a" + label + ".org")


def test_every_name_character_and_digit_labels_but_the_last() -> None:
    every = "abcdefghijklmnopqrstuvwxyz0123456789-_"
    assert str(parse_destination(f"{every}.example")) == f"{every}.example"
    assert str(parse_destination("127.example.org")) == "127.example.org"
    assert str(parse_destination("1.2.3.example")) == "1.2.3.example"
    with pytest.raises(DestinationError, match="not a host name or address"):
        parse_destination("example.123")
    with pytest.raises(DestinationError, match="neither a host name nor an address"):
        host_name("example.123")


def test_each_malformed_value_says_what_is_wrong() -> None:
    for value, why in (
        ("", "an empty --net destination"),
        ("[::1", "unclosed"),
        ("[::1]8080", "expected :PORT after"),
        ("[example.org]:80", "not an address inside"),
        ("::1:8080:", "an IPv6 address with a port goes in"),
        ("any:80", "takes no port"),
        ("host:0", "1-65535"),
        ("*.10.0.0.1", "takes a domain, not an address"),
        ("exa mple.org", "not a host name or address"),
    ):
        with pytest.raises(DestinationError) as raised:
            parse_destination(value)
        assert why in str(raised.value), (value, str(raised.value))


def test_answers_are_booleans() -> None:
    import ipaddress

    rule = parse_destination("a.example:1")
    assert rule.matches("b.example", 1) is False
    assert rule.matches("a.example", 2) is False
    assert rule.names_address(ipaddress.ip_address("10.0.0.1"), 2) is False
    assert is_local("not-an-address") is False
    # An address object in its IPv4-mapped form is the IPv4 address it maps.
    assert is_local(ipaddress.ip_address("::ffff:127.0.0.1")) is True
    assert is_local(ipaddress.ip_address("::ffff:8.8.8.8")) is False


def test_a_comma_list_splits_and_repeats_go() -> None:
    rules = parse_destinations(["a.org,b.org:443", "a.org", " ,c.org"])
    assert [str(r) for r in rules] == ["a.org", "b.org:443", "c.org"]


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.255.255.254",
        "0.0.0.0",
        "0.1.2.3",
        "10.0.0.1",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "100.127.255.255",
        "100.100.100.200",
        "168.63.129.16",
        "192.0.0.1",
        "198.18.0.1",
        "224.0.0.1",
        "255.255.255.255",
        "240.0.0.1",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "fd00:ec2::254",
        "fec0::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "::127.0.0.1",
        "64:ff9b::7f00:1",
        "64:ff9b::a9fe:a9fe",
    ],
)
def test_local_addresses(address: str) -> None:
    assert is_local(address)


@pytest.mark.parametrize(
    "address",
    [
        "93.184.216.34",
        "8.8.8.8",
        "100.63.255.255",
        "100.128.0.0",
        "172.15.255.255",
        "172.32.0.0",
        "169.253.0.1",
        "11.0.0.1",
        "203.0.113.7",
        "2001:db8::7",
        "2606:4700::1111",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
        "not-an-address",
    ],
)
def test_internet_addresses(address: str) -> None:
    assert not is_local(address)


def _public(host: str, port: int) -> list[str]:
    return ["203.0.113.7"]


def test_wildcards_match_subdomains_only() -> None:
    rule = parse_destination("*.example.org:443")
    assert rule.matches("a.example.org", 443)
    assert rule.matches("a.b.example.org", 443)
    assert not rule.matches("example.org", 443)
    assert not rule.matches("a.example.org", 80)
    assert not rule.matches("aexample.org", 443)
    assert not rule.matches("example.org.evil", 443)


def test_a_rule_names_an_address_or_localhost_the_loopback() -> None:
    import ipaddress

    loop, loop6 = ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")
    other = ipaddress.ip_address("127.0.0.2")
    assert parse_destination("localhost").names_address(loop, 1)
    assert parse_destination("localhost").names_address(other, 1)
    assert parse_destination("localhost").names_address(loop6, 1)
    assert not parse_destination("localhost").names_address(ipaddress.ip_address("10.0.0.1"), 1)
    assert parse_destination("127.0.0.1:5").names_address(loop, 5)
    assert not parse_destination("127.0.0.1:5").names_address(loop, 6)
    assert not parse_destination("127.0.0.1").names_address(other, 5)
    assert not parse_destination("any").names_address(loop, 5)
    assert not parse_destination("loop.example").names_address(loop, 5)


def test_where_a_forwarder_listens_inside() -> None:
    assert parse_destination("127.0.0.1:5432").loopback_listens() == ["127.0.0.1:5432"]
    assert parse_destination("[::1]:6379").loopback_listens() == ["[::1]:6379"]
    assert parse_destination("localhost:5432").loopback_listens() == [
        "127.0.0.1:5432",
        "[::1]:5432",
    ]
    assert parse_destination("127.0.0.1").loopback_listens() == []  # no port: proxy only
    assert parse_destination("10.0.0.5:5432").loopback_listens() == []
    assert parse_destination("db.example:5432").loopback_listens() == []
    assert parse_destination("any").loopback_listens() == []


def test_decide_without_a_resolver_for_literals() -> None:
    def never(host: str, port: int) -> list[str]:
        raise AssertionError("a literal is not resolved")

    rules = parse_destinations(["any"])
    assert decide(rules, "203.0.113.7", 443, never).addresses == ("203.0.113.7",)
    assert decide(rules, "2001:DB8::7", 443, never).addresses == ("2001:db8::7",)
    assert decide(rules, "127.0.0.1", 443, never).refusal is not None
    verdict = decide(parse_destinations(["example.org"]), "example.org", 443, _public)
    assert verdict == type(verdict)(("203.0.113.7",))


def test_decide_a_resolver_that_fails_or_answers_nothing() -> None:
    def fails(host: str, port: int) -> list[str]:
        raise OSError("no such name")

    rules = (Destination("*"),)
    assert decide(rules, "x.example", 1, fails).failure == "meith: cannot resolve x.example"
    empty = decide(rules, "x.example", 1, lambda h, p: [])
    assert empty.failure is not None
    assert empty.refusal is None


def test_the_refusal_hint_names_the_grant() -> None:
    verdict = decide((), "a.b.example.org", 443, _public, "HINT --net")
    assert verdict.refusal is not None
    assert "HINT --net a.b.example.org:443 (or --net *.b.example.org)" in verdict.refusal
    verdict = decide((), "example.org", 443, _public, "HINT --net")
    assert verdict.refusal is not None
    assert "(or" not in verdict.refusal
    verdict = decide((), "::1", 8080, _public, "HINT --net")
    assert verdict.refusal is not None
    assert "HINT --net [::1]:8080" in verdict.refusal


def test_malformed_net_values_are_errors_when_the_grant_is_made(tmp_path: Path) -> None:
    for bad in ("any:80", "[::1]8080", ".example.org", "example.org.."):
        with pytest.raises(DestinationError):
            new_grant("agent", ["starts-process"], cwd_prefix=str(tmp_path), net=[bad])


@pytest.mark.slow
def test_malformed_net_values_are_errors_on_the_command_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEITH_")}
    env["MEITH_HOME"] = str(tmp_path / "home")
    base = [MEITH, "grants", "add", "--caller", "agent", "-c", "starts-process"]
    for bad in ("any:80", "[::1]8080"):
        done = subprocess.run(
            [*base, "--cwd", str(tmp_path), "--net", bad],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert done.returncode != 0, (bad, done.stdout)
        assert "--net" in done.stderr
    listed = subprocess.run(
        [MEITH, "grants", "list", "--json"], capture_output=True, text=True, env=env, check=False
    )
    assert json.loads(listed.stdout or "[]") == []
