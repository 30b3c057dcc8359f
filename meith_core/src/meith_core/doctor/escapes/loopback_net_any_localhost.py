"""`--net any` and the host's loopback by the name `localhost`."""

from __future__ import annotations

from meith_core.doctor.escapes.loopback_net_any import entry

ENTRY = entry("localhost", "-localhost", "localhost")
