"""Launchers for repository hooks that git starts itself, inside a confinement.

git runs hooks by path, so the one spawn sequence (`confine.spawn`) is written here as a small
shell launcher per hook, in a private directory that `core.hooksPath` points at for one git
command: it drops meith's call-back variables, puts TMPDIR in the confinement's private temp
dir, hands git's environment to the exec wrapper in a private file (the wrapper itself starts
under the fixed environment, `env -i`, so nothing in git's acts before the walls) and execs
the real hook through the wrapper. The launchers' directory must be protected from the
confinement (`ConfinedSpawn.prepare(protect=[...])`): a hook could otherwise rewrite the
launcher of the next hook git runs, unconfined.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable

from meith_core.base.callback_env import CALLBACK_ENV
from meith_core.confine.launcher import wrapper_environment
from meith_core.confine.spawn import ConfinedSpawn
from meith_core.confine.wrapper.environment import ENV_FILE_VAR


def write_hook_launchers(
    confined: ConfinedSpawn, hooks_dir: str, names: Iterable[str], into: str
) -> list[str]:
    """A launcher in the directory `into` for each hook of `hooks_dir` named in `names`;
    returns their paths. Open the confinement's network first (`open_network`), and
    let git inherit its descriptors (`confined.pass_fds`): the hooks' forwarders keep them."""
    tmpdir = shlex.quote(confined.tmpdir)
    prologue = [f"unset {' '.join(CALLBACK_ENV)}"]
    prologue += [f"{k}={tmpdir}; export {k}" for k in ("TMPDIR", "TMP", "TEMP")]
    env_dir = os.path.join(into, "env")
    os.mkdir(env_dir, 0o700)
    os.chmod(env_dir, 0o300)  # opened by name only: no listing
    prologue += [
        f"f=$(mktemp {shlex.quote(env_dir)}/env.XXXXXX) || exit 126",
        'env -0 > "$f" || exit 126',
    ]
    fixed = " ".join(shlex.quote(f"{k}={v}") for k, v in wrapper_environment().items())
    # The file's name goes in the wrapper's environment, not in its (readable) argv.
    fixed += f' {ENV_FILE_VAR}="$f"'
    written: list[str] = []
    for name in names:
        argv = confined.plan.wrap([os.path.join(hooks_dir, name)])
        quoted = " ".join(shlex.quote(a) for a in argv)
        script = "#!/bin/sh\n" + "\n".join(prologue) + "\n"
        script += f'exec /usr/bin/env -i {fixed} {quoted} "$@"\n'
        path = os.path.join(into, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o700)
        with os.fdopen(fd, "w") as fh:
            fh.write(script)
        written.append(path)
    return written


__all__ = ["write_hook_launchers"]
