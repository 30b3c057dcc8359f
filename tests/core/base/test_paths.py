"""The one path-containment check: `resolve_within`, `is_within` and their helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from meith_core import PathEscapeError, is_within, resolve_within


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "repo" / "src").mkdir(parents=True)
    (tmp_path / "repo-evil").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "repo" / "out").symlink_to(tmp_path / "outside")
    (tmp_path / "repo" / "inner").symlink_to(tmp_path / "repo" / "src")
    return tmp_path


@pytest.mark.parametrize(
    "candidate",
    ["src", "src/new/file.txt", "./src/../src/x", "inner/x", "", ".", "not/yet/there"],
)
def test_resolve_within_accepts_paths_inside(tree: Path, candidate: str) -> None:
    resolved = resolve_within(tree / "repo", candidate)
    assert is_within(resolved, tree / "repo")
    assert resolved.is_absolute()


@pytest.mark.parametrize(
    "candidate",
    ["..", "../outside", "src/../../outside", "out/x", "out", "../repo-evil/x", "/etc/passwd"],
)
def test_resolve_within_refuses_paths_that_escape(tree: Path, candidate: str) -> None:
    with pytest.raises(PathEscapeError):
        resolve_within(tree / "repo", candidate)


def test_resolve_within_accepts_an_absolute_path_inside(tree: Path) -> None:
    inside = tree / "repo" / "src" / "a.txt"
    assert resolve_within(tree / "repo", str(inside)) == inside.resolve()


def test_a_nul_byte_is_refused(tree: Path) -> None:
    with pytest.raises(PathEscapeError):
        resolve_within(tree / "repo", "src/\0x")
    assert not is_within("/tmp/\0x", "/tmp")


def test_is_within_compares_components_not_prefixes(tree: Path) -> None:
    assert is_within(tree / "repo", tree / "repo")
    assert is_within(tree / "repo" / "src", tree / "repo")
    assert not is_within(tree / "repo-evil", tree / "repo")
    assert not is_within(tree / "repo" / "out", tree / "repo")  # a symlink pointing out
    assert is_within(tree / "repo" / "inner", tree / "repo")


def test_outermost_and_resolved_within() -> None:
    from meith_core.base.paths import outermost, resolved_within

    assert outermost(["/a/b", "/a", "/ab", "/a/b/c", "/x", "/a"]) == ["/a", "/ab", "/x"]
    assert outermost(["/", "/etc"]) == ["/"]
    assert resolved_within("/a/b", "/a")
    assert resolved_within("/a", "/a")
    assert not resolved_within("/ab", "/a")
    assert resolved_within("/etc", "/")
