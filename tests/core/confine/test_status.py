"""Which walls a host builds, and why one is missing: a wall that needs user namespaces says
what keeps them off on this host (the AppArmor restriction, Debian's switch, the test knob)
before the fix."""

from __future__ import annotations

import os

import pytest

from meith_core import Confinement
from meith_core.confine import status
from meith_core.confine.status import NO_NAMESPACES_ENV, LandlockStatus

APPARMOR = "user namespaces restricted by AppArmor (kernel.apparmor_restrict_unprivileged_userns=1)"


def test_a_missing_wall_says_why_then_how_to_get_it() -> None:
    hardened = LandlockStatus(7, namespaces=False, userns_why=APPARMOR)
    missing = {w.name: w.fix for w in hardened.missing()}
    assert set(missing) == {
        "homes-and-sockets-hidden",
        "git-metadata",
        "udp",
        "user-sockets",
        "members",
        "secret-files",
    }
    for fix in missing.values():
        assert fix.startswith(APPARMOR + ": ")
        assert "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0" in fix
    assert APPARMOR in hardened.describe()
    # A host whose namespaces work names no reason.
    assert LandlockStatus(7, namespaces=True).missing() == []


def test_the_reason_is_read_from_the_kernel_s_switches(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pathlib import Path

    root = Path(str(tmp_path))
    apparmor, debian = root / "apparmor", root / "clone"
    apparmor.write_text("1\n")
    debian.write_text("1\n")
    monkeypatch.setattr(
        status,
        "_USERNS_SWITCHES",
        ((str(apparmor), "1", APPARMOR), (str(debian), "0", "debian says no")),
    )
    assert status._userns_why(forced=False) == APPARMOR
    apparmor.write_text("0\n")
    debian.write_text("0\n")
    assert status._userns_why(forced=False) == "debian says no"
    debian.write_text("1\n")
    assert "cannot be created here" in status._userns_why(forced=False)
    assert NO_NAMESPACES_ENV in status._userns_why(forced=True)


@pytest.mark.slow  # about 0.5-1 s alone: over the guard's limit on a loaded CI machine
def test_without_landlock_the_wording_says_full_user_access() -> None:
    missing = LandlockStatus(0)
    assert not missing.available
    assert "full access" in missing.describe()
    assert LandlockStatus(5).to_dict()["scopesSignals"] is False
    assert "cannot signal" in LandlockStatus(6).describe()
    assert os.path.isabs(Confinement.beneath("/").wrap(["true"])[0])
