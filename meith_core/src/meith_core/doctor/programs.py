"""The small programs the corpus's attacks run inside (and outside) the walls, as Python
source, and writing one where a process can run it. Each prints what happened (or writes it to
a file when it leaves its caller behind), so the trick can tell."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

#: `open.py w|r PATH...`: opens each path for writing (appending) or reading, non-blocking,
#: and reads or writes nothing: `opened PATH` or `refused PATH why`.
OPEN: Final = """
import os, sys
mode = os.O_WRONLY | os.O_APPEND if sys.argv[1] == "w" else os.O_RDONLY
for path in sys.argv[2:]:
    try:
        os.close(os.open(path, mode | os.O_NONBLOCK | os.O_NOCTTY))
        print("opened", path)
    except OSError as exc:
        print("refused", path, exc.strerror)
"""

#: `connect KIND ADDRESS [PORT]`: tcp, udp, unix or abstract; sends a line, prints what came
#: back or why it could not connect.
CONNECT: Final = """
import socket, sys
kind, address = sys.argv[1], sys.argv[2]
try:
    if kind in ("tcp", "udp"):
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        s = socket.socket(family, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
        s.settimeout(5)
        s.connect((address, int(sys.argv[3])))
    else:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(("\\0" + address) if kind == "abstract" else address)
    for _ in range(3 if kind == "udp" else 1):
        s.send(b"meith-doctor-probe\\n")
    print("connected")
except OSError as exc:
    print("refused", exc.errno, exc.strerror)
"""

#: `proxy_connect HOST PORT`: a CONNECT through the process's `http_proxy`; prints the status
#: line the proxy answered, and the first bytes past it.
PROXY_CONNECT: Final = """
import os, socket, sys
from urllib.parse import urlsplit
host, port = sys.argv[1], sys.argv[2]
proxy = urlsplit(os.environ.get("http_proxy") or os.environ.get("HTTP_PROXY") or "http://127.0.0.1:9")
try:
    s = socket.create_connection((proxy.hostname, proxy.port or 80), timeout=10)
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    s.sendall(f"CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
    head = s.recv(4096).decode(errors="replace")
    print("status", head.split("\\r\\n", 1)[0])
    if head.split(" ")[1:2] == ["200"]:
        s.sendall(b"meith-doctor-probe\\n")
        print("sent")
except OSError as exc:
    print("refused", exc.errno, exc.strerror)
"""

#: `as_user.py MODE SOCKET OUT`: leaves its session behind (its token dropped) and asks the
#: runtime at SOCKET to serve it as the local user: `served ...` or `refused ...`, printed or,
#: detached (double fork, setsid), written to OUT.
AS_USER: Final = """
import os, sys
mode, sock, out = sys.argv[1:4]
os.environ.pop("MEITH_SESSION_TOKEN", None)
if mode == "detached":
    if os.fork():
        os._exit(0)
    os.setsid()
    if os.fork():
        os._exit(0)
from meith_core.client import Client
try:
    with Client(sock, caller="cli", cwd=os.getcwd(), connect_timeout=10) as c:
        said = f"served {c.hello().get('caller')}: {len(c.list_sessions())} sessions listed"
except Exception as exc:
    said = f"refused {type(exc).__name__}: {exc}"
if mode == "detached":
    with open(out + ".tmp", "w") as fh:
        fh.write(said)
    os.rename(out + ".tmp", out)
else:
    print(said)
"""

#: `detach.py GO COMMAND`: leaves the process the runtime started behind (fork, setsid,
#: fork) and execs `sh -c` with a clean environment (no marker of meith's) that waits for GO
#: (a minute at most; GO is in its command line: `running(GO)` finds it), then runs COMMAND.
#: The process it was started as exits once that `sh` runs.
DETACH: Final = """
import os, sys, time
go, command = sys.argv[1:3]
ready = go + ".detached"
if os.fork():
    deadline = time.monotonic() + 30
    while not os.path.exists(ready) and time.monotonic() < deadline:
        time.sleep(0.02)
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
wait = (
    f"touch {ready}; n=0; while [ ! -e {go} ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); "
    f"done; [ -e {go} ] && {{ {command}; }}"
)
os.execve("/bin/sh", ["sh", "-c", wait], {"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
"""

#: Swaps two names with renameat2(RENAME_EXCHANGE) until the stop file appears.
SWAPPER: Final = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b, stop = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2]), sys.argv[3]
print("ready", flush=True)
while not os.path.exists(stop):
    libc.renameat2(-100, a, -100, b, 2)
"""


def script(directory: Path, name: str, source: str) -> str:
    """`source` written to `directory/name`; the command line that runs it with this Python."""
    path = directory / name
    path.write_text(source)
    return f"{sys.executable} {path}"


__all__ = ["AS_USER", "CONNECT", "DETACH", "OPEN", "PROXY_CONNECT", "SWAPPER", "script"]
