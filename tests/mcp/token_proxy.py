"""A reverse proxy that adds the bridge's bearer token to every request, for a client that
cannot send one (the conformance suite's runner has no option for a header).

Everything else passes as it came, streamed both ways: a `Host` or `Origin` naming the proxy
is rewritten to name the bridge (the bridge accepts only its own), any other is passed on as
it is, so the bridge's DNS-rebinding protection still meets the foreign ones.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

import httpx2
import uvicorn
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

_HOP = frozenset({"content-length", "transfer-encoding", "connection", "host"})


class TokenProxy:
    def __init__(self, target: str, token: str) -> None:
        self.target = target.rstrip("/")
        self.token = token
        self.bridge_host = self.target.split("//", 1)[1].split("/", 1)[0]
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.port = int(self._sock.getsockname()[1])
        self.own = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        self._http = httpx2.AsyncClient(timeout=None)
        config = uvicorn.Config(self, log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> TokenProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        headers = [(k, v) for k, v in request.headers.items() if k not in _HOP]
        host = request.headers.get("host", "")
        headers.append(("host", self.bridge_host if host in self.own else host))
        headers = [
            (
                k,
                f"http://{self.bridge_host}"
                if k == "origin" and v.split("//")[-1] in self.own
                else v,
            )
            for k, v in headers
        ]
        headers.append(("authorization", f"Bearer {self.token}"))
        query = scope["query_string"].decode()
        url = f"http://{self.bridge_host}{scope['path']}" + (f"?{query}" if query else "")
        upstream = await self._http.send(
            self._http.build_request(
                request.method, url, headers=headers, content=await request.body()
            ),
            stream=True,
        )
        response = StreamingResponse(
            upstream.aiter_raw(), upstream.status_code, background=BackgroundTask(upstream.aclose)
        )
        response.raw_headers = [
            (k.encode(), v.encode())
            for k, v in upstream.headers.multi_items()
            if k.lower() not in _HOP
        ]
        await response(scope, receive, send)
