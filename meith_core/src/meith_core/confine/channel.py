"""The runtime's end of one confined spawn's control channel (`confine.wrapper.control`).

The runtime makes a socket pair per spawn and hands one end to the wrapper as an inherited
descriptor; the forwarder inside keeps it, the command never has it. Connections from inside
arrive here as descriptors (served by the gate), refused name lookups as names, and the port
forwarder sends connections for a dev server's port the other way. Nothing is reached by path:
what the process renames or links in its directories cannot change either end.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable

from meith_core.confine.wrapper import control

#: Serves one connection from inside (the gate), with the named destination it is tunnelled
#: to (a client of a `--listen` address) or None (a proxy client); closes it when it has none.
OutboundSink = Callable[[socket.socket, "str | None"], None]
#: A name lookup the stub inside refused.
LookupSink = Callable[[str], None]


class ControlChannel:
    """One spawn's control channel, the runtime's end (a thread reads it while it is open)."""

    def __init__(self, on_outbound: OutboundSink, on_lookup: LookupSink) -> None:
        # (the runtime's end, the wrapper's end), both close-on-exec.
        self._mine, self._theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._theirs_fd: int | None = self._theirs.fileno()
        self.on_outbound = on_outbound
        self.on_lookup = on_lookup
        self._reader: threading.Thread | None = None
        self._send_lock = threading.Lock()

    @property
    def child_fd(self) -> int:
        """The descriptor to pass to the spawn (`pass_fds`) and name on its command line."""
        if self._theirs_fd is None:
            raise RuntimeError("the control channel was already handed over")
        return self._theirs_fd

    def open(self) -> None:
        if self._reader is None:
            self._reader = threading.Thread(target=self._read, daemon=True)
            self._reader.start()

    def handed_over(self) -> None:
        """The spawn has its copy: the runtime's copy of that end goes."""
        if self._theirs_fd is not None:
            self._theirs_fd = None
            self._theirs.close()

    def inbound(self, port: int) -> socket.socket | None:
        """A stream the forwarder inside relays to 127.0.0.1:`port` of the namespace."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self._send_lock:
                control.send(self._mine, control.IN, str(port), theirs.fileno())
        except OSError:
            mine.close()
            return None
        finally:
            theirs.close()
        return mine

    def settle(self, timeout_s: float) -> None:
        """Wait (at most `timeout_s`) until the forwarder has closed its end — it does when the
        process exits — and every message it sent before is handled."""
        if self._reader is not None:
            self._reader.join(timeout_s)

    def close(self) -> None:
        """The forwarder inside sees the end of the channel and exits."""
        self.handed_over()
        with contextlib.suppress(OSError):
            self._mine.shutdown(socket.SHUT_RDWR)
        self._mine.close()

    def _read(self) -> None:
        while True:
            try:
                tag, text, fd = control.receive(self._mine)
            except OSError:
                return
            if not tag:
                if fd is not None:
                    os.close(fd)
                return
            if tag == control.OUT and fd is not None:
                self.on_outbound(socket.socket(fileno=fd), text or None)
                continue
            if fd is not None:
                os.close(fd)
            if tag == control.DNS and text:
                with contextlib.suppress(Exception):
                    self.on_lookup(text)


__all__ = ["ControlChannel"]
