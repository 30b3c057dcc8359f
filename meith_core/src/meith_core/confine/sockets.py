"""The user's Unix sockets, out of a confined process's reach.

Landlock before ABI 9 (Linux 7.1) does not govern `connect()` to a pathname socket, and a
network namespace only separates abstract ones: whatever socket a confined process can name, it
can talk to — the user's tmux server (which runs commands as the user), ssh-agent (which signs
with the user's keys), the session bus (`systemd-run --user`), docker's socket. So, in the
process's mount namespace (`confine.plan`, built by the wrapper):

- `/tmp`, `/var/tmp`, `/run/user` and `$XDG_RUNTIME_DIR` are each an empty read-only tmpfs
  (`PRIVATE_DIRS`, `private_dirs`): where sessions keep their sockets (tmux, screen, ssh-agent,
  X11, the bus, Wayland, gpg-agent, editors). What the process needs of them — its directory,
  its private temp dir, a socket its grant names — is mounted back by descriptor. Sockets the
  user creates there later are not in these mounts either.
- the well-known sockets elsewhere (`WELL_KNOWN_SOCKETS`: docker, containerd, podman, the system
  bus, systemd's private socket, local databases, ...) and every socket path the runtime's own
  environment names (`SESSION_SOCKET_ENV`) are covered, by name, as they are at the start.
- the variables that name them are not passed on (`without_session_sockets`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Final

from meith_core.base.paths import outermost

#: Variables that lead a program to the user's agents, buses, displays, terminal multiplexers,
#: editors and container engines: never passed to a confined process (one list).
SESSION_SOCKET_ENV: Final = (
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "WAYLAND_SOCKET",
    "XAUTHORITY",
    "TMUX",
    "TMUX_PANE",
    "TMUX_TMPDIR",
    "STY",
    "SCREENDIR",
    "ZELLIJ",
    "ZELLIJ_SESSION_NAME",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "KITTY_LISTEN_ON",
    "ALACRITTY_SOCKET",
    "WEZTERM_UNIX_SOCKET",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "VSCODE_IPC_HOOK_CLI",
    "VSCODE_GIT_IPC_HANDLE",
    "SWAYSOCK",
    "I3SOCK",
    "NIRI_SOCKET",
    "HYPRLAND_INSTANCE_SIGNATURE",
    "GNOME_KEYRING_CONTROL",
    "PULSE_SERVER",
)

#: Directories replaced by an empty read-only tmpfs (where they exist), besides
#: `$XDG_RUNTIME_DIR`: all of `/run/user`, since root reaches every user's.
PRIVATE_DIRS: Final = ("/tmp", "/var/tmp", "/run/user")  # noqa: S108 - covered, not used

#: Sockets (and directories of sockets) of system services that act for whoever connects.
WELL_KNOWN_SOCKETS: Final = (
    *(
        f"{run}/{name}"
        for run in ("/run", "/var/run")
        for name in (
            "docker.sock",
            "docker",
            "containerd",
            "podman",
            "crio",
            "cri-dockerd.sock",
            "buildkit",
            "k3s",
            "libvirt",
            "incus",
            "lxd",
            "snapd.socket",
            "snapd-snap.socket",
            "screen",
            "dbus/system_bus_socket",
            "systemd/private",
            "systemd/io.systemd.Manager",
            "systemd/resolve/io.systemd.Resolve",
            "postgresql",
            "mysqld",
            "redis",
            "memcached",
        )
    ),
    "/var/lib/lxd/unix.socket",
    "/var/lib/incus/unix.socket",
    "/var/snap/lxd/common/lxd",
)

#: A path in a variable's value: after `=`, `,`, `;`, `:` (`unix:path=/x`, `unix:///x`, `/x,1,0`).
_PATH_IN_VALUE: Final = re.compile(r"(?:^|(?<=[=,;:]))(/[^,;:\0]+)")


def without_session_sockets(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without the variables of `SESSION_SOCKET_ENV`."""
    return {k: v for k, v in env.items() if k not in SESSION_SOCKET_ENV}


def private_dirs(env: Mapping[str, str] | None = None) -> list[str]:
    """The directories to replace by an empty tmpfs, resolved, those that exist."""
    env = os.environ if env is None else env
    listed = [*PRIVATE_DIRS, env.get("XDG_RUNTIME_DIR", "")]
    found = [os.path.realpath(d) for d in listed if os.path.isabs(d) and os.path.isdir(d)]
    return outermost([d for d in dict.fromkeys(found) if d != "/"])


def named_sockets(env: Mapping[str, str]) -> list[str]:
    """Every existing path the session variables of `env` name (`$SSH_AUTH_SOCK`, the server in
    `$TMUX`, `unix:path=` of the buses, `$TMUX_TMPDIR/tmux-UID`, ...)."""
    found: list[str] = []
    for key in SESSION_SOCKET_ENV:
        value = env.get(key, "")
        found += (os.path.normpath(m) for m in _PATH_IN_VALUE.findall(value))
    tmux_dir = env.get("TMUX_TMPDIR", "")
    if os.path.isabs(tmux_dir):
        found.append(os.path.join(tmux_dir, f"tmux-{os.geteuid()}"))
    return [p for p in found if p != "/" and os.path.lexists(p)]


def user_sockets(env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> list[str]:
    """The sockets to cover by name (outside the private directories), resolved, that exist:
    the well-known ones, those the session variables of `env` name, and `extra`."""
    env = os.environ if env is None else env
    listed = [*WELL_KNOWN_SOCKETS, *named_sockets(env), *extra]
    return list(dict.fromkeys(os.path.realpath(p) for p in listed if os.path.lexists(p)))


__all__ = [
    "PRIVATE_DIRS",
    "SESSION_SOCKET_ENV",
    "WELL_KNOWN_SOCKETS",
    "named_sockets",
    "private_dirs",
    "user_sockets",
    "without_session_sockets",
]
