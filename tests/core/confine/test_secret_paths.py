"""The secret paths (`confinement.secretPaths`) and the one check `is_secret_path`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core.support import meith_cli


@pytest.mark.slow
def test_the_secret_paths_are_set_on_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    default = json.loads(meith_cli(home, "settings", "get", "confinement.secretPaths").stdout)
    assert "~/.ssh" in default
    assert "~/.docker/config.json" in default
    mine = json.dumps([*default, str(tmp_path / "vault")])
    done = meith_cli(home, "settings", "set", "confinement.secretPaths", mine)
    assert done.returncode == 0, done.stderr
    settings = json.loads((home / "settings.json").read_text())
    from meith_core import is_secret_path

    assert is_secret_path(tmp_path / "vault" / "key", settings)
    assert is_secret_path(tmp_path / "vault" / "key", home=home)
