"""Noticing distributions installed while the runtime runs, so a plugin `pip install`ed next to
meith-core is loaded without a restart.

Installing a distribution adds its `*.dist-info` directory to a directory on `sys.path`, which
changes that directory's mtime: comparing the mtimes of the import directories is a few
`stat` calls, cheap enough to do whenever someone lists tools or plugins. Only then is the
(costlier) entry-point scan repeated.
"""

from __future__ import annotations

import importlib
import os
import site
import stat
import sys

from meith_core.host.plugins.manager import PluginManager, PluginRecord, RegisterTools


def _signature() -> tuple[tuple[str, int], ...]:
    out: list[tuple[str, int]] = []
    for entry in sys.path:
        if not entry:
            continue  # the current directory: not where distributions are installed
        try:
            st = os.stat(entry)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            out.append((entry, st.st_mtime_ns))
    return tuple(out)


def _site_dirs() -> list[str]:
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if os.path.isdir(d)]


def _pth_files() -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for sitedir in _site_dirs():
        try:
            names = os.listdir(sitedir)
        except OSError:
            continue
        out.update((sitedir, n) for n in names if n.endswith(".pth"))
    return out


class InstalledWatch:
    """Says when the set of installed distributions may have changed since it last looked."""

    def __init__(self) -> None:
        self._signature = _signature()
        self._pth = _pth_files()

    def changed(self) -> bool:
        """True (once) when an import directory changed; the import system is then ready to
        see what was installed."""
        if _signature() == self._signature:
            return False
        self.prepare()
        return True

    def prepare(self) -> None:
        """Drop the import system's directory caches, and add the import paths of `.pth` files
        installed since (editable installs): what `site` would do at interpreter start."""
        importlib.invalidate_caches()
        pth = _pth_files()
        known = {os.path.normcase(os.path.abspath(p)) for p in sys.path if p}
        for sitedir, name in sorted(pth - self._pth):
            site.addpackage(sitedir, name, known)
        self._pth = pth
        self._signature = _signature()


class NewPlugins:
    """Loads into `manager` the plugins installed after its discovery (same allow/deny rules)."""

    def __init__(
        self,
        manager: PluginManager,
        register_tools: RegisterTools,
        *,
        allow: set[str] | None,
        deny: set[str] | None,
    ) -> None:
        self._manager = manager
        self._register = register_tools
        self._allow = allow
        self._deny = deny
        self._watch = InstalledWatch()

    def load(self, *, force: bool = False) -> list[PluginRecord]:
        """The plugins loaded (or failed) now; [] at the cost of a few stats when nothing was
        installed. `force` looks anyway and retries plugins that failed before registering
        anything (e.g. an import that lacked a dependency since installed)."""
        if force:
            self._watch.prepare()
            records = self._manager.records
            for record in list(records.values()):
                if record.status == "failed" and not record.tools:
                    del records[record.id]
        elif not self._watch.changed():
            return []
        before = set(self._manager.records)
        self._manager.discover(self._register, allow=self._allow, deny=self._deny)
        return [r for pid, r in self._manager.records.items() if pid not in before]
