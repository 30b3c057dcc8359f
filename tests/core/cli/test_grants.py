"""`meith grants`: `--net` destinations taken, listed, and refused without `--cwd` or when bad."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from meith_core.policy.grants import Grant
from tests.core.support import meith_cli


@pytest.mark.slow
def test_grants_add_net(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    repo.mkdir()
    base = ["grants", "add", "--caller", "agent", "-c", "starts-process"]
    done = meith_cli(home, *base, "--cwd", str(repo), "--net", "pypi.org", "--net", "*.x.org:443")
    assert done.returncode == 0, done.stderr
    assert "network: pypi.org, *.x.org:443" in done.stdout
    listed = json.loads(meith_cli(home, "grants", "list", "--json").stdout)
    assert listed[0]["net"] == ["pypi.org", "*.x.org:443"]
    unconfined = meith_cli(home, *base, "--net", "pypi.org")
    assert unconfined.returncode != 0
    assert "--cwd" in unconfined.stderr
    bad = meith_cli(home, *base, "--cwd", str(repo), "--net", "bad host")
    assert bad.returncode != 0


@pytest.mark.slow
def test_grants_add_socket(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    repo.mkdir()
    base = ["grants", "add", "--caller", "agent", "-c", "starts-process"]
    db = "/run/postgresql/.s.PGSQL.5432"
    done = meith_cli(home, *base, "--cwd", str(repo), "--socket", db, "--socket", "/tmp/x//y.sock")
    assert done.returncode == 0, done.stderr
    assert f"sockets: {db}, /tmp/x/y.sock" in done.stdout
    listed = json.loads(meith_cli(home, "grants", "list", "--json").stdout)
    assert listed[0]["sockets"] == [db, "/tmp/x/y.sock"]
    grant = Grant.from_json(listed[0])
    assert grant.sockets == (db, "/tmp/x/y.sock")
    unconfined = meith_cli(home, *base, "--socket", db)
    assert unconfined.returncode != 0
    assert "--cwd" in unconfined.stderr
    relative = meith_cli(home, *base, "--cwd", str(repo), "--socket", "db.sock")
    assert relative.returncode != 0
    assert "absolute" in relative.stderr
