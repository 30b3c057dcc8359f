"""`--net any` and the host's loopback as an IPv4-mapped IPv6 address."""

from __future__ import annotations

from meith_core.doctor.escapes.loopback_net_any import entry

ENTRY = entry("::ffff:127.0.0.1", "-mapped", "[::ffff:127.0.0.1]")
