"""The exec wrapper on this kernel: what a plan lets a command write, and what the wrapper refuses
to run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from meith_core import Confinement
from meith_core.confine.wrapper import main as confine_main
from tests.core.confine.support import needs_landlock, results

pytestmark = [pytest.mark.kernel, needs_landlock]


def test_meith_home_inside_the_granted_directory_stays_out_of_reach(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "home").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "home" / "grants.json").write_text("{}")
    plan = Confinement.beneath(str(root), home=root / "home")
    script = (
        f"echo x > {root}/home/grants.json; echo home:$?; "
        f"echo x > {root}/src/new; echo inside:$?; "
        f"echo x > {root}/top; echo outside:$?"
    )
    out = subprocess.run(plan.wrap(["/bin/sh", "-c", script]), capture_output=True, text=True)
    got = results(out.stdout)
    assert got["home"] != "0"
    assert (root / "home" / "grants.json").read_text() == "{}"
    assert got["inside"] == "0"
    # The price of carving the home out: no new entries directly in the granted directory.
    assert got["outside"] != "0"


def test_the_wrapper_refuses_to_run_a_command_it_cannot_find(tmp_path: Path) -> None:
    plan = Confinement.beneath(str(tmp_path))
    out = subprocess.run(plan.wrap(["no-such-command-xyz"]), capture_output=True, text=True)
    assert out.returncode == 127
    assert "command not found" in out.stderr


def test_the_wrapper_refuses_to_go_on_after_a_preload_reached_it(tmp_path: Path) -> None:
    """A spawner that still gives the caller's environment to the wrapper itself (`wrap`
    without `command`) gets a refusal, never a command run as if nothing had happened."""
    argv = Confinement.beneath(str(tmp_path)).wrap(["true"])
    done = subprocess.run(
        argv,
        env={"PATH": os.environ["PATH"], "LD_PRELOAD": "/nonexistent/evil.so"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == confine_main.EXIT_FAILED
    assert "ConfinedSpawn" in done.stderr
