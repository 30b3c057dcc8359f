"""The confinement plan, computed without the kernel."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from meith_core.base.home_registry import register_home


def test_a_plan_with_many_homes_registered_resolves_each_path_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long test run (or a long-lived user) registers thousands of homes. The plan once
    compared every covered path with every other, resolving both each time: 1,500 homes took
    50 s per confined spawn, and CI's confined calls timed out. Each path is resolved once."""
    from meith_core.confine import plan as confinement

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    homes = [tmp_path / "runs" / f"test_{i}" / "home" for i in range(400)]
    for home in homes:
        (home / "instances").mkdir(parents=True)
        register_home(home)
    (tmp_path / "runs" / "test_0" / "home" / "inner").mkdir()
    register_home(tmp_path / "runs" / "test_0" / "home" / "inner")  # inside another home
    work = tmp_path / "work"
    work.mkdir()
    calls = 0
    real_realpath = os.path.realpath

    def counting(path: object, *args: object, **kwargs: object) -> str:
        nonlocal calls
        calls += 1
        return real_realpath(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os.path, "realpath", counting)
    plan = confinement.Confinement.beneath(str(work))
    # A handful per home (registry, known_homes, the plan), never one per pair of paths.
    assert calls < 10 * len(homes), calls
    for home in homes:
        assert str(home.resolve()) in plan.hidden or plan.read_dirs is not None
    assert str((homes[0] / "inner").resolve()) not in plan.hidden  # covered by its home
