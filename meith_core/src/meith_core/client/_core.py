"""What the sync and async clients share: frame building, routing, errors. Stdlib only."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

from meith_core.base.home import MeithHome
from meith_core.base.ids import new_id
from meith_core.base.instances import (
    RuntimeTarget,
    TargetError,
    connect_error_message,
    resolve_target,
)
from meith_core.base.peers import peer_credentials
from meith_core.protocol.constants import PROTOCOL_VERSION

EventCallback = Callable[[dict[str, Any]], None]


class TransportError(RuntimeError):
    """The runtime could not be reached, or the exchange broke. `code` is the protocol code."""

    def __init__(
        self, message: str, code: str = "PROTOCOL_ERROR", socket_path: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.socket_path = socket_path


class ConnectError(TransportError):
    """Nothing (or nothing trustworthy) listens at the socket."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a call: the cancel was sent; `result` is the final envelope if it came."""

    def __init__(self, result: dict[str, Any] | None) -> None:
        super().__init__()
        self.result = result


def locate(socket_path: str | None, instance: str | None, home: MeithHome | None) -> RuntimeTarget:
    try:
        return resolve_target(
            home or MeithHome.from_env(), socket_path=socket_path, instance=instance
        )
    except TargetError as exc:
        raise ConnectError(str(exc)) from None


def check_peer(sock: socket.socket, path: str) -> None:
    """Refuse a socket served by another user: it could impersonate the runtime."""
    try:
        _pid, uid, _gid = peer_credentials(sock)
    except OSError as exc:
        raise ConnectError(f"cannot verify who serves {path}: {exc}", socket_path=path) from None
    if uid != os.geteuid():
        raise ConnectError(
            f"refusing to talk to {path}: it is served by uid {uid}, not by you (uid {os.geteuid()})",
            socket_path=path,
        )


def open_socket(path: str, timeout: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError as exc:
        sock.close()
        raise ConnectError(connect_error_message(path, exc), socket_path=path) from None
    try:
        check_peer(sock, path)
    except BaseException:
        sock.close()
        raise
    return sock


def client_info(
    caller: str,
    cwd: str | None,
    *,
    label: str | None = None,
    approvals: bool = False,
    socket_path: str | None = None,
    console: bool = False,
    console_url: str | None = None,
    approvals_shared: bool = False,
) -> dict[str, Any]:
    info: dict[str, Any] = {"caller": caller, "cwd": os.path.abspath(cwd) if cwd else os.getcwd()}
    # A process a session started calls back as that session (the server ignores `caller`),
    # on the runtime that gave it the token along with `MEITH_SOCKET`: sent to another
    # runtime, which does not know it, the token would only get the call refused.
    token = os.environ.get("MEITH_SESSION_TOKEN")
    home_socket = os.environ.get("MEITH_SOCKET")
    if (
        token
        and home_socket
        and (socket_path is None or os.path.abspath(socket_path) == os.path.abspath(home_socket))
    ):
        info["sessionToken"] = token
    if label is not None:
        info["label"] = label
    if approvals:
        info["approvals"] = True
        if approvals_shared:
            info["approvalsShared"] = True
    if console:
        info["console"] = True
        if console_url:
            info["consoleUrl"] = console_url
    return info


def hello_frame(info: dict[str, Any]) -> dict[str, Any]:
    return {"type": "hello", "protocol": PROTOCOL_VERSION, "clientInfo": info}


def end_session_frame() -> dict[str, Any]:
    return {"type": "end_session", "protocol": PROTOCOL_VERSION}


def ping_frame() -> dict[str, Any]:
    return {"type": "ping", "protocol": PROTOCOL_VERSION}


def list_sessions_frame() -> dict[str, Any]:
    return {"type": "list_sessions", "protocol": PROTOCOL_VERSION}


def revoke_session_frame(session_id: str) -> dict[str, Any]:
    return {"type": "revoke_session", "protocol": PROTOCOL_VERSION, "sessionId": session_id}


def approval_response_frame(approval_id: str, decision: str, answered_by: str) -> dict[str, Any]:
    return {
        "type": "approval_response",
        "protocol": PROTOCOL_VERSION,
        "approvalId": approval_id,
        "decision": decision,
        "answeredBy": answered_by,
    }


def tool_call_frame(
    name: str,
    arguments: dict[str, Any] | None,
    *,
    request_id: str | None,
    info: dict[str, Any],
    timeout_ms: int | None,
    with_text: bool = False,
    text_only: bool = False,
    trace: dict[str, str] | None = None,
) -> dict[str, Any]:
    frame: dict[str, Any] = {
        "type": "tool_call",
        "protocol": PROTOCOL_VERSION,
        "requestId": request_id or new_id("req"),
        "toolName": name,
        "arguments": arguments or {},
        "clientInfo": info,
    }
    if timeout_ms:
        frame["timeoutMs"] = timeout_ms
    if with_text:
        frame["withText"] = True
    if text_only:
        frame["textOnly"] = True
    if trace:
        frame["traceContext"] = trace
    return frame


def cancel_frame(request_id: str) -> dict[str, Any]:
    return {"type": "cancel_tool_call", "protocol": PROTOCOL_VERSION, "requestId": request_id}


def list_tools_frame(
    info: dict[str, Any], names: list[str] | None = None, *, watch: bool = False
) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": "list_tools", "protocol": PROTOCOL_VERSION, "clientInfo": info}
    if names is not None:
        frame["names"] = names
    if watch:
        frame["watch"] = True
    return frame


def error_from_frame(frame: dict[str, Any], path: str) -> TransportError:
    return TransportError(
        str(frame.get("message") or "protocol error"),
        str(frame.get("code") or "PROTOCOL_ERROR"),
        path,
    )
