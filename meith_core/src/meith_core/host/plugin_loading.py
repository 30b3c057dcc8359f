"""Which plugins a runtime loads, and when: the built-in `core` plugin and the installed ones at
discovery, those installed while it runs, and plugin objects handed to it; then the settings
sections they declare.

Loading registers a plugin's tools and nothing more; running its lifecycle hooks is
`host.plugins.lifecycle`, driven by the runtime.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from meith_core._version import __version__
from meith_core.call.catalogue import Catalogue
from meith_core.host.plugins.installed import NewPlugins
from meith_core.host.plugins.manager import PluginManager, PluginRecord, env_list
from meith_core.host.settings import SettingsStore

_log = structlog.get_logger("meith.runtime")


class PluginLoading:
    def __init__(
        self,
        manager: PluginManager,
        catalogue: Catalogue,
        settings: SettingsStore,
        *,
        load_installed: bool,
        allow: set[str] | None,
        deny: set[str] | None,
    ) -> None:
        self._manager = manager
        self._catalogue = catalogue
        self._settings = settings
        #: False: only the built-in `core` plugin, no installed ones.
        self._load_installed = load_installed
        self._allow = allow
        self._deny = deny
        self._discovered = False
        #: Set at discovery: loads plugins installed afterwards (`load_new`).
        self._new_plugins: NewPlugins | None = None

    def discover(self, core_plugin: Callable[[], object]) -> None:
        """Load `core_plugin()` and the installed plugins, once; their tools are registered."""
        if self._discovered:
            return
        self._discovered = True
        register = self._catalogue.register_many
        deny = self._deny or env_list("MEITH_DISABLE_PLUGINS") or set()
        if "core" not in deny:
            # Part of meith_core: always present, loaded like any other plugin.
            self._manager.load_object(
                "core", core_plugin(), register, distribution="meith-core", version=__version__
            )
        if self._load_installed:
            self._new_plugins = NewPlugins(
                self._manager, register, allow=self._allow, deny=self._deny
            )
            self._manager.discover(register, allow=self._allow, deny=self._deny)
        self.collect_settings_sections()

    def load_new(self, *, force: bool = False) -> list[PluginRecord]:
        """Plugins installed since discovery, loaded now (see `Runtime.load_new_plugins`)."""
        if self._new_plugins is None:
            return []
        new = self._new_plugins.load(force=force)
        if not new:
            return []
        self.collect_settings_sections()
        for record in new:
            _log.info(
                "plugin installed while running",
                plugin=record.id,
                status=record.status,
                reason=record.reason,
                version=record.version,
            )
        return new

    def load_object(self, plugin_id: str, obj: Any, *, version: str | None) -> PluginRecord:
        """A plugin object that is not installed as an entry point (tests, embedding)."""
        record = self._manager.load_object(
            plugin_id, obj, self._catalogue.register_many, distribution=plugin_id, version=version
        )
        self.collect_settings_sections()
        return record

    def collect_settings_sections(self) -> None:
        for plugin_id, thunk in self._manager.call_each("meith_settings"):
            try:
                sections = thunk() or {}
                for name, section in sections.items():
                    self._settings.register_section(name, section)
            except Exception as exc:
                _log.error("plugin settings hook failed", plugin=plugin_id, error=str(exc))
