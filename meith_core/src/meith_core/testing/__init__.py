"""Testing meith plugins: the `meith` pytest fixture and the harness behind it.

Installing meith-core registers a pytest plugin (entry point `pytest11`), so a plugin's tests
need no conftest: name the plugin under test in `pyproject.toml`

```toml
[tool.pytest.ini_options]
meith_plugin = "weather"
```

(or mark a test `@pytest.mark.meith_plugin("weather")`, or pass the plugin object:
`@pytest.mark.meith_plugin("weather", obj=Plugin)`), then use the `meith` fixture, a
`MeithHarness`. Outside pytest, `with MeithHarness(home, "weather") as meith: ...`.
"""

from __future__ import annotations

from meith_core.testing._harness import Caller, MeithHarness, PluginLoadError

__all__ = ["Caller", "MeithHarness", "PluginLoadError"]
