"""`meith plugins new`: bad names and non-empty directories refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from meith_core.host.plugins.scaffold import ScaffoldError, scaffold
from tests.core.host.plugins.support import meith


@pytest.mark.slow
def test_new_refuses_bad_names_and_non_empty_directories(tmp_path: Path) -> None:
    with pytest.raises(ScaffoldError, match="not a usable plugin name"):
        scaffold("Weather Station", tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "mine.txt").write_text("keep")
    with pytest.raises(ScaffoldError, match="already exists and is not empty"):
        scaffold("weather", tmp_path / "b")
    done = meith("plugins", "new", "9lives", "--dir", str(tmp_path / "c"))
    assert done.returncode == 2
    assert "is not a usable plugin name" in done.stderr
