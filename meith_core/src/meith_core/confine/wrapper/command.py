"""Starting the caller's command, inside every wall: exec'd in place, or spawned as a child
(`posix_spawn`, which copies nothing of this interpreter), and the exit status and message
when it cannot be run."""

from __future__ import annotations

import os
import sys

#: Exit status when confinement or exec fails (like a shell's "cannot run").
EXIT_FAILED = 126
EXIT_NOT_FOUND = 127


def cannot_run(command: list[str], exc: OSError) -> int:
    """Say why `command` could not be run; the exit status a shell would give."""
    if isinstance(exc, FileNotFoundError):
        print(f"meith confine: command not found: {command[0]}", file=sys.stderr)
        return EXIT_NOT_FOUND
    print(f"meith confine: cannot run {command[0]}: {exc}", file=sys.stderr)
    return EXIT_FAILED


def exec_command(command: list[str], env: dict[str, str]) -> int:
    """Exec `command`; returns an exit status only when it cannot be run."""
    try:
        # The caller's environment and argv: only here, inside every wall.
        os.execvpe(command[0], command, env)  # noqa: S606 - the command is the caller's
    except OSError as exc:
        return cannot_run(command, exc)


def spawn_command(command: list[str], env: dict[str, str]) -> int:
    """Start `command` as a child and return its pid, looked up on `env`'s PATH as exec would;
    raises OSError when it cannot be run."""
    return os.posix_spawn(_program(command[0], env), command, env)


def _program(name: str, env: dict[str, str]) -> str:
    if "/" in name:
        return name
    for directory in env.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(directory or ".", name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    raise FileNotFoundError(2, "not found on PATH", name)
