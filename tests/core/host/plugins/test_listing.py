"""`meith plugins` rows: `--verbose` shows why a plugin failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.core.host.plugins.support import meith


@pytest.mark.slow
def test_plugins_verbose_shows_why_a_plugin_failed(fixture_plugins: Path, tmp_path: Path) -> None:
    env = {
        "MEITH_HOME": str(tmp_path),
        "MEITH_PLUGINS": "fixture_good,fixture_tools_error",
    }
    plain = meith("plugins", env=env)
    assert "fixture_tools_error" in plain.stdout
    assert "Traceback" not in plain.stdout
    verbose = meith("plugins", "--verbose", env=env)
    assert verbose.returncode == 0, verbose.stderr
    section = verbose.stdout.split("fixture_tools_error", 1)[1]
    assert "Traceback (most recent call last)" in section
    assert "RuntimeError: fixture tools exploded: required program not found" in section
    assert "import:" in verbose.stdout
