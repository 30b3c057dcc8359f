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


def test_a_plan_resolves_only_the_secret_paths_that_are_there(tmp_path: Path) -> None:
    """`secret_paths(existing=True)` (what a confinement plan covers) keeps what is there,
    resolved through links, a dangling link's target included, and drops what is absent;
    without it every path is listed, present or not (`is_secret_path` of a file yet to be
    written)."""
    from meith_core.confine.secret_paths import secret_paths

    (tmp_path / "vault").mkdir()
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    names = ["vault", "absent", "linked/key-dir", "linked", "dangling", "vault/../absent2"]
    settings = {"confinement": {"secretPaths": [str(tmp_path / n) for n in names]}}
    every = secret_paths(settings)
    there = secret_paths(settings, existing=True)
    for name in ("vault", "absent", "real/key-dir", "real", "nowhere", "absent2"):
        assert str(tmp_path / name) in every
    for name in ("vault", "real", "nowhere"):
        assert str(tmp_path / name) in there
    for name in ("absent", "real/key-dir", "absent2"):
        assert str(tmp_path / name) not in there
    assert set(there) <= set(every)
