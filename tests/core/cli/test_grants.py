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
