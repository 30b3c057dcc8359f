"""The plugin API version and the range a plugin says it was built for.

A plugin declares `MEITH_PLUGIN_API = ">=1,<2"` at the top of the module that holds its
plugin object (or on the plugin class). Versions are whole numbers: the API changes
incompatibly only with a new number, so a range of majors is all a plugin needs to say.
"""

from __future__ import annotations

import operator
import re
import sys
from collections.abc import Callable
from typing import Any, Final

#: The plugin API this meith-core provides.
PLUGIN_API: Final = 1
#: The attribute a plugin module (or class) sets to the API range it was built for.
API_ATTRIBUTE: Final = "MEITH_PLUGIN_API"

_OPS: dict[str, Callable[[int, int], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<)?\s*(\d+)\s*$")


class PluginApiError(ValueError):
    """The plugin's declared API range is malformed or excludes this host's API."""


def declared_range(plugin: Any) -> str | None:
    """The range the plugin object, its class or its module declares, if any."""
    for holder in (plugin, type(plugin), sys.modules.get(getattr(plugin, "__module__", "") or "")):
        value = getattr(holder, API_ATTRIBUTE, None) if holder is not None else None
        if value is not None:
            return value if isinstance(value, str) else str(value)
    return None


def parse_range(spec: str) -> list[tuple[str, int]]:
    clauses: list[tuple[str, int]] = []
    for part in spec.split(","):
        match = _CLAUSE.match(part)
        if match is None:
            raise PluginApiError(
                f"{API_ATTRIBUTE} = {spec!r} is not a range of API versions; write e.g. '>=1,<2'"
            )
        clauses.append((match.group(1) or "==", int(match.group(2))))
    return clauses


def check_compatible(plugin_id: str, spec: str | None, host_api: int = PLUGIN_API) -> None:
    """Raise PluginApiError with a sentence saying what to upgrade when `spec` excludes the host."""
    if spec is None:
        return
    clauses = parse_range(spec)
    if all(_OPS[op](host_api, n) for op, n in clauses):
        return
    # Built for a newer API when some lower bound is above the host's version.
    newer = any(op in (">=", ">", "==") and n > host_api for op, n in clauses)
    if newer:
        advice = "upgrade meith-core (pip install -U meith-core)"
    else:
        advice = f"upgrade the plugin to a release built for plugin API {host_api}"
    from meith_core._version import __version__

    raise PluginApiError(
        f"plugin {plugin_id!r} was built for meith plugin API {spec}, but this meith-core "
        f"{__version__} provides plugin API {host_api}; {advice}"
    )
