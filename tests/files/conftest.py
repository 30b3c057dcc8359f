"""Fixtures for the files plugin tests: real files in temporary trees.

`ws` is a workspace directory; `meith` (from `meith_core.testing`) is a runtime running the
plugin from its installed entry point, with the test's `tmp_path` as its directory.
`files` approves the plugin so its writers can run for callers that hold a grant.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meith_core.protocol.results import ErrorInfo
from meith_core.testing import MeithHarness


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def files(meith: MeithHarness) -> MeithHarness:
    meith.approve()
    return meith


def ok(meith: MeithHarness, tool: str, args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """The content of a call that must succeed (as the trusted `internal` caller unless
    `caller=` says otherwise)."""
    kw.setdefault("caller", "internal")
    result = meith.call(tool, args, **kw)
    assert result.ok, (tool, result.error)
    assert isinstance(result.content, dict)
    return result.content


def fails(meith: MeithHarness, tool: str, args: dict[str, Any], **kw: Any) -> ErrorInfo:
    """The error of a call that must fail."""
    kw.setdefault("caller", "internal")
    result = meith.call(tool, args, **kw)
    assert not result.ok, (tool, result.content)
    assert result.error is not None
    return result.error
