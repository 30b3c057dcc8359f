"""Fixtures shared by every test package.

- `meith_home`: a fresh MEITH_HOME in a temporary directory (also exported in the env).
- `runtime`: an in-process Runtime on that home, plugins not loaded (load what you test).
- `meith_server`: a factory starting a real `meith serve` subprocess (see tests/harness.py).
- `hardened`: this process sees a host without user namespaces (the confinement it plans).
- async tests use anyio's pytest plugin: mark them `@pytest.mark.anyio`.

`slow` (deselect with `-m "not slow"` for a fast inner loop): every test that starts a real
`meith serve` (the `meith_server` fixture) or Chromium (`browser`) is marked here, and any
other test that takes more than about 0.6 s is marked where it is defined; an unmarked test
over a second fails the run. `kernel`: the files whose tests need Landlock or user namespaces.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from meith_core import MeithHome, Runtime, landlock_status
from meith_core.confine.status import NO_NAMESPACES_ENV

# A test run started with SIGINT ignored (a background job of a non-interactive shell, some CI
# shells) would pass that on to every child: `meith call` and `meith audit --follow` could then
# not be stopped with Ctrl-C, and the tests of Ctrl-C would hang until their timeout. Children
# inherit an ignored signal but not a handler, so installing Python's default one here gives
# every child the default disposition again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Tests read logs through caplog/capsys where they care; keep structlog quiet and plain.
structlog.configure(
    processors=[
        structlog.processors.add_log_level,
        structlog.dev.ConsoleRenderer(
            colors=False, exception_formatter=structlog.dev.plain_traceback
        ),
    ],
    wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
    cache_logger_on_first_use=False,
)


def pytest_configure(config: pytest.Config) -> None:
    """The registry of homes (`$XDG_STATE_HOME/meith/homes`) is the run's own: the thousands
    of homes a run opens stay out of the developer's registry, and each run starts with none.
    Every `meith` process the tests start inherits it."""
    if "MEITH_TEST_STATE_DIR" not in os.environ:
        state = tempfile.mkdtemp(prefix="meith-test-state-")
        os.environ["MEITH_TEST_STATE_DIR"] = os.environ["XDG_STATE_HOME"] = state


def pytest_unconfigure(config: pytest.Config) -> None:
    state = os.environ.pop("MEITH_TEST_STATE_DIR", None)
    if state and os.environ.get("XDG_STATE_HOME") == state:
        del os.environ["XDG_STATE_HOME"]
        shutil.rmtree(state, ignore_errors=True)


#: A test not marked `slow` whose call takes longer than this fails the run (the duration
#: guard). Tests over about 0.6 s alone on a quiet machine are marked `slow`, which leaves a
#: loaded one headroom; `MEITH_SLOW_LIMIT_S` moves the limit for a machine slower still.
SLOW_LIMIT_S = float(os.environ.get("MEITH_SLOW_LIMIT_S", "1"))
#: Unmarked tests over this are listed at the end of the run, under the limit or not.
SLOW_REPORT_S = min(1.0, SLOW_LIMIT_S)
_unmarked_slow: list[tuple[str, float]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.duration > SLOW_REPORT_S and "slow" not in report.keywords:
        _unmarked_slow.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _unmarked_slow:
        return
    terminalreporter.section("tests over a second not marked slow")
    for nodeid, duration in sorted(_unmarked_slow, key=lambda x: -x[1]):
        over = "  (over the limit: mark it @pytest.mark.slow)" if duration > SLOW_LIMIT_S else ""
        terminalreporter.write_line(f"{duration:6.2f}s {nodeid}{over}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # The fast loop (`-m "not slow"`) stays fast only if slow tests say so: one that runs past
    # the limit unmarked fails the run (listed by the terminal summary above).
    if exitstatus == 0 and any(d > SLOW_LIMIT_S for _, d in _unmarked_slow):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        uses_server = "meith_server" in getattr(item, "fixturenames", ())
        if uses_server or item.get_closest_marker("browser") is not None:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def meith_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MeithHome:
    root = tmp_path / "meith-home"
    monkeypatch.setenv("MEITH_HOME", str(root))
    for var in ("MEITH_PLUGINS", "MEITH_DISABLE_PLUGINS", "MEITH_SOCKET", "MEITH_SESSION_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    return MeithHome(root).ensure()


@pytest.fixture
async def runtime(meith_home: MeithHome) -> AsyncIterator[Runtime]:
    rt = Runtime(meith_home, load_plugins=False, cwd=os.getcwd())
    await rt.start()
    try:
        yield rt
    finally:
        await rt.aclose()


@pytest.fixture
def meith_server(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """`meith_server(**kwargs) -> MeithServer`; every server started is stopped at teardown.

    kwargs: approvals ("deny"), env, plugins (MEITH_PLUGINS), extra_args, socket, home (reuse
    one home across servers, e.g. to test a restart).
    """
    from tests.harness import MeithServer

    started: list[MeithServer] = []

    def start(home: Path | None = None, **kwargs: Any) -> MeithServer:
        server = MeithServer(home or tmp_path / f"home{len(started)}", **kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop(timeout=10)


@pytest.fixture
def hardened(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A host without user namespaces (`MEITH_CONFINE_NO_NAMESPACES=1`), for this process."""
    monkeypatch.setenv(NO_NAMESPACES_ENV, "1")
    landlock_status.cache_clear()
    yield
    monkeypatch.delenv(NO_NAMESPACES_ENV)
    landlock_status.cache_clear()
