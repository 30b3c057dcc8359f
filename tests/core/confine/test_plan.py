"""The confinement plan, compared whole for a given host, without the kernel: the host's walls
(`LandlockStatus`) are an argument, so each kind of host is planned here on any machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from meith_core.base.home_registry import register_home, user_tmp_dir
from meith_core.confine.plan import (
    DEVICE_DIRS,
    DEVICE_FILES,
    Confinement,
    NetworkAccess,
    resolv_stub,
)
from meith_core.confine.status import LandlockStatus

#: A host with every wall: Landlock ABI 6 and user, mount and network namespaces.
FULL = LandlockStatus(6, namespaces=True)
#: A hardened host: Landlock ABI 5 (TCP rules), no user namespaces (Ubuntu's AppArmor default).
HARDENED = LandlockStatus(5, namespaces=False)


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user of its own: HOME, the registry of homes and MEITH_HOME in `tmp_path`."""
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("MEITH_HOME", raising=False)
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
    )
    # The control channel by its inherited descriptor: no path of the plumbing anywhere.
    assert plan.wrap(["true"])[-10:] == [
        "--net",
        "gate",
        "--control",
        "7",
        "--resolv",
        resolv_stub(),
        "--listen",
        "127.0.0.1:5432",
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
