"""Screenshot files under `$MEITH_HOME/artifacts/`."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from meith_plugins_browser.artifacts import png_size, write_artifact
from tests.browser.support import decode_png, make_png


def test_artifacts_get_fresh_private_files(tmp_path: Path) -> None:
    png = make_png(3, 2, (1, 2, 3, 255))
    assert png_size(png) == (3, 2)
    first = write_artifact(tmp_path / "artifacts", "shot", ".png", png)
    second = write_artifact(tmp_path / "artifacts", "shot", ".png", png)
    assert (first.name, second.name) == ("shot.png", "shot-1.png")
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "artifacts").st_mode) == 0o700
    assert decode_png(first.read_bytes())[:2] == (3, 2)
    for bad in ("../escape", "a/b", ".hidden"):
        with pytest.raises(ValueError, match="plain file name"):
            write_artifact(tmp_path / "artifacts", bad, ".png", png)
    with pytest.raises(ValueError, match="not a PNG"):
        png_size(b"GIF89a")
