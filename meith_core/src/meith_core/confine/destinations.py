"""The network wall's destinations: what `--net` values mean, which addresses are local, and
where a request may connect.

A rule is `HOST`, `HOST:PORT`, `*.DOMAIN[:PORT]`, an address (`10.0.0.5:5432`, `[::1]:8080`),
`localhost[:PORT]` or `any` (no port: `any:80` is an error, never a host named "any"). A rule
without a port allows every port. Malformed values are errors when the grant is made.

Local addresses — loopback, link-local, private, carrier-grade NAT (100.64.0.0/10),
unspecified, multicast and reserved, the cloud metadata services (169.254.169.254,
fd00:ec2::254, 168.63.129.16), and their IPv4-mapped, -compatible and NAT64 forms — are the
host's own services and its networks: a request reaches one only through a rule that names that
address literally (or `localhost`, which names the loopback addresses). `any` and name rules
mean the internet. A name is resolved here and connected to by address; an address of its
answer that is local and not named is never connected to: a name whose whole answer is such is
refused, and of a mixed answer (a public and a local address) only the public ones are used.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

IP = ipaddress.IPv4Address | ipaddress.IPv6Address


class DestinationError(ValueError):
    """A `--net` value (or a requested host) that is not what the rules above allow."""


_LOCAL_V4: Final = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",  # "this network": 0.0.0.0 reaches the host itself
        "10.0.0.0/8",
        "100.64.0.0/10",  # carrier-grade NAT (tailnets), Alibaba's metadata service
        "127.0.0.0/8",
        "169.254.0.0/16",  # link-local, the metadata service 169.254.169.254
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, broadcast
        "168.63.129.16/32",  # Azure's wire server (metadata) at a public-looking address
    )
)
_LOCAL_V6: Final = tuple(
    ipaddress.IPv6Network(n)
    for n in (
        "::/128",
        "::1/128",
        "fc00::/7",  # unique local, the metadata service fd00:ec2::254
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
    )
)
#: IPv6 prefixes that carry an IPv4 address in their last 32 bits (compatible, NAT64).
_EMBEDDING: Final = (ipaddress.IPv6Network("::/96"), ipaddress.IPv6Network("64:ff9b::/96"))
_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


def canonical_address(text: str) -> IP | None:
    """The address `text` is written as (an IPv4-mapped IPv6 address as its IPv4 address), or
    None when it is not an address literal."""
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def is_local(address: str | IP) -> bool:
    """Whether `address` is one of the host's own services or networks (see the module)."""
    ip = canonical_address(address) if isinstance(address, str) else address
    if ip is None:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return is_local(ip.ipv4_mapped)
        for prefix in _EMBEDDING:
            if ip in prefix:  # (`::` and `::1` embed 0.0.0.0/8: local, as they are)
                return is_local(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        return any(ip in net for net in _LOCAL_V6)
    return any(ip in net for net in _LOCAL_V4)


def is_literal(host: str) -> bool:
    return canonical_address(host) is not None


def bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def host_name(text: str) -> str:
    """`text` as a host: a canonical address, or a lower-case name without its one optional
    trailing dot. Raises DestinationError for anything else (an empty label, `..`, a character
    no name has, an all-digit last label that is no address: `127.1`)."""
    host = text.lower()
    ip = canonical_address(host)
    if ip is not None:
        return str(ip)
    if host.endswith("."):
        host = host[:-1]
    labels = host.split(".")
    if not host or len(host) > 253:
        raise DestinationError(f"{text!r} is not a host name")
    for label in labels:
        if not label or len(label) > 63 or not set(label) <= _NAME_CHARS:
            raise DestinationError(f"{text!r} is not a host name")
    if labels[-1].isdigit():
        raise DestinationError(f"{text!r} is neither a host name nor an address")
    return host


@dataclass(frozen=True, slots=True)
class Destination:
    """One allowed destination: a name, `*.domain`, `*` (any), or an address; and a port
    (None: any)."""

    host: str
    port: int | None = None

    @property
    def wildcard(self) -> bool:
        return self.host.startswith("*.")

    def _port_ok(self, port: int) -> bool:
        return self.port is None or self.port == port

    def matches(self, host: str, port: int) -> bool:
        """Whether this rule allows the canonical `host` (as `host_name` gives it) by name."""
        if not self._port_ok(port):
            return False
        if self.host == "*":
            return True
        if self.wildcard:
            return host.endswith(self.host[1:])  # a canonical host has no leading dot
        return host == self.host

    def names_address(self, ip: IP, port: int) -> bool:
        """Whether this rule names `ip` itself: the same address, or `localhost` for a loopback
        address. Only such a rule opens a local address."""
        if not self._port_ok(port):
            return False
        if self.host == "localhost":
            return ip.is_loopback
        return canonical_address(self.host) == ip

    def loopback_listens(self) -> list[str]:
        """Where a forwarder inside listens for this rule: a loopback address with a port."""
        if self.port is None:
            return []
        if self.host == "localhost":
            return [f"127.0.0.1:{self.port}", f"[::1]:{self.port}"]
        ip = canonical_address(self.host)
        if ip is None or not ip.is_loopback:
            return []
        return [f"{bracket(str(ip))}:{self.port}"]

    def __str__(self) -> str:
        return self.host if self.port is None else f"{bracket(self.host)}:{self.port}"


def parse_destination(value: str) -> Destination:
    text = value.strip().lower()
    if not text:
        raise DestinationError("an empty --net destination")
    if text == "any":
        return Destination("*")
    host, port = text, None
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise DestinationError(f"--net {value!r}: unclosed [")
        host, rest = text[1:end], text[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise DestinationError(f"--net {value!r}: expected :PORT after ]")
            port = _port(rest[1:], value)
        if canonical_address(host) is None:
            raise DestinationError(f"--net {value!r}: not an address inside [ ]")
    elif text.count(":") == 1:
        host, raw = text.split(":")
        port = _port(raw, value)
    elif ":" in text and canonical_address(text) is None:
        raise DestinationError(f"--net {value!r}: an IPv6 address with a port goes in [ ]")
    if host == "any":
        raise DestinationError(f"--net {value!r}: `any` takes no port (it means every port)")
    wildcard = host.startswith("*.")
    try:
        name = host_name(host[2:] if wildcard else host)
    except DestinationError:
        raise DestinationError(f"--net {value!r}: not a host name or address") from None
    if wildcard and is_literal(name):
        raise DestinationError(f"--net {value!r}: *. takes a domain, not an address")
    return Destination(f"*.{name}" if wildcard else name, port)


def _port(raw: str, value: str) -> int:
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise DestinationError(f"--net {value!r}: the port must be 1-65535")
    return int(raw)


def parse_destinations(values: Iterable[str]) -> tuple[Destination, ...]:
    """Every destination of `--net` values (each may hold several, comma-separated)."""
    out: list[Destination] = []
    for value in values:
        out += [parse_destination(part) for part in value.split(",") if part.strip()]
    return tuple(dict.fromkeys(out))


#: `(host, port) -> addresses` in the resolver's order (`getaddrinfo` by default).
Resolver = Callable[[str, int], list[str]]


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


@dataclass(frozen=True, slots=True)
class Verdict:
    """Where a request may connect (addresses, in order), or why not: `refusal` (a decision of
    the policy, audited) or `failure` (the name does not resolve)."""

    addresses: tuple[str, ...] = ()
    refusal: str | None = None
    failure: str | None = None


def decide(
    rules: Iterable[Destination],
    requested: str,
    port: int,
    resolve: Resolver = system_resolver,
    hint: str = "meith grants add ... --net",
) -> Verdict:
    """Where the request for `requested`:`port` may connect under `rules`."""
    rules = tuple(rules)
    try:
        host = host_name(requested)
    except DestinationError as exc:
        return Verdict(refusal=f"meith: refused: {exc}")
    shown = f"{bracket(host)}:{port}"
    ip = canonical_address(host)
    if ip is not None and is_local(ip):
        if any(r.names_address(ip, port) for r in rules):
            return Verdict((str(ip),))
        return Verdict(
            refusal=f"meith: {shown} is a local address, reachable only through a rule that "
            f"names it (`any` and host names mean the internet); to allow it: {hint} {shown}"
        )
    if not any(r.matches(host, port) for r in rules):
        domain = host.split(".", 1)[1] if host.count(".") >= 2 and ip is None else ""
        return Verdict(
            refusal=f"meith: {shown} is not among the destinations this process's grant "
            f"allows; to allow it: {hint} {shown}" + (f" (or --net *.{domain})" if domain else "")
        )
    if ip is not None:
        return Verdict((str(ip),))
    try:
        answer = resolve(host, port)
    except OSError:
        return Verdict(failure=f"meith: cannot resolve {host}")
    addresses = list(dict.fromkeys(str(a) for a in map(canonical_address, answer) if a))
    allowed = [
        a
        for a in addresses
        if not is_local(a) or any(r.names_address(ipaddress.ip_address(a), port) for r in rules)
    ]
    if allowed:
        return Verdict(tuple(allowed))
    if not addresses:
        return Verdict(failure=f"meith: cannot resolve {host}")
    first = f"{bracket(addresses[0])}:{port}"
    return Verdict(
        refusal=f"meith: {host} resolves to a local address ({addresses[0]}), reachable only "
        f"through a rule that names that address; to allow it: {hint} {first}"
    )


__all__ = [
    "Destination",
    "DestinationError",
    "Resolver",
    "Verdict",
    "bracket",
    "canonical_address",
    "decide",
    "host_name",
    "is_literal",
    "is_local",
    "parse_destination",
    "parse_destinations",
    "system_resolver",
]
