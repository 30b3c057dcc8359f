"""The secret paths (`confinement.secretPaths`) and the one check `is_secret_path`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meith_core import MeithHome, is_secret_path
from meith_core.base.home_registry import register_home
from tests.core.support import meith_cli


@pytest.mark.slow
def test_the_secret_paths_are_set_on_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    default = json.loads(meith_cli(home, "settings", "get", "confinement.secretPaths").stdout)
    assert "~/.ssh" in default
    for registry_token in ("~/.docker", "~/.npmrc", "~/.pypirc", "~/.cargo/credentials.toml"):
        assert registry_token in default
    mine = json.dumps([*default, str(tmp_path / "vault")])
    done = meith_cli(home, "settings", "set", "confinement.secretPaths", mine)
    assert done.returncode == 0, done.stderr
    settings = json.loads((home / "settings.json").read_text())
    from meith_core import is_secret_path

    assert is_secret_path(tmp_path / "vault" / "key", settings)
    assert is_secret_path(tmp_path / "vault" / "key", home=home)


def test_the_secret_path_check_is_one_function(tmp_path: Path) -> None:
    home = Path.home()
    assert is_secret_path(home / ".ssh" / "id_ed25519")
    assert is_secret_path(home / ".aws" / "credentials")
    assert is_secret_path(home / ".docker" / "config.json")
    assert is_secret_path(home / ".npmrc")
    assert not is_secret_path(home / ".bashrc")
    assert not is_secret_path(tmp_path / "project" / "README.md")
    mine = {"confinement": {"secretPaths": [str(tmp_path / "vault")]}}
    assert is_secret_path(tmp_path / "vault" / "key", mine)
    assert not is_secret_path(home / ".ssh" / "config", mine)  # the user's list replaces it
    # ... but a key's name is secret wherever it is (confinement.secretPatterns).
    assert is_secret_path(tmp_path / "project" / "id_ed25519", mine)
    # Every meith home, whatever the setting says.
    other = MeithHome(tmp_path / "other-home").ensure()
    register_home(other.root)
    assert is_secret_path(other.grants_path, mine)
    # A symbolic link to a secret is the secret.
    (tmp_path / "link").symlink_to(home / ".ssh")
    assert is_secret_path(tmp_path / "link" / "id_rsa")
