"""A hardened host (no user namespaces, forced with `MEITH_CONFINE_NO_NAMESPACES=1` on a host that
has them): the status names each missing wall with its fix."""

from __future__ import annotations

import pytest

from meith_core import landlock_status
from tests.core.confine.support import MISSING, needs_landlock

pytestmark = [pytest.mark.kernel, needs_landlock]


def test_the_status_names_each_missing_wall_with_its_fix(hardened: None) -> None:
    status = landlock_status()
    assert not status.namespaces
    expected = set(MISSING) | (set() if status.tcp_rules else {"network"})
    assert {w.name for w in status.missing()} == expected
    for wall in status.missing():
        assert "sysctl" in wall.fix or "Landlock" in wall.fix
    assert "MISSING" in status.describe()
    for name in MISSING:
        assert name in status.describe()
    details = status.to_dict()
    assert set(details["missing"]) == expected  # type: ignore[arg-type]
