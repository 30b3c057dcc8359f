"""`meith grants add` refuses what it cannot grant in words that say what it takes."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from meith_core.cli.main import app


def test_an_unknown_caller_lists_the_valid_ones_with_the_closest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEITH_HOME", str(tmp_path / "home"))
    done = CliRunner().invoke(app, ["grants", "add", "--caller", "agnet", "-c", "writes-files"])
    assert done.exit_code == 2
    assert "'agnet' is not one of: cli, agent. Did you mean agent?" in done.output
    assert not (tmp_path / "home" / "grants.json").exists()


def test_read_is_a_read_only_grant_in_that_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEITH_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    shared = tmp_path / "shared"
    shared.mkdir()
    done = runner.invoke(app, ["grants", "add", "--caller", "agent", "--read", str(shared)])
    assert done.exit_code == 0, done.output
    assert f"agent may use read-only under {shared}" in done.output
    # The long form is the same grant; without a directory read-only needs no grant.
    long = ["grants", "add", "--caller", "agent", "-c", "read-only", "--cwd", str(shared)]
    assert runner.invoke(app, long).exit_code == 0
    refused = runner.invoke(app, ["grants", "add", "--caller", "agent", "-c", "read-only"])
    assert refused.exit_code == 2
    assert "or read-only with a directory, --read DIR" in refused.output
    nothing = runner.invoke(app, ["grants", "add", "--caller", "agent"])
    assert nothing.exit_code == 2
    assert "name a capability (--capability CAP) or a directory to read (--read DIR)" in (
        nothing.output
    )
