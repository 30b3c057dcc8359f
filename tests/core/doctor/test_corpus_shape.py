"""The corpus's shape: enough entries over every wall the doctor promises, ids and modules
that match, a doctor that changes nothing of the user's and leaves nothing behind."""

from __future__ import annotations

from collections import Counter

import pytest

from meith_core.doctor.corpus import WALLS, Entry, Needs, Seen, entries, select
from meith_core.doctor.lab import SESSION_VARIABLES, lab_environment

#: The walls every corpus run must cover (the issue that made it).
REQUIRED = {
    "writes",
    "secrets",
    "environment",
    "terminals",
    "runtimes",
    "planted-git",
    "network",
    "host-loopback",
    "unix-sockets",
    "files-tools",
    "lifetime",
    "ports",
    "audit",
}


def test_at_least_forty_entries_over_every_required_wall() -> None:
    found = entries()
    assert len(found) >= 40
    per_wall = Counter(e.wall for e in found)
    assert set(per_wall) >= REQUIRED, REQUIRED - set(per_wall)
    assert set(per_wall) <= set(WALLS)


def test_every_entry_says_its_attack_and_what_held_means() -> None:
    for entry in entries():
        assert entry.attack.strip(), entry.id
        assert entry.assertion.strip(), entry.id
        assert entry.control is not entry.trick, entry.id


def test_ids_are_kebab_case_and_walls_known() -> None:
    def trick(_lab: object) -> Seen:
        return Seen(False, "")

    with pytest.raises(ValueError, match="kebab-case"):
        Entry("Not_Kebab", "writes", "a", "b", trick, trick)
    with pytest.raises(ValueError, match="unknown wall"):
        Entry("some-entry", "no-such-wall", "a", "b", trick, trick, Needs())


def test_select_by_id_or_wall_and_says_what_exists() -> None:
    found = entries()
    assert {e.wall for e in select(found, ["ports"])} == {"ports"}
    assert [e.id for e in select(found, ["write-outside-directory"])] == ["write-outside-directory"]
    with pytest.raises(ValueError, match="walls: writes"):
        select(found, ["nothing-like-this"])


def test_the_lab_runs_with_a_home_and_sockets_of_its_own(tmp_path: object) -> None:
    from pathlib import Path

    root = Path(str(tmp_path))
    user = {
        "HOME": "/home/someone",
        "PATH": "/usr/bin",
        "MEITH_HOME": "/home/someone/.meith",
        "MEITH_SOCKET": "/home/someone/.meith/run/meith.sock",
        "MEITH_SESSION_TOKEN": "mst_x",
        "MEITH_CONFINE_NO_NAMESPACES": "1",
        "SSH_AUTH_SOCK": "/run/user/1000/ssh-agent",
        "XDG_STATE_HOME": "/home/someone/.local/state",
    }
    env = lab_environment(root, user)
    assert env["HOME"] == str(root / "home")
    assert env["XDG_STATE_HOME"] == str(root / "state")
    assert "MEITH_HOME" not in env
    assert "MEITH_SOCKET" not in env
    assert "MEITH_SESSION_TOKEN" not in env
    assert env["MEITH_CONFINE_NO_NAMESPACES"] == "1"  # the knobs only take walls away
    for name in SESSION_VARIABLES:
        assert "/home/someone" not in env.get(name, "")
        assert "/run/user" not in env.get(name, "")
