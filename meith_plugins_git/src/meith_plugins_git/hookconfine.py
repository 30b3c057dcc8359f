"""Running allowed repository hooks under the confinement of the grant that allowed them.

git itself must keep writing the repository (it runs outside any confinement, hardened by the
runner), so only the hooks are confined: for one command, `core.hooksPath` points at a private
directory of generated wrappers, one per executable hook in the hooks directory git would use.
Each wrapper drops meith's call-back variables and execs the real hook through the kernel
confinement (the wrapper under a fixed environment, git's environment handed over in a file) (`meith_core.Confinement`) of a process started under the same directory-confined
`starts-process` grant: writes only beneath that directory and a private temp dir, meith's home
and socket hidden and `.git` read-only where user namespaces work.

The wrapper directory is outside the confinement's reach (a hook could otherwise rewrite the
wrapper of the next hook git runs, unconfined), and both directories are removed afterwards.

Git metadata a confined hook plants beneath the directory (a nested repository with
`core.fsmonitor`, ...) is found and neutralised after the command by the core's one scanner,
`meith_core.GitMetadataWatch`, and reported (`PluginHost.report_planted_git`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from meith_core import (
    ConfinedSpawn,
    GitMetadataWatch,
    PlantedGitReport,
    landlock_status,
    write_hook_launchers,
)

#: Where a planted-git report goes (`PluginHost.report_planted_git`).
ReportPlanted = Callable[[PlantedGitReport, Mapping[str, Any]], None]


@dataclass(frozen=True, slots=True)
class HookConfinement:
    """Where hooks of one call may write: the holding grant's directory."""

    scope: str
    #: meith's home (the trust root), never writable and hidden where namespaces work.
    home: str
    #: Further paths to cover (the runtime's socket).
    hide: tuple[str, ...] = ()
    #: Where what the hooks planted is reported (bound when the plugin starts).
    report: ReportPlanted | None = field(default=None, compare=False)
    #: The network destinations the holding grant names (`--net`); none: no network.
    net: tuple[str, ...] = ()
    #: The Unix sockets the holding grant names (`--socket`); none: none of the user's.
    sockets: tuple[str, ...] = ()
    #: Where refused destinations are reported (the audit trail).
    on_refused: Callable[[str, str], None] | None = field(default=None, compare=False)

    @property
    def enforced(self) -> bool:
        """False where the kernel has no Landlock: hooks then run with the user's access."""
        return landlock_status().available


def executable_hooks(hooks_dir: str) -> list[str]:
    """The names of the executable files in `hooks_dir` (what git would run from there)."""
    try:
        entries = sorted(os.scandir(hooks_dir), key=lambda e: e.name)
    except OSError:
        return []
    return [
        e.name
        for e in entries
        if not e.name.startswith(".") and e.is_file() and os.access(e.path, os.X_OK)
    ]


@contextlib.contextmanager
def confined_hooks_dir(
    confinement: HookConfinement, hooks_dir: str
) -> Iterator[tuple[str, GitMetadataWatch | None, tuple[int, ...]]]:
    """A private hooks directory whose launchers run the hooks of `hooks_dir` confined (the
    core's one spawn sequence, `meith_core.write_hook_launchers`), the watch to scan once the
    command is done (None when there is no hook to run), and the descriptors git must inherit
    for the hooks (their control channel)."""
    launchers = tempfile.mkdtemp(prefix="meith-hooks-")
    confined = None
    try:
        confined = ConfinedSpawn.prepare(
            confinement.scope,
            home=confinement.home,
            hide=confinement.hide,
            protect=[launchers],
            net=confinement.net,
            sockets=confinement.sockets,
            on_refused=confinement.on_refused,
        )
        names = executable_hooks(hooks_dir)
        if confined is None:
            # No Landlock here: `enforced` is False and the caller runs no hook at all.
            yield launchers, None, ()
            return
        # The hooks of this one command reach the grant's destinations through a gate of their
        # own (its threads live as long as the command).
        confined.open_network()
        write_hook_launchers(confined, hooks_dir, names, launchers)
        yield launchers, confined.watch if names else None, confined.pass_fds
    finally:
        if confined is not None:
            confined.cleanup()
        shutil.rmtree(launchers, ignore_errors=True)


__all__ = ["HookConfinement", "confined_hooks_dir", "executable_hooks"]
