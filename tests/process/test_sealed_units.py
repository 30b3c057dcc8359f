"""The pieces of the sealed confinement that need no confined process: `--net` destinations and
the gate's decisions, the grants CLI, peer confinement, the registry of homes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from meith_core.base.home_registry import known_homes, known_sockets, register_home
from meith_core.base.peers import peer_confinement
from meith_core.confine.destinations import DestinationError, parse_destinations
from meith_core.confine.gate import NetworkGate
from meith_core.policy.grants import Grant, new_grant
from tests.harness import MEITH


def test_destinations_parse_and_match() -> None:
    rules = parse_destinations(["pypi.org,*.pythonhosted.org:443", "[::1]:8080", "10.0.0.1"])
    assert [str(r) for r in rules] == [
        "pypi.org",
        "*.pythonhosted.org:443",
        "[::1]:8080",
        "10.0.0.1",
    ]
    # A public answer for every name (no resolver is asked).
    gate = NetworkGate(rules, resolve=lambda host, port: ["203.0.113.9"])

    def allowed(host: str, port: int) -> bool:
        return gate.decide(host, port).refusal is None

    assert allowed("pypi.org", 443)
    assert allowed("PyPI.org.", 80)
    assert allowed("files.pythonhosted.org", 443)
    assert not allowed("pythonhosted.org", 443)  # subdomains only
    assert not allowed("files.pythonhosted.org", 80)
    assert not allowed("evilpythonhosted.org", 443)
    assert allowed("::1", 8080)
    reason = gate.decide("example.com", 443).refusal
    assert reason is not None
    assert "--net example.com:443" in reason
    anything = NetworkGate(parse_destinations(["any"]), resolve=lambda host, port: ["203.0.113.9"])
    assert anything.decide("example.com", 1).refusal is None
    for bad in ("exa mple.com", "host:0", "host:99999", "[::1", "a:b:c:d]"):
        with pytest.raises(DestinationError):
            parse_destinations([bad])


def test_a_grant_keeps_its_destinations(tmp_path: Path) -> None:
    grant = new_grant("agent", ["starts-process"], cwd_prefix=str(tmp_path), net=["a.org,any"])
    assert grant.net == ("any",)
    grant = new_grant("agent", ["starts-process"], cwd_prefix=str(tmp_path), net=["A.org:443"])
    assert Grant.from_json(json.loads(json.dumps(grant.to_json()))).net == ("a.org:443",)


def _meith(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEITH_")}
    env["MEITH_HOME"] = str(home)
    return subprocess.run(
        [MEITH, *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


@pytest.mark.slow
def test_grants_add_net(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    repo.mkdir()
    base = ["grants", "add", "--caller", "agent", "-c", "starts-process"]
    done = _meith(home, *base, "--cwd", str(repo), "--net", "pypi.org", "--net", "*.x.org:443")
    assert done.returncode == 0, done.stderr
    assert "network: pypi.org, *.x.org:443" in done.stdout
    listed = json.loads(_meith(home, "grants", "list", "--json").stdout)
    assert listed[0]["net"] == ["pypi.org", "*.x.org:443"]
    unconfined = _meith(home, *base, "--net", "pypi.org")
    assert unconfined.returncode != 0
    assert "--cwd" in unconfined.stderr
    bad = _meith(home, *base, "--cwd", str(repo), "--net", "bad host")
    assert bad.returncode != 0


def test_a_peer_of_this_namespace_is_not_taken_for_confined() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        assert peer_confinement(os.getpid()) is None


def test_every_home_and_its_sockets_are_known(tmp_path: Path) -> None:
    home = tmp_path / "h"
    (home / "instances").mkdir(parents=True)
    sock_path = tmp_path / "s.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock_path))
    (home / "instances" / "1.json").write_text(json.dumps({"pid": 1, "socketPath": str(sock_path)}))
    register_home(home)
    try:
        assert os.path.realpath(home) in known_homes()
        assert str(sock_path) in known_sockets()
    finally:
        listener.close()


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


def test_outermost_and_resolved_within() -> None:
    from meith_core.base.paths import outermost, resolved_within

    assert outermost(["/a/b", "/a", "/ab", "/a/b/c", "/x", "/a"]) == ["/a", "/ab", "/x"]
    assert outermost(["/", "/etc"]) == ["/"]
    assert resolved_within("/a/b", "/a")
    assert resolved_within("/a", "/a")
    assert not resolved_within("/ab", "/a")
    assert resolved_within("/etc", "/")


@pytest.mark.slow
def test_the_secret_paths_are_set_on_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    default = json.loads(_meith(home, "settings", "get", "confinement.secretPaths").stdout)
    assert "~/.ssh" in default
    assert "~/.docker/config.json" in default
    mine = json.dumps([*default, str(tmp_path / "vault")])
    done = _meith(home, "settings", "set", "confinement.secretPaths", mine)
    assert done.returncode == 0, done.stderr
    settings = json.loads((home / "settings.json").read_text())
    from meith_core import is_secret_path

    assert is_secret_path(tmp_path / "vault" / "key", settings)
    assert is_secret_path(tmp_path / "vault" / "key", home=home)
