"""Private directories: /tmp, /run/user and the like replaced by an empty read-only tmpfs, with
what the process needs of them (its directory, its temp dir, a socket its grant names) mounted
back by descriptor: each is opened before anything is covered, and mounted from
/proc/self/fd/N, so what comes back is the object the plan named, whatever its name leads to
by then."""

from __future__ import annotations

import os

from .namespaces import MS_BIND, MS_RDONLY, MS_REC, MS_REMOUNT, mount, mount_data

MS_NOSUID = 2
MS_NODEV = 4


def open_handles(paths: list[str]) -> dict[str, int]:
    """An O_PATH descriptor of each path that exists (the last component not followed)."""
    handles: dict[str, int] = {}
    for path in paths:
        try:
            handles[path] = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
    return handles


def handle_path(fd: int) -> str:
    return f"/proc/self/fd/{fd}"


def make_private(directory: str, keep: dict[str, int]) -> None:
    """Replace `directory` by an empty read-only tmpfs holding only the `keep` paths beneath
    it, each mounted back from its descriptor (with what is mounted beneath it)."""
    mount_data("tmpfs", directory, "tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755")
    prefix = directory.rstrip("/") + "/"
    for path, fd in keep.items():
        if not path.startswith(prefix):
            continue
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        if os.path.isdir(handle_path(fd)):
            os.makedirs(path, mode=0o755, exist_ok=True)
        elif not os.path.lexists(path):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
        mount(handle_path(fd), path, None, MS_BIND | MS_REC)
    mount(None, directory, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def reenter_cwd() -> None:
    """Look the working directory up again in the new mount tree: the one inherited is the
    directory as it was reached before (`..` from it would lead into the covered /tmp)."""
    before = os.stat(".")
    cwd = os.getcwd()
    try:
        os.chdir(cwd)
    except OSError as exc:
        raise OSError(exc.errno, f"working directory {cwd}: not reachable inside") from None
    if not os.path.samestat(os.stat("."), before):
        raise OSError(f"working directory {cwd}: another directory inside")
