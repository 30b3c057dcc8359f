"""The git plugin's health check: does the user's git refuse bare-repository lookalikes?

A process confined to a repository cannot write `.git`, but it can create `HEAD`, `objects/`,
`refs/` and a `config` naming `core.fsmonitor` in any subdirectory it may write: a directory
git takes for a bare repository. When the user's own shell, editor or prompt later runs git
there, git runs that program, outside every wall. No path rule stops this; git refuses such
repositories itself when `safe.bareRepository=explicit` (git 2.38+), a setting only the
user's own (system or global) configuration can make.
"""

from __future__ import annotations

import subprocess
from typing import Any, Final

from meith_plugins_git.runner import READ_ONLY, Git

NAME: Final = "safeBareRepository"
HOW: Final = "git config --global safe.bareRepository explicit"
_WHY: Final = (
    "a process confined to a repository can plant a bare-repository lookalike (HEAD, objects/, "
    "refs/, a config naming core.fsmonitor) in a subdirectory, and your own git would run its "
    "program when you use git there"
)


def user_setting(git: Git, key: str) -> str | None:
    """`key` from the user's own configuration (global over system), never a repository's."""
    value = None
    for scope in ("--system", "--global"):
        try:
            done = subprocess.run(
                [git.path, "config", scope, "--get", key],
                cwd="/",
                env=git.environment(READ_ONLY),
                capture_output=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            value = done.stdout.decode("utf-8", "replace").strip()
    return value


def bare_repository_check(git: Git) -> dict[str, Any]:
    """A `warn` check unless the user's git refuses bare repositories it was not told about."""
    version = ".".join(map(str, git.version))
    if not git.at_least(2, 38):
        return {
            "name": NAME,
            "status": "warn",
            "message": f"git {version} cannot refuse bare-repository lookalikes "
            f"(safe.bareRepository needs git 2.38+): {_WHY}. Upgrade git, then run: {HOW}",
            "details": {"gitVersion": version, "value": None},
        }
    value = user_setting(git, "safe.bareRepository")
    if value is not None and value.lower() == "explicit":
        return {
            "name": NAME,
            "status": "ok",
            "message": "safe.bareRepository=explicit: git refuses bare-repository lookalikes",
            "details": {"gitVersion": version, "value": value},
        }
    shown = f"is {value!r}" if value is not None else "is not set (git's default: all)"
    return {
        "name": NAME,
        "status": "warn",
        "message": f"safe.bareRepository {shown}: {_WHY}. Run: {HOW}",
        "details": {"gitVersion": version, "value": value},
    }


__all__ = ["bare_repository_check", "user_setting"]
