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
import shlex
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from meith_core import (
    Confinement,
    GitMetadataWatch,
    NetworkGate,
    PlantedGitReport,
    confine_wrapper_environment,
    landlock_status,
)

#: Where a planted-git report goes (`PluginHost.report_planted_git`).
ReportPlanted = Callable[[PlantedGitReport, Mapping[str, Any]], None]

#: Variables that would lead a hook back to meith's trust root or socket.
_CALLBACK_ENV = ("MEITH_HOME", "MEITH_SOCKET", "MEITH_CLI_BIN", "MEITH_SESSION_TOKEN")


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
) -> Iterator[tuple[str, GitMetadataWatch | None]]:
    """A private hooks directory whose wrappers run the hooks of `hooks_dir` confined, and the
    watch to scan once the command is done (None when there is no hook to run)."""
    wrappers = tempfile.mkdtemp(prefix="meith-hooks-")
    scratch = tempfile.mkdtemp(prefix="meith-hook-tmp-")
    gate = None
    try:
        access = None
        if confinement.net:
            # The hooks of this one command reach the grant's destinations through a gate of
            # their own (its threads live as long as the command).
            namespaces = landlock_status().namespaces
            gate = NetworkGate(
                list(confinement.net),
                socket_path=os.path.join(wrappers, "net.sock") if namespaces else None,
                on_refused=confinement.on_refused,
                grant_hint=f"meith grants add -c starts-process --cwd {confinement.scope} --net",
            )
            access = gate.start_sync()
        plan = Confinement.beneath(
            confinement.scope,
            home=confinement.home,
            extra_dirs=[scratch],
            protect=[wrappers],
            hide=confinement.hide,
            net=access,
        )
        prologue = [f"unset {' '.join(_CALLBACK_ENV)}"]
        prologue += [f"{k}={shlex.quote(scratch)}; export {k}" for k in ("TMPDIR", "TMP", "TEMP")]
        # The hook's environment (git's) goes to the wrapper in a private file; the wrapper
        # itself starts under a fixed one (`env -i`), so nothing in it acts before the walls.
        env_dir = os.path.join(wrappers, "env")
        os.mkdir(env_dir, 0o700)
        os.chmod(env_dir, 0o300)  # opened by name only: no listing
        prologue += [
            f"f=$(mktemp {shlex.quote(env_dir)}/env.XXXXXX) || exit 126",
            'env -0 > "$f" || exit 126',
        ]
        fixed = " ".join(shlex.quote(f"{k}={v}") for k, v in confine_wrapper_environment().items())
        # The file's name goes in the wrapper's environment, not in its (readable) argv.
        fixed += ' MEITH_CONFINE_ENV="$f"'
        names = executable_hooks(hooks_dir)
        watch = GitMetadataWatch.for_confinement(confinement.scope, plan) if names else None
        if watch is not None:
            watch.snapshot()
        for name in names:
            argv = plan.wrap([os.path.join(hooks_dir, name)])
            quoted = " ".join(shlex.quote(a) for a in argv)
            script = "#!/bin/sh\n" + "\n".join(prologue) + "\n"
            script += f'exec /usr/bin/env -i {fixed} {quoted} "$@"\n'
            path = os.path.join(wrappers, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o700)
            with os.fdopen(fd, "w") as fh:
                fh.write(script)
        yield wrappers, watch
    finally:
        if gate is not None:
            gate.close()
        shutil.rmtree(wrappers, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


__all__ = ["HookConfinement", "confined_hooks_dir", "executable_hooks"]
