"""Which walls a host builds, and what meith says of a host that lacks them."""

from __future__ import annotations

import os

from meith_core import Confinement
from meith_core.confine.status import LandlockStatus


def test_without_landlock_the_wording_says_full_user_access() -> None:
    missing = LandlockStatus(0)
    assert not missing.available
    assert "full access" in missing.describe()
    assert LandlockStatus(5).to_dict()["scopesSignals"] is False
    assert "cannot signal" in LandlockStatus(6).describe()
    assert os.path.isabs(Confinement.beneath("/").wrap(["true"])[0])
