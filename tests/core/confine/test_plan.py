"""The confinement plan, compared whole for a given host, without the kernel: the host's walls
(`LandlockStatus`) are an argument, so each kind of host is planned here on any machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from meith_core.base.home_registry import register_home, user_tmp_dir
from meith_core.confine import sockets
from meith_core.confine.plan import (
    DEVICE_DIRS,
    DEVICE_FILES,
    Confinement,
    NetworkAccess,
    resolv_stub,
)
from meith_core.confine.status import LandlockStatus
from meith_core.confine.wrapper import environment as wrapper_environment

FULL = LandlockStatus(6, namespaces=True)


HARDENED = LandlockStatus(5, namespaces=False)


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user of its own: HOME, the registry of homes and MEITH_HOME in `tmp_path`; of the
    machine's sockets and private directories, only those under `tmp_path / "sys"`."""
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("MEITH_HOME", raising=False)
    for name in sockets.SESSION_SOCKET_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    system = tmp_path / "sys"
    (system / "tmp").mkdir(parents=True)
    monkeypatch.setattr(sockets, "PRIVATE_DIRS", (str(system / "tmp"),))
    monkeypatch.setattr(sockets, "WELL_KNOWN_SOCKETS", (str(system / "docker.sock"),))
    return home


def _devices(*, namespaces: bool) -> tuple[list[str], list[str]]:
    dirs = [d for d in DEVICE_DIRS if os.path.isdir(d) and (namespaces or d != "/dev/pts")]
    files = [f for f in DEVICE_FILES if os.path.exists(f)]
    return dirs, files


def test_a_full_host_covers_homes_and_secrets_and_mounts_metadata_read_only(
    host: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    tmp = tmp_path / "private-tmp"
    tmp.mkdir()
    meith_home = tmp_path / "meith-home"
    meith_home.mkdir()
    secret = host / ".ssh"
    secret.mkdir()
    plan = Confinement.beneath(
        str(work),
        home=meith_home,
        extra_dirs=[str(tmp)],
        net=NetworkAccess(control_fd=7, gate=True, listen=("127.0.0.1:5432",)),
        secrets=[str(secret)],
        status=FULL,
    )
    dirs, files = _devices(namespaces=True)
    hidden = [str(meith_home), str(secret), str(user_tmp_dir())]
    assert plan == Confinement(
        write_dirs=(str(work), str(tmp), *dirs),
        write_files=tuple(files),
        read_only=(str(work / ".git"),),
        hidden=tuple(p for p in hidden if os.path.lexists(p)),
        binds=(),
        devpts=True,
        network=NetworkAccess(control_fd=7, gate=True, listen=("127.0.0.1:5432",)),
        net_namespace=True,
        read_dirs=None,
        tcp_rules=True,
        private=(str(tmp_path / "sys" / "tmp"),),
        keep=(),
        pid_namespace=True,
    )
    # The control channel by its inherited descriptor: no path of the plumbing anywhere.
    assert plan.wrap(["true"])[-11:] == [
        "--net",
        "gate",
        "--control",
        "7",
        "--resolv",
        resolv_stub(),
        "--listen",
        "127.0.0.1:5432",
        "--pid-ns",
        "--",
        "true",
    ]


def test_a_hardened_host_limits_reads_instead_of_covering(host: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    secret = host / ".aws"
    secret.mkdir()
    plan = Confinement.beneath(
        str(work), net=NetworkAccess(proxy_port=4321), secrets=[str(secret)], status=HARDENED
    )
    dirs, files = _devices(namespaces=False)
    assert plan.write_dirs == (str(work), *dirs)
    assert plan.write_files == tuple(files)
    assert plan.hidden == plan.read_only == plan.binds == ()
    assert plan.devpts is False
    assert plan.net_namespace is False
    assert plan.pid_namespace is False  # members are then the killer's to find
    assert plan.private == ()
    # Reading is limited: nothing of the secret path or /dev/pts is in a read rule.
    assert plan.read_dirs is not None
    readable = [*plan.read_dirs, *plan.read_files]
    for shut in (str(secret), "/dev/pts"):
        assert not any(r == shut or r.startswith(shut + "/") for r in readable), shut
    assert str(work) in plan.read_dirs
    argv = plan.wrap(["true"])
    assert argv[argv.index("--tcp-connect") + 1] == "4321"
    assert argv[argv.index("--proxy-url") + 1] == "http://127.0.0.1:4321"


def test_a_host_without_tcp_rules_or_namespaces_gets_no_network_wall(
    host: Path, tmp_path: Path
) -> None:
    plan = Confinement.beneath(str(tmp_path), status=LandlockStatus(3), secrets=[])
    argv = plan.wrap(["true"])
    assert "--net" not in argv
    assert "--tcp-connect" not in argv
    # ... and the host's walls say so rather than pretending:
    assert "network" in [w.name for w in LandlockStatus(3).missing()]


def test_another_home_beneath_the_directory_is_carved_out(host: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "README").write_text("r\n")
    other = work / "other-home"
    other.mkdir()
    register_home(other)
    plan = Confinement.beneath(str(work), secrets=[], status=FULL)
    # Every entry of the directory but the home, one rule each (no rule covers the directory
    # itself, so no new entry can be made beside the home either).
    assert str(work) not in plan.write_dirs
    assert str(work / "src") in plan.write_dirs
    assert str(work / "README") in plan.write_files
    assert not any(p == str(other) or p.startswith(str(other) + "/") for p in plan.write_dirs)
    assert str(other) in plan.hidden


def test_a_bound_socket_target_is_never_covered(host: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    target = tmp / "meith.sock"
    target.touch()
    plan = Confinement.beneath(
        str(work),
        extra_dirs=[str(tmp)],
        hide=[str(tmp)],
        bind=[("/run/real.sock", str(target))],
        secrets=[],
        status=FULL,
    )
    assert plan.binds == (("/run/real.sock", str(target)),)
    assert str(tmp) not in plan.hidden


def test_the_users_sockets_are_private_or_covered_and_what_it_needs_comes_back(
    host: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system = tmp_path / "sys"
    private_tmp = system / "tmp"
    work = private_tmp / "work"  # workspaces often live in /tmp
    (work / "src").mkdir(parents=True)
    tmpdir = private_tmp / "meith-confined-x"
    tmpdir.mkdir()
    docker = system / "docker.sock"
    docker.touch()
    agent_dir = host / ".agent"
    agent_dir.mkdir()
    (agent_dir / "ssh.sock").touch()
    (private_tmp / "tmux-0").mkdir()
    (private_tmp / "tmux-0" / "default").touch()
    (private_tmp / "db.sock").touch()
    monkeypatch.setenv("SSH_AUTH_SOCK", str(agent_dir / "ssh.sock"))
    monkeypatch.setenv("TMUX", f"{private_tmp / 'tmux-0' / 'default'},77,0")
    plan = Confinement.beneath(
        str(work),
        extra_dirs=[str(tmpdir)],
        sockets=[str(private_tmp / "db.sock")],
        secrets=[],
        status=FULL,
    )
    assert plan.private == (str(private_tmp),)
    assert set(plan.keep) == {str(work), str(tmpdir), str(private_tmp / "db.sock")}
    assert str(docker) in plan.hidden
    assert str(agent_dir / "ssh.sock") in plan.hidden
    assert plan.covers(str(private_tmp / "tmux-0" / "default"))
    assert not plan.covers(str(work / "src"))
    assert not plan.covers(str(private_tmp / "db.sock"))
    argv = plan.wrap(["true"])
    assert argv[argv.index("--private") + 1] == str(private_tmp)
    # A granted socket outside the private directories is simply not covered.
    plan = Confinement.beneath(str(work), sockets=[str(docker)], secrets=[], status=FULL)
    assert str(docker) not in plan.hidden


def test_a_granted_directory_that_holds_a_private_one_keeps_it_whole(
    host: Path, tmp_path: Path
) -> None:
    plan = Confinement.beneath(str(tmp_path / "sys"), secrets=[], status=FULL)
    assert plan.private == ()
    assert plan.keep == ()


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
        assert plan.covers(str(home.resolve())) or plan.read_dirs is not None
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
