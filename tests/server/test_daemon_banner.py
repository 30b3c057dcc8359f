"""What `meith serve`'s banner and `meith grants add` say of the walls this host builds: each
missing one named with its fix, and nothing claimed that was not built."""

from __future__ import annotations

from typing import Any

import pytest

from meith_core import landlock_status
from meith_core.confine.status import NO_NAMESPACES_ENV
from tests.core.confine.support import MISSING, needs_landlock

pytestmark = [pytest.mark.kernel, needs_landlock]


def test_the_banner_of_meith_serve_names_the_missing_walls(meith_server: Any) -> None:
    srv = meith_server(env={NO_NAMESPACES_ENV: "1"})
    banner = srv.stdout
    assert "walls MISSING" in banner, banner
    for name in MISSING:
        assert f"- {name}: fix:" in banner, banner
    # At grant time too.
    added = srv.cli(
        "grants",
        "add",
        "-c",
        "starts-process",
        "--cwd",
        str(srv.home.root.parent),
        env={NO_NAMESPACES_ENV: "1"},
    )
    assert added.returncode == 0, added.stderr
    for name in MISSING:
        assert f"wall missing here: {name}:" in added.stderr, added.stderr


def test_the_banner_claims_nothing_it_did_not_build(meith_server: Any) -> None:
    srv = meith_server()
    if landlock_status().missing():
        assert "walls MISSING" in srv.stdout
    else:
        assert "every wall built" in srv.stdout
