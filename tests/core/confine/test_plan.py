"""The confinement plan, computed without the kernel."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from meith_core import Confinement
from meith_core.base.home_registry import register_home
from meith_core.confine.wrapper import environment as wrapper_environment


@pytest.mark.slow
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


def test_the_wrapper_is_spawned_under_a_fixed_environment(tmp_path: Path) -> None:
    plan = Confinement.beneath(str(tmp_path))
    hostile = {"LD_PRELOAD": "/x.so", "GCONV_PATH": "/x", "PYTHONPATH": "/x", "PATH": "/bin"}
    argv, env = plan.command(["true"], hostile, markers={"MEITH_PROCESS_ID": "dev_1"})
    env_file = env.pop(wrapper_environment.ENV_FILE_VAR)
    assert env == {**wrapper_environment.fixed_environment(), "MEITH_PROCESS_ID": "dev_1"}
    # Named in the wrapper's environment, not in its argv (which anyone can read).
    assert env_file not in argv
    assert os.stat(env_file).st_mode & 0o777 == 0o600
    assert os.stat(os.path.dirname(env_file)).st_mode & 0o777 == 0o300  # cannot be listed
    assert b"LD_PRELOAD=/x.so\0" in Path(env_file).read_bytes()
    os.unlink(env_file)
    with pytest.raises(ValueError, match="marker"):
        plan.command(["true"], {}, markers={"LD_PRELOAD": "/x.so"})
