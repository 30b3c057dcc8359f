"""`meith grants`: `--net` and `--socket` taken, listed, and refused without `--cwd` or when bad;
`--read DIR`; what it cannot grant refused in words that say what it takes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from meith_core.cli.main import app
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
    # The long form is the same grant; without a directory a read-only grant names the view
    # it widens (get_audit_log's), and nothing else.
    long = ["grants", "add", "--caller", "agent", "-c", "read-only", "--cwd", str(shared)]
    assert runner.invoke(app, long).exit_code == 0
    refused = runner.invoke(app, ["grants", "add", "--caller", "agent", "-c", "read-only"])
    assert refused.exit_code == 2
    assert "names a directory agents may read (--read DIR)" in refused.output
    nothing = runner.invoke(app, ["grants", "add", "--caller", "agent"])
    assert nothing.exit_code == 2
    assert "name a capability (--capability CAP) or a directory to read (--read DIR)" in (
        nothing.output
    )
