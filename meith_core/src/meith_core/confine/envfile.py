"""The caller's environment handed to the exec wrapper as a private file: written here, read
as data and removed by the wrapper (`wrapper.environment.read_env_file`), and given only to the
final execve."""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
from collections.abc import Mapping, Sequence

from meith_core.base.home_registry import user_tmp_dir
from meith_core.confine.launcher import private_dir
from meith_core.confine.wrapper.environment import ENV_FILE_VAR


def write_env_file(env: Mapping[str, str]) -> str:
    """`env` as a private file for the wrapper, in the per-user 0700 directory under /tmp that
    confined processes cannot see. The wrapper removes it."""
    directory = user_tmp_dir() / "env"
    private_dir(directory.parent)
    private_dir(directory, 0o300)  # files are opened by name only: no listing
    payload = b"".join(
        os.fsencode(k) + b"=" + os.fsencode(v) + b"\0"
        for k, v in env.items()
        if k and "=" not in k and "\0" not in k and "\0" not in v
    )
    path = str(directory / f"env-{secrets.token_hex(16)}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, payload)
    finally:
        os.close(fd)
    return path


def discard_env_file(spawned: Sequence[str] | Mapping[str, str]) -> None:
    """Remove the env file of a wrapper that was never spawned: give the environment
    `Confinement.command` returned (or a wrapped argv with `--env-file`)."""
    if isinstance(spawned, Mapping):
        path = spawned.get(ENV_FILE_VAR)
        if path:
            with contextlib.suppress(OSError):
                os.unlink(path)
        return
    for flag, value in itertools.pairwise(spawned):
        if flag == "--env-file":
            with contextlib.suppress(OSError):
                os.unlink(value)
            return
        if flag == "--":
            return


__all__ = ["ENV_FILE_VAR", "discard_env_file", "write_env_file"]
