"""Which walls this host can build: the kernel's Landlock ABI, whether user, mount and network
namespaces work, and for each wall of a confined process whether it is built here, how, and if
not the exact fix. Asked once per process (`landlock_status`); the test knobs can only take
away."""

from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import dataclass
from typing import Final

from meith_core.confine.launcher import wrapper_argv, wrapper_environment
from meith_core.confine.wrapper.landlock import abi_version

#: Forces the hardened-host path (no user namespaces), for tests: `MEITH_CONFINE_NO_NAMESPACES=1`.
NO_NAMESPACES_ENV: Final = "MEITH_CONFINE_NO_NAMESPACES"
#: Pretends an older Landlock ABI (an integer), for tests: `MEITH_CONFINE_LANDLOCK_ABI=3`.
ABI_ENV: Final = "MEITH_CONFINE_LANDLOCK_ABI"


@dataclass(frozen=True, slots=True)
class Wall:
    """One wall of a confinement: whether this host builds it, how, and if not, the fix."""

    name: str
    built: bool
    how: str
    #: What is missing and how to get it, when not built.
    fix: str = ""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"wall": self.name, "built": self.built, "how": self.how}
        if not self.built:
            out["fix"] = self.fix
        return out


_USERNS_FIX = (
    "enable unprivileged user namespaces: sysctl -w kernel.unprivileged_userns_clone=1 "
    "(Debian), or on Ubuntu 24.04+ sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 "
    "or an AppArmor profile for python allowing 'userns,'; in a container, run it with "
    "user namespaces allowed (e.g. docker --security-opt seccomp=unconfined, or podman)"
)
_KERNEL_FIX = "a kernel with Landlock enabled (5.13+, lsm=landlock in the boot parameters)"


@dataclass(frozen=True, slots=True)
class LandlockStatus:
    """What this kernel's Landlock (and namespaces) can enforce."""

    abi: int
    #: Whether user, mount and network namespaces work here (hiding meith's homes, sockets and
    #: the secret paths, read-only repository metadata, a private devpts, the network wall).
    namespaces: bool = False
    #: What keeps user namespaces from working, as far as this host says (empty: not known).
    userns_why: str = ""

    @property
    def _userns_fix(self) -> str:
        return f"{self.userns_why}: {_USERNS_FIX}" if self.userns_why else _USERNS_FIX

    @property
    def available(self) -> bool:
        return self.abi >= 1

    @property
    def scopes_signals(self) -> bool:
        return self.abi >= 6

    @property
    def tcp_rules(self) -> bool:
        return self.abi >= 4

    def walls(self) -> list[Wall]:
        """Every wall of a confined process, built here or not (never claimed when not)."""
        ns, ll = self.namespaces, self.available
        net_how = (
            "a network namespace with only loopback; named destinations through meith's gate "
            "(an HTTP CONNECT proxy reached over an inherited socket pair, never a path), "
            "proxy variables set; named host-loopback destinations answer at their address "
            "inside; name lookups are refused and reported"
        )
        if not ns and self.tcp_rules:
            net_how = (
                "no network namespace: Landlock TCP rules allow TCP connections only to "
                "meith's gate on a loopback port (which any local process can reach too); "
                "UDP and other protocols are NOT blocked"
            )
        return [
            Wall(
                "writes",
                ll,
                f"Landlock ABI {self.abi}: writes only beneath the granted directory and a "
                "private temp dir",
                _KERNEL_FIX,
            ),
            Wall(
                "environment",
                True,
                "the wrapper starts with a fixed environment; the caller's reaches only the "
                "final execve, inside every wall",
            ),
            Wall(
                "signals",
                self.scopes_signals,
                "Landlock ABI 6+ scopes signals and abstract unix sockets to the domain",
                "Linux 6.12+ (Landlock ABI 6)",
            ),
            Wall(
                "terminals",
                ll,
                "a private devpts instance: other sessions' and the user's terminals are not there"
                if ns
                else "Landlock: of /dev/pts only its own terminal can be read or written",
                _KERNEL_FIX,
            ),
            Wall(
                "runtimes",
                True,
                "every runtime asks a peer outside its user namespace or with no_new_privs "
                "for a session token" + ("; all meith homes and sockets are hidden" if ns else ""),
                "",
            ),
            Wall(
                "homes-and-sockets-hidden",
                ns,
                "every meith home and runtime socket covered in the mount namespace",
                self._userns_fix
                + " (without: their files cannot be read, but sockets stay connectable; "
                "admission still refuses the process)",
            ),
            Wall(
                "user-sockets",
                ns,
                "a private /tmp, /var/tmp, /run/user and $XDG_RUNTIME_DIR (empty but for the "
                "directory, its temp dir and the sockets its grant names: --socket), the "
                "well-known service sockets and those the runtime's environment names covered, "
                "and SSH_AUTH_SOCK, DBUS_SESSION_BUS_ADDRESS, DISPLAY, TMUX... not passed on; "
                "a socket elsewhere that no list names stays reachable until Landlock governs "
                "Unix-socket connects (ABI 9, Linux 7.1)",
                self._userns_fix
                + " (without: the variables are not passed on, but the user's tmux, ssh-agent, "
                "session bus and docker sockets stay connectable by path)",
            ),
            Wall(
                "secrets",
                ll,
                "the secret paths (confinement.secretPaths) covered in the mount namespace"
                if ns
                else "Landlock read rules: everything but the secret paths and meith homes "
                "is readable (the directories leading to them cannot be listed, and what is "
                "created there later cannot be read)",
                _KERNEL_FIX,
            ),
            Wall(
                "secret-files",
                ns,
                "files inside the directory whose names are secret (confinement.secretPatterns: "
                ".env, *.pem, *.key, ssh keys) covered with /dev/null when it starts",
                self._userns_fix + " (without: they are readable by the process)",
            ),
            Wall(
                "git-metadata",
                ns,
                "existing .git mounted read-only",
                self._userns_fix,
            ),
            Wall(
                "network",
                ns or self.tcp_rules,
                net_how,
                self._userns_fix + "; or Linux 6.7+ (Landlock ABI 4) for TCP-only rules",
            ),
            Wall(
                "members",
                ns,
                "a PID namespace of its own: every process of the spawn (forked, setsid, "
                "reparented, with a clean environment) ends when its command ends or is "
                "stopped, before the call answers",
                self._userns_fix
                + " (without: members are found by session, process group, ancestry and an "
                "environment marker, which a process that forks, calls setsid and execs with a "
                "clean environment leaves behind: it outlives the call)",
            ),
            Wall(
                "udp",
                ns,
                "UDP has nowhere to go from a network namespace with only loopback",
                self._userns_fix,
            ),
        ]

    def missing(self) -> list[Wall]:
        return [w for w in self.walls() if not w.built]

    def describe(self) -> str:
        if not self.available:
            return (
                "Landlock is not available on this kernel: a directory-confined grant only "
                "limits where processes start; what they run has the user's full access"
            )
        text = (
            f"Landlock ABI {self.abi}: processes started under a directory-confined grant can "
            "write only beneath that directory and a private temporary directory"
        )
        if self.scopes_signals:
            text += ", and cannot signal or reach abstract sockets outside their domain"
        else:
            text += " (signals and abstract sockets are not scoped before ABI 6)"
        if self.namespaces:
            return text + (
                "; meith's homes and sockets, the user's sockets and the secret paths are "
                "hidden from them, .git is read-only, they see only their own terminal, "
                "have no network but the destinations their grant names (--net), and none of "
                "their processes outlives them"
            )
        missing = ", ".join(w.name for w in self.missing())
        return (
            text + f"; user namespaces are unavailable, so these walls are MISSING: {missing} "
            f"(fix: {self._userns_fix})"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "available": self.available,
            "abi": self.abi,
            "scopesSignals": self.scopes_signals,
            "namespaces": self.namespaces,
            "tcpRules": self.tcp_rules,
            "walls": [w.to_dict() for w in self.walls()],
            "missing": [w.name for w in self.missing()],
            "summary": self.describe(),
        }


@functools.cache
def landlock_status() -> LandlockStatus:
    """The kernel's Landlock and namespace support (asked once per process). The test knobs
    `MEITH_CONFINE_NO_NAMESPACES=1` and `MEITH_CONFINE_LANDLOCK_ABI=N` can only take away."""
    abi = abi_version()
    forced = os.environ.get(ABI_ENV, "").strip()
    if forced.isdigit():
        abi = min(abi, int(forced))
    no_ns = os.environ.get(NO_NAMESPACES_ENV, "").strip() not in ("", "0")
    works = abi >= 1 and not no_ns and _namespaces_work()
    why = "" if works or abi < 1 else _userns_why(forced=no_ns)
    return LandlockStatus(abi, works, why)


#: Kernel settings that turn unprivileged user namespaces off: (file, the value that does,
#: what it means).
_USERNS_SWITCHES = (
    (
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        "1",
        "user namespaces restricted by AppArmor (kernel.apparmor_restrict_unprivileged_userns=1)",
    ),
    (
        "/proc/sys/kernel/unprivileged_userns_clone",
        "0",
        "unprivileged user namespaces disabled (kernel.unprivileged_userns_clone=0)",
    ),
    (
        "/proc/sys/user/max_user_namespaces",
        "0",
        "user namespaces disabled (user.max_user_namespaces=0)",
    ),
)


def _userns_why(*, forced: bool) -> str:
    """Why user namespaces do not work here, as far as the kernel's settings tell."""
    if forced:
        return f"{NO_NAMESPACES_ENV}=1 is set (it makes meith take user namespaces as missing)"
    for path, value, why in _USERNS_SWITCHES:
        try:
            with open(path) as fh:
                if fh.read().strip() == value:
                    return why
        except OSError:
            continue
    return "user namespaces cannot be created here (a container's seccomp profile, or a kernel without them)"


def _namespaces_work() -> bool:
    try:
        probe = subprocess.run(
            [*wrapper_argv(), "--probe-namespaces"],
            capture_output=True,
            timeout=10,
            check=False,
            env=wrapper_environment(),
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


__all__ = ["ABI_ENV", "NO_NAMESPACES_ENV", "LandlockStatus", "Wall", "landlock_status"]
