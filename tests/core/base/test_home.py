"""`MeithHome`: the home directory made private, refused when unsafe; JSON state written
atomically."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from meith_core.base.home import MeithHome, UnsafePathError, default_home, write_json_atomic


def test_meith_home_defaults_to_the_env_then_dot_meith(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEITH_HOME", "/tmp/somewhere")
    assert default_home() == Path("/tmp/somewhere")
    monkeypatch.delenv("MEITH_HOME")
    assert default_home() == Path.home() / ".meith"


def test_ensure_creates_a_private_home(tmp_path: Path) -> None:
    home = MeithHome(tmp_path / "a" / "b").ensure()
    assert stat.S_IMODE(home.root.stat().st_mode) == 0o700


def test_a_home_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(UnsafePathError, match="not a directory"):
        MeithHome(tmp_path / "file").ensure()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand a directory to another user")
def test_a_home_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "theirs"
    other.mkdir(mode=0o700)
    os.chown(other, 65534, 65534)
    with pytest.raises(UnsafePathError, match="owned by uid 65534"):
        MeithHome(other).ensure()


def test_a_symlinked_home_is_followed_and_its_target_made_private(tmp_path: Path) -> None:
    target = tmp_path / "real"
    target.mkdir(mode=0o755)
    target.chmod(0o755)
    (tmp_path / "link").symlink_to(target)
    MeithHome(tmp_path / "link").ensure()
    assert stat.S_IMODE(target.stat().st_mode) == 0o700


def test_json_state_is_written_atomically_and_private(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write_json_atomic(path, {"a": "é"})
    assert path.read_text(encoding="utf-8") == '{\n  "a": "é"\n}\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(TypeError):
        write_json_atomic(path, {"a": object()})
    assert path.read_text(encoding="utf-8") == '{\n  "a": "é"\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]
