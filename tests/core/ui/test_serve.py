"""Where the console may listen: loopback, or elsewhere only when asked to and with TLS; and
on a machine where no browser can be opened it says so, after the link to open."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from meith_core.ui.serve import UsageError, check_bind
from tests.harness import MEITH, base_env, wait_until


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
def test_loopback_needs_nothing(host: str) -> None:
    check_bind(host, False, None, None)


def test_another_address_needs_allow_remote_and_tls() -> None:
    with pytest.raises(UsageError, match="--allow-remote"):
        check_bind("0.0.0.0", False, None, None)
    with pytest.raises(UsageError, match="--tls-cert"):
        check_bind("192.0.2.7", True, "cert.pem", None)
    check_bind("192.0.2.7", True, "cert.pem", "key.pem")


@pytest.mark.slow  # a `meith ui` process of its own
def test_without_a_browser_it_says_to_open_the_printed_link(tmp_path: Path) -> None:
    env = base_env(tmp_path / "home")
    for display in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        env.pop(display, None)
    env["PATH"] = str(tmp_path / "no-programs")  # no xdg-open, no www-browser, no lynx
    socket_dir = tempfile.mkdtemp(prefix="meith-", dir="/tmp")
    out = tmp_path / "ui.out"
    with out.open("wb") as sink:
        # No runtime listens there: the console waits for one, and prints its link all the same.
        ui = subprocess.Popen(
            [MEITH, "ui", "--socket", os.path.join(socket_dir, "none.sock")],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        assert wait_until(lambda: b"no browser" in out.read_bytes(), 60), out.read_text()
    finally:
        os.killpg(ui.pid, signal.SIGTERM)
        ui.wait(30)
        os.rmdir(socket_dir)
    lines = out.read_text().splitlines()
    assert lines[0].startswith("meith ui: http://127.0.0.1:")
    assert lines[1:3] == [
        "(the link is for you alone: it carries this run's secret)",
        "meith ui: no browser could be opened here: open the link above in yours",
    ]
