"""MCP bridge fixtures: a real `meith serve` with the real plugins plus `mcptest`, and the MCP
SDK's own `Client` driving a real `meith mcp` subprocess (stdio) or HTTP server."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.harness import MEITH, MeithServer, PtyServe, wait_until
from tests.mcp.agent_plugin import install


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("browser") is not None:
        from tests.browser.support import require_browser

        require_browser()


#: The two protocol eras the SDK serves: the initialize handshake, and per-request envelopes.
ERAS = ["legacy", "2026-07-28"]


def json_answer(result: types.CallToolResult) -> Any:
    """What a tool answered, as an agent reads it over `meith mcp`: a tool without a renderer
    answers with its content as compact JSON text (the structured content comes only with
    `--structured`)."""
    assert result.structured_content is None, "this bridge was not started with --structured"
    [text] = [b.text for b in result.content if isinstance(b, types.TextContent)]
    return json.loads(text)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    path = tmp_path / "marks"
    path.mkdir()
    return path


@pytest.fixture
def mcptest_env(tmp_path: Path, marks: Path) -> dict[str, str]:
    """The environment under which `meith serve` also loads the `mcptest` plugin."""
    site = install(tmp_path / "mcptest-site")
    return {
        "PYTHONPATH": os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p),
        "MCPTEST_DIR": str(marks),
    }


@pytest.fixture
def agent_server(
    meith_server: Callable[..., Any], mcptest_env: dict[str, str]
) -> Callable[..., MeithServer]:
    """`agent_server(**kwargs)`: a real `meith serve` that also loads the `mcptest` plugin."""
    env = mcptest_env

    def start(**kwargs: Any) -> MeithServer:
        srv: MeithServer = meith_server(env={**env, **kwargs.pop("env", {})}, **kwargs)
        srv.cli_env.update(env)
        return srv

    return start


def every_tool(args: tuple[str, ...] | list[str]) -> list[str]:
    """`meith mcp` arguments offering every tool unless they select some: the tests of the
    bridge's mechanics use the test plugin's tools, which no profile offers."""
    chosen = any(a.split("=")[0] in ("--tools", "--plugins") for a in args)
    return list(args) if chosen else [*args, "--tools", "all"]


@asynccontextmanager
async def stdio_client(
    srv: MeithServer | PtyServe,
    *args: str,
    mode: str = "legacy",
    name: str = "test-agent",
    **client_kwargs: Any,
) -> AsyncIterator[Client]:
    """The SDK client over `meith mcp --no-start ARGS` on stdio (every tool unless ARGS
    select some)."""
    params = StdioServerParameters(
        command=MEITH, args=["mcp", "--no-start", *every_tool(args)], env=dict(srv.cli_env)
    )
    client = Client(
        params,
        mode=mode,
        client_info=types.Implementation(name=name, version="1.0"),
        read_timeout_seconds=120,
        **client_kwargs,
    )
    async with client:
        yield client


class HttpBridge:
    def __init__(self, proc: subprocess.Popen[Any], url: str, token: str) -> None:
        self.proc = proc
        self.url = url
        self.token = token

    @classmethod
    def started(cls, proc: subprocess.Popen[Any], stderr: Path, srv: MeithServer) -> HttpBridge:
        """The bridge `proc` (writing to `stderr`) once it says where it listens."""
        found: list[str] = []

        def listening() -> bool:
            match = re.search(r"listening on (http://\S+)", stderr.read_text())
            if match:
                found.append(match.group(1))
            return bool(match) or proc.poll() is not None

        assert wait_until(listening, timeout=60), stderr.read_text()
        assert found, stderr.read_text()
        return cls(proc, found[0], srv.cli("mcp", "token").stdout.strip())

    @asynccontextmanager
    async def client(
        self, *, mode: str = "legacy", name: str = "http-agent", token: str | None = None, **kw: Any
    ) -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {token or self.token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
            client = Client(
                streamable_http_client(self.url, http_client=http),
                mode=mode,
                client_info=types.Implementation(name=name, version="1.0"),
                read_timeout_seconds=120,
                **kw,
            )
            async with client:
                yield client


@pytest.fixture
def http_bridge(tmp_path: Path) -> Iterator[Callable[..., HttpBridge]]:
    """`http_bridge(srv, *args)`: `meith mcp --http 127.0.0.1:0` against `srv`."""
    procs: list[subprocess.Popen[str]] = []

    def start(srv: MeithServer, *args: str) -> HttpBridge:
        err = open(tmp_path / f"bridge{len(procs)}.stderr", "w+")  # noqa: SIM115
        proc = subprocess.Popen(
            [MEITH, "mcp", "--no-start", "--http", "127.0.0.1:0", *every_tool(args)],
            env=srv.cli_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )
        procs.append(proc)
        return HttpBridge.started(proc, Path(err.name), srv)

    yield start
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def audit_records(srv: MeithServer | Path) -> list[dict[str, Any]]:
    """The outcome record of every call (a privileged call also has an intent record, written
    before it runs), from a server's home or the home directory given."""
    records: list[dict[str, Any]] = []
    home = srv if isinstance(srv, Path) else srv.home.root
    for path in sorted(home.glob("audit*.jsonl*")):
        for line in path.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                if record.get("kind", "outcome") == "outcome":
                    records.append(record)
    return records


def elicit_answer(decision: str | None, seen: list[str] | None = None) -> Any:
    """An elicitation callback: accept with `decision`, or decline when it is None."""

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        if seen is not None:
            seen.append(params.message)
        if decision is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"decision": decision})

    return answer
