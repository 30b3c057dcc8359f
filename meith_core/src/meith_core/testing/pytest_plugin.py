"""The pytest plugin registered by meith-core (entry point `pytest11`): the `meith` fixture.

Kept import-light: the harness (and with it the runtime) is imported when a test uses it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from meith_core.testing._harness import MeithHarness

_INI = "meith_plugin"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(_INI, "id (entry point name) of the plugin the `meith` fixture loads", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "meith_plugin(id, *, obj=None, also=()): the plugin the `meith` fixture loads (by entry "
        "point id, or the object `obj`), and other installed plugins to load with it",
    )


@pytest.fixture
def meith(
    request: pytest.FixtureRequest,
    tmp_path: Any,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[MeithHarness]:
    """An in-process meith runtime on a temporary MEITH_HOME running the plugin under test.

    Its working directory is the test's `tmp_path`. See `meith_core.testing.MeithHarness`.
    """
    from meith_core.testing._harness import MeithHarness

    marker = request.node.get_closest_marker("meith_plugin")
    plugin_id: str = (marker.args[0] if marker and marker.args else "") or request.config.getini(
        _INI
    )
    if not plugin_id:
        pytest.fail(
            'the meith fixture needs to know which plugin to load: set meith_plugin = "<id>" '
            "under [tool.pytest.ini_options] in pyproject.toml, or mark the test "
            '@pytest.mark.meith_plugin("<id>")',
            pytrace=False,
        )
    kwargs = marker.kwargs if marker else {}
    home = tmp_path_factory.mktemp("meith-home")
    monkeypatch.setenv("MEITH_HOME", str(home))
    for name in ("MEITH_PLUGINS", "MEITH_DISABLE_PLUGINS", "MEITH_SOCKET"):
        monkeypatch.delenv(name, raising=False)
    harness = MeithHarness(
        home,
        plugin_id,
        plugin=kwargs.get("obj"),
        also=kwargs.get("also", ()),
        cwd=tmp_path,
    )
    with harness:
        yield harness
