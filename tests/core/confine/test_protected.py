"""The one rule of what no agent's tool and no confined process writes (`confine.protected`)."""

from __future__ import annotations

import os
import site
import sys
from pathlib import Path

import pytest

import meith_core
from meith_core.base.home_registry import register_home
from meith_core.confine import protected
from meith_core.confine.protected import installation_paths, protected_paths, write_refusal


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path


def test_every_registered_home_is_refused_not_only_the_runtimes_own(registry: Path) -> None:
    ws = registry / "ws"
    other = ws / "other-home"
    other.mkdir(parents=True)
    register_home(other)
    refused = write_refusal(str(other / "grants.json"), str(ws), home=registry / "own-home")
    assert refused is not None
    assert refused.reason == "meith home"
    assert refused.within == str(other)
    assert write_refusal(str(ws / "src.py"), str(ws), home=registry / "own-home") is None


def test_meith_and_its_loaded_plugins_are_its_installation() -> None:
    paths = installation_paths()
    assert os.path.realpath(sys.prefix) in paths
    assert str(Path(meith_core.__file__).resolve().parent) in paths
    import meith_plugins_files

    assert str(Path(meith_plugins_files.__file__).resolve().parent) in paths
    inside = str(Path(meith_plugins_files.__file__).resolve().parent / "scope.py")
    refused = write_refusal(inside, "/")
    assert refused is not None
    assert refused.reason == "meith installation"


def test_directories_an_editable_install_adds_are_protected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site_dir = tmp_path / "site-packages"
    site_dir.mkdir()
    source = tmp_path / "checkout" / "src"
    source.mkdir(parents=True)
    (site_dir / "_editable_impl_thing.pth").write_text(f"# comment\nimport os\n{source}\n")
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(site_dir)])
    monkeypatch.setattr(site, "getusersitepackages", lambda: str(tmp_path / "none"))
    protected._discovered.cache_clear()
    try:
        assert str(source) in installation_paths()
        assert str(source) in protected_paths()
    finally:
        protected._discovered.cache_clear()


def test_a_plugin_loaded_from_anywhere_is_protected_once_loaded(tmp_path: Path) -> None:
    package = tmp_path / "loose" / "loose_plugin_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("class Plugin:\n    pass\n")
    sys.path.insert(0, str(package.parent))
    try:
        import loose_plugin_pkg  # type: ignore[import-not-found]

        protected.protect_package(loose_plugin_pkg.Plugin.__module__)
        assert str(package.resolve()) in installation_paths()
    finally:
        sys.path.remove(str(package.parent))
        sys.modules.pop("loose_plugin_pkg", None)
        protected._loaded.discard(str(package.resolve()))


def test_git_metadata_is_refused_through_a_pointer_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    gitdir = tmp_path / "ws" / "elsewhere"
    (gitdir / "objects").mkdir(parents=True)
    (gitdir / "refs").mkdir()
    (gitdir / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / "sub").mkdir()
    (ws / "sub" / ".git").write_text("gitdir: ../elsewhere\n")
    refused = write_refusal(str(gitdir / "hooks" / "pre-commit"), str(ws))
    assert refused is not None
    assert refused.reason == "git metadata"
    assert refused.within == str(gitdir)


def test_a_fifo_planted_as_a_pointer_file_does_not_hang_the_check(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / ".git")
    assert write_refusal(str(ws / "a.txt"), str(ws)) is None
