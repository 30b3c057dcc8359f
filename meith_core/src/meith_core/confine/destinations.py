"""The network wall's destinations: what `--net` values mean (`HOST`, `HOST:PORT`,
`*.DOMAIN[:PORT]`, `any`), and which addresses are local (the host's own services)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass


class DestinationError(ValueError):
    """A `--net` value that is not HOST, HOST:PORT, *.DOMAIN[:PORT] or `any`."""


@dataclass(frozen=True, slots=True)
class Destination:
    """One allowed destination: a host (or `*.domain`), and a port (None: any)."""

    host: str
    port: int | None = None

    @property
    def wildcard(self) -> bool:
        return self.host.startswith("*.")

    def matches(self, host: str, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.host == "*":
            return True
        host = host.lower().rstrip(".")
        if self.wildcard:
            return host.endswith(self.host[1:]) and len(host) > len(self.host) - 1
        return host == self.host

    def __str__(self) -> str:
        return self.host if self.port is None else f"{bracket(self.host)}:{self.port}"


def bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


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
    elif text.count(":") == 1:
        host, raw = text.split(":")
        port = _port(raw, value)
    host = host.rstrip(".")
    label = host[2:] if host.startswith("*.") else host
    if not label or not all(c.isalnum() or c in "-.:_" for c in label):
        raise DestinationError(f"--net {value!r}: not a host name or address")
    return Destination(host, port)


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


def is_local(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    return ip.is_loopback or ip.is_link_local or ip.is_private or ip.is_unspecified


def is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


__all__ = [
    "Destination",
    "DestinationError",
    "bracket",
    "is_literal",
    "is_local",
    "parse_destination",
    "parse_destinations",
]
