"""`meith grants`: `--net` destinations taken, listed, and refused without `--cwd` or when bad."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
