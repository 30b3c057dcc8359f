"""The environment variables that lead a started process back to meith: its home (the trust
root), its socket, its CLI and a session's token. One list, for everything that gives them to
a child or takes them away from one."""

from __future__ import annotations

from typing import Final

HOME_ENV: Final = "MEITH_HOME"
SOCKET_ENV: Final = "MEITH_SOCKET"
CLI_ENV: Final = "MEITH_CLI_BIN"
#: Where a child finds its session's token (`ToolContext.child_environment`).
TOKEN_ENV: Final = "MEITH_SESSION_TOKEN"  # noqa: S105 - a variable name
#: Every call-back variable: a confined child, and a hook, get none of the local user's.
CALLBACK_ENV: Final = (HOME_ENV, SOCKET_ENV, CLI_ENV, TOKEN_ENV)

__all__ = ["CALLBACK_ENV", "CLI_ENV", "HOME_ENV", "SOCKET_ENV", "TOKEN_ENV"]
