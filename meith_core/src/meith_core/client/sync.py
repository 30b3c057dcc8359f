"""A blocking client for scripts and the CLI: one socket, no asyncio, no pydantic on the path.

```python
from meith_core.client import Client
with Client() as c:
    print(c.call("app_health").content)
```
"""

from __future__ import annotations

import socket
import time
from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from meith_core.base.home import MeithHome
from meith_core.client._core import (
    ConnectError,
    EventCallback,
    Interrupted,
    TransportError,
    cancel_frame,
    client_info,
    error_from_frame,
    hello_frame,
    list_sessions_frame,
    list_tools_frame,
    locate,
    open_socket,
    tool_call_frame,
)
from meith_core.protocol.framing import Frame, NdjsonFramer, encode_frame

if TYPE_CHECKING:
    from meith_core.protocol.results import ToolResult

#: After Ctrl-C, how long to wait for the runtime's CANCELLED answer.
INTERRUPT_GRACE_S = 1.0


class Client:
    def __init__(
        self,
        socket_path: str | None = None,
        *,
        instance: str | None = None,
        home: MeithHome | None = None,
        caller: str = "cli",
        cwd: str | None = None,
        connect_timeout: float = 5.0,
        label: str | None = None,
    ) -> None:
        target = locate(socket_path, instance, home)
        self.socket_path = target.socket_path
        self.target = target
        self._info = client_info(caller, cwd, label=label, socket_path=self.socket_path)
        #: Set when the runtime said the tool list changed (after `list_tools(watch=True)`);
        #: the client notices while it waits for something else. Reset it after re-listing.
        self.tools_changed = False
        self._sock: socket.socket = open_socket(self.socket_path, connect_timeout)
        self._sock.settimeout(None)
        self._framer = NdjsonFramer(strict=False)  # the runtime's uid was verified
        self._backlog: deque[dict[str, Any]] = deque()
        #: Called whenever the client is about to wait for the runtime (all received frames
        #: handled): the CLI flushes stdout here, so piped output is live without a flush per line.
        self.before_wait: Callable[[], None] | None = None

    # -- plumbing -----------------------------------------------------------------------

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _send(self, frame: dict[str, Any]) -> None:
        try:
            self._sock.sendall(encode_frame(frame))
        except OSError as exc:
            raise TransportError(
                f"Connection to the runtime failed: {exc}", socket_path=self.socket_path
            ) from None

    def _next_frame(self, deadline: float | None) -> dict[str, Any]:
        while not self._backlog:
            if self.before_wait is not None:
                self.before_wait()
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            if timeout == 0.0:
                raise TimeoutError
            self._sock.settimeout(timeout)
            try:
                data = self._sock.recv(1 << 16)
            except TimeoutError:
                raise
            except OSError as exc:
                raise TransportError(
                    f"Connection to the runtime failed: {exc}", socket_path=self.socket_path
                ) from None
            if not data:
                raise TransportError("Connection closed by runtime", socket_path=self.socket_path)
            for event in self._framer.feed(data):
                if not isinstance(event, Frame):  # unparseable server frames are skipped
                    continue
                if event.message.get("type") == "tools_changed":
                    self.tools_changed = True
                else:
                    self._backlog.append(event.message)
        return self._backlog.popleft()

    # -- API ----------------------------------------------------------------------------

    def list_tools(
        self, timeout: float = 30.0, *, names: list[str] | None = None, watch: bool = False
    ) -> list[dict[str, Any]]:
        """Tool descriptors; `names` asks for just those (older runtimes send all); `watch`
        subscribes to changes (see `tools_changed`)."""
        frame = self._ask(list_tools_frame(self._info, names, watch=watch), "tools_list", timeout)
        tools = frame.get("tools")
        if not isinstance(tools, list):
            return []
        return tools if names is None else [t for t in tools if t.get("name") in names]

    def hello(self, timeout: float = 30.0) -> dict[str, Any]:
        """Fix this connection's identity; returns the `welcome` frame."""
        return self._ask(hello_frame(self._info), "welcome", timeout)

    def list_sessions(self, timeout: float = 30.0) -> list[dict[str, Any]]:
        """The runtime's live sessions: sessionId, caller, label, since, calls, grants."""
        sessions = self._ask(list_sessions_frame(), "sessions_list", timeout).get("sessions")
        return sessions if isinstance(sessions, list) else []

    def _ask(self, request: dict[str, Any], answer: str, timeout: float) -> dict[str, Any]:
        self._send(request)
        deadline = time.monotonic() + timeout
        while True:
            try:
                frame = self._next_frame(deadline)
            except TimeoutError:
                raise TransportError(
                    f"Timed out waiting for {answer}", socket_path=self.socket_path
                ) from None
            if frame.get("type") == answer:
                return frame
            if frame.get("type") == "error" and "requestId" not in frame:
                raise error_from_frame(frame, self.socket_path)

    def call_raw(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout_ms: int | None = None,
        on_event: EventCallback | None = None,
        request_id: str | None = None,
        client_timeout: float | None = None,
        with_text: bool = False,
        text_only: bool = False,
    ) -> dict[str, Any]:
        """Call a tool; returns the result envelope as a dict. Tool failures are results;
        transport failures raise TransportError; Ctrl-C cancels and raises Interrupted.
        `with_text`: the result carries the tool's text for a model too (`text`); `text_only`:
        a result the tool rendered carries only that text, no `content`."""
        frame = tool_call_frame(
            name,
            arguments,
            request_id=request_id,
            info=self._info,
            timeout_ms=timeout_ms,
            with_text=with_text,
            text_only=text_only,
        )
        rid = frame["requestId"]
        self._send(frame)
        if client_timeout is None and timeout_ms:
            client_timeout = (
                timeout_ms / 1000 + 10.0
            )  # the runtime answers at the deadline; this is a backstop
        deadline = None if client_timeout is None else time.monotonic() + client_timeout
        try:
            return self._await_result(rid, on_event, deadline, name)
        except KeyboardInterrupt:
            self._send(cancel_frame(rid))
            try:
                result = self._await_result(rid, None, time.monotonic() + INTERRUPT_GRACE_S, name)
            except (TransportError, KeyboardInterrupt):
                result = None
            raise Interrupted(result) from None

    def _await_result(
        self, rid: str, on_event: EventCallback | None, deadline: float | None, name: str
    ) -> dict[str, Any]:
        while True:
            try:
                frame = self._next_frame(deadline)
            except TimeoutError:
                raise TransportError(
                    f'Tool "{name}" timed out (no answer from the runtime)',
                    "TIMEOUT",
                    self.socket_path,
                ) from None
            kind = frame.get("type")
            if frame.get("requestId") != rid:
                if kind == "error" and "requestId" not in frame:
                    raise error_from_frame(frame, self.socket_path)
                continue
            if kind == "tool_event":
                event = frame.get("event")
                if on_event is not None and isinstance(event, dict):
                    on_event(event)
            elif kind == "tool_result":
                result = frame.get("result")
                if not isinstance(result, dict):
                    raise TransportError(
                        "Malformed tool_result from the runtime", socket_path=self.socket_path
                    )
                return result
            elif kind == "error":
                raise error_from_frame(frame, self.socket_path)

    def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout_ms: int | None = None,
        on_event: EventCallback | None = None,
        with_text: bool = False,
    ) -> ToolResult:
        """`call_raw`, validated into a ToolResult."""
        from meith_core.protocol.results import ToolResult

        return ToolResult.model_validate(
            self.call_raw(
                name, arguments, timeout_ms=timeout_ms, on_event=on_event, with_text=with_text
            )
        )

    def describe(self, name: str) -> dict[str, Any] | None:
        """One tool's descriptor, or None when the runtime has no such tool."""
        found = self.list_tools(names=[name])
        return found[0] if found else None

    def cancel(self, request_id: str) -> None:
        self._send(cancel_frame(request_id))


__all__ = ["Client", "ConnectError", "Interrupted", "TransportError"]
