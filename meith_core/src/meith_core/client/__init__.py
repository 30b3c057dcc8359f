"""Python clients of a running meith runtime.

`Client` (blocking) and `AsyncClient` (asyncio). Both find the runtime like the CLI does: an
explicit socket, an instance pid/label, the newest live instance, then config.json. Both refuse
a socket served by another user.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from meith_core.client._core import ConnectError, Interrupted, TransportError
from meith_core.client.sync import Client

__all__ = ["AsyncClient", "Client", "ConnectError", "Interrupted", "TransportError"]


def __getattr__(name: str) -> Any:
    if name == "AsyncClient":  # asyncio is a heavy import for the sync path; load on demand
        from meith_core.client.aio import AsyncClient

        return AsyncClient
    raise AttributeError(name)


if TYPE_CHECKING:
    from meith_core.client.aio import AsyncClient
