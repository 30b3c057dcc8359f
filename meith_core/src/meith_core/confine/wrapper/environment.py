"""The wrapper's own environment (fixed), the caller's (handed over in a file, read as data),
and what a confined process's clients read to reach the network gate."""

from __future__ import annotations

import os

#: The whole environment the wrapper itself starts with (plus `MEITH_*` marker variables, which
#: neither the loader nor Python reads): the caller's reaches only the final execve.
FIXED_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: The port the forwarder listens on inside a network namespace (the namespace is private, so
#: only the confined process could hold it; it is taken before the process starts).
PROXY_PORT = 3128
#: What a confined process's clients reach the network gate through.
_PROXY_VARS = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
_NO_PROXY = "localhost,127.0.0.1,::1"
#: The wrapper's own variable naming its env file (see `Confinement.command`).
ENV_FILE_VAR = "MEITH_CONFINE_ENV"
#: At most this many bytes of environment are read from --env-file.
MAX_ENV_BYTES = 4 * 1024 * 1024

#: Loader variables that run code in every process that starts with them.
LOADER_HOOKS = ("LD_PRELOAD", "LD_AUDIT")


def fixed_environment(markers: dict[str, str] | None = None) -> dict[str, str]:
    """The environment to start the wrapper with: a fixed PATH and locale, and the `MEITH_*`
    `markers` (the process id the killer looks for); anything else is refused."""
    env = {"PATH": FIXED_PATH, "LC_ALL": "C"}
    for key, value in (markers or {}).items():
        if not key.startswith("MEITH_") or not key.replace("_", "").isalnum():
            raise ValueError(f"not a marker variable: {key!r}")
        env[key] = value
    return env


def read_env_file(path: str) -> dict[str, str]:
    """The caller's environment from `path` (NUL-separated KEY=VALUE), which is then removed.
    Only a regular 0600 file of this uid, opened without following links, is accepted."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if (
            st.st_uid != os.getuid()
            or st.st_mode & 0o077
            or not (st.st_mode & 0o170000 == 0o100000)
        ):
            raise OSError(f"{path}: not a private file of this user")
        chunks = []
        size = 0
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_ENV_BYTES:
                raise OSError(f"{path}: environment larger than {MAX_ENV_BYTES} bytes")
            chunks.append(chunk)
    finally:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
    env: dict[str, str] = {}
    for item in b"".join(chunks).split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep and key:
            env[os.fsdecode(key)] = os.fsdecode(value)
    return env


def proxy_environment(url: str) -> dict[str, str]:
    """What ordinary clients (curl, pip, urllib, git over https) read to use the gate."""
    env = dict.fromkeys(_PROXY_VARS, url)
    env["no_proxy"] = env["NO_PROXY"] = _NO_PROXY
    return env
