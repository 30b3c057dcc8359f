"""Caller kinds, which are trusted, and the plugin identity the host binds."""

from __future__ import annotations

import pytest

from meith_core import CallerInfo, CallerKind


def test_caller_kinds_and_trust() -> None:
    assert {k.value for k in CallerKind} == {"cli", "renderer", "agent", "plugin", "internal"}
    assert CallerInfo(CallerKind.RENDERER).trusted
    assert CallerInfo(CallerKind.INTERNAL).trusted
    for kind in ("cli", "agent", "plugin"):
        assert not CallerInfo(CallerKind(kind)).trusted


def test_a_caller_kind_given_as_a_string_is_the_same_kind() -> None:
    assert CallerInfo("renderer").caller is CallerKind.RENDERER  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        CallerInfo("root")  # type: ignore[arg-type]


def test_the_plugin_identity_is_bound_by_the_host() -> None:
    caller = CallerInfo.for_plugin("git", cwd="/w")
    assert caller.caller is CallerKind.PLUGIN
    assert caller.plugin_id == "git"
    assert caller.session_id == "plugin:git"
    assert caller.cwd == "/w"
