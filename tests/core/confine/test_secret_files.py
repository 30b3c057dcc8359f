"""Secret files inside a granted directory, found for a confined process's start
(`confine.secret_files`): by name, regular files only, bounded, remembered between starts."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from meith_core import DEFAULT_SECRET_PATTERNS
from meith_core.confine import secret_files
from meith_core.confine.plan import Confinement
from meith_core.confine.secret_files import find_secret_files
from meith_core.confine.status import LandlockStatus


def _tree(root: Path) -> None:
    for rel in (
        ".env",
        ".env.production",
        ".env.example",
        "config/server.pem",
        "config/server.key",
        "config/settings.py",
        "deploy/id_rsa",
        "id_map.py",
        "node_modules/pkg/.env",
        ".git/secret.key",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    (root / "linked.pem").symlink_to(root / "config" / "settings.py")


def test_the_default_patterns_find_the_secret_files_and_nothing_else(tmp_path: Path) -> None:
    _tree(tmp_path)
    found = find_secret_files(str(tmp_path), DEFAULT_SECRET_PATTERNS)
    assert found.complete
    assert sorted(os.path.relpath(f, tmp_path) for f in found.files) == [
        ".env",
        ".env.production",
        "config/server.key",
        "config/server.pem",
        "deploy/id_rsa",
    ]


def test_an_empty_list_or_only_exceptions_find_nothing(tmp_path: Path) -> None:
    _tree(tmp_path)
    assert find_secret_files(str(tmp_path), []).files == ()
    assert find_secret_files(str(tmp_path), ["!.env"]).files == ()
    kept = find_secret_files(str(tmp_path), [".env", ".env.*", "!.env.production"]).files
    assert sorted(os.path.basename(f) for f in kept) == [".env", ".env.example"]


def test_a_walk_past_its_budget_says_so(tmp_path: Path) -> None:
    for i in range(30):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / ".env").write_text("x")
    found = find_secret_files(str(tmp_path), [".env"], max_entries=5)
    assert not found.complete
    assert "5 entries" in found.note


def test_a_remembered_listing_is_listed_again_once_the_directory_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    made = src.stat().st_ctime_ns
    # Until the file system's clock has moved on from the directory's change time (a change in
    # the same tick would not move it: the walk never remembers a directory that recent).
    probe, deadline = tmp_path / "probe", time.monotonic() + 30
    while time.monotonic() < deadline:
        probe.touch()
        if probe.stat().st_ctime_ns != made:
            break
    monkeypatch.setattr(secret_files, "_SETTLE_NS", -1)  # remember every listing
    assert find_secret_files(str(tmp_path), [".env"]).files == ()
    assert str(src) in secret_files._cache
    (src / ".env").write_text("x")
    assert find_secret_files(str(tmp_path), [".env"]).files == (str(src / ".env"),)


def test_the_plan_covers_them_where_namespaces_work_only(tmp_path: Path) -> None:
    _tree(tmp_path)
    full = Confinement.beneath(
        str(tmp_path), secrets=[], patterns=[".env"], status=LandlockStatus(6, namespaces=True)
    )
    assert full.secret_files == (str(tmp_path / ".env"),)
    argv = full.wrap(["true"])
    assert argv[argv.index("--hide-file") + 1] == str(tmp_path / ".env")
    hardened = Confinement.beneath(
        str(tmp_path), secrets=[], patterns=[".env"], status=LandlockStatus(6, namespaces=False)
    )
    assert hardened.secret_files == ()
    assert "secret-files" in [w.name for w in LandlockStatus(6, namespaces=False).missing()]


def test_the_budget_is_read_when_the_walk_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    monkeypatch.setattr(secret_files, "MAX_WALK_ENTRIES", 0)
    assert not find_secret_files(str(tmp_path), [".env"]).complete
