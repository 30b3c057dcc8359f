"""The plugin API version: a plugin built for another range fails to load with a sentence saying
what to upgrade."""

from __future__ import annotations

from typing import Any

import pytest

import meith_core
from meith_core import Runtime, hookimpl


class _NewerApi:
    MEITH_PLUGIN_API = ">=2,<3"

    @hookimpl
    def meith_tools(self) -> list[Any]:
        return []


class _OlderApi(_NewerApi):
    MEITH_PLUGIN_API = "<1"


class _BadApi(_NewerApi):
    MEITH_PLUGIN_API = "one or two"


class _FitsApi(_NewerApi):
    MEITH_PLUGIN_API = ">=1,<2"


@pytest.mark.anyio
async def test_a_plugin_built_for_a_newer_api_fails_with_a_sentence_saying_what_to_upgrade(
    runtime: Runtime,
) -> None:
    assert meith_core.PLUGIN_API == 1
    newer = runtime.load_plugin("newer", _NewerApi)
    assert newer.status == "failed"
    assert (
        f"plugin 'newer' was built for meith plugin API >=2,<3, but this meith-core "
        f"{meith_core.__version__} provides plugin API 1; upgrade meith-core"
    ) in (newer.reason or "")
    older = runtime.load_plugin("older", _OlderApi)
    assert "upgrade the plugin to a release built for plugin API 1" in (older.reason or "")
    bad = runtime.load_plugin("bad", _BadApi)
    assert "is not a range of API versions; write e.g. '>=1,<2'" in (bad.reason or "")
    assert runtime.load_plugin("fits", _FitsApi).status == "loaded"
