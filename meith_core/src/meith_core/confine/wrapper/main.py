"""Apply the walls of a confinement to this process, then exec a command inside them.

    python -I -S -B RUN [--env-file FILE] --write DIR [--write DIR ...]
        [--write-file FILE ...] [--private DIR ...] [--keep PATH ...] [--read-only PATH ...]
        [--bind SRC DST ...] [--hide PATH ...] [--hide-file FILE ...]
        [--devpts] [--net none|gate] [--control FD] [--resolv FILE] [--listen HOST:PORT ...]
        [--tcp-connect PORT] [--proxy-url URL] [--read DIR ...] [--read-file FILE ...]
        [--pid-ns] -- ARGV...

(RUN: the entry `confine.launcher` compiles.) Run as the child of a spawn (so it is safe in a
threaded runtime, unlike `preexec_fn`): the walls apply to this process and everything it
execs or forks from then on.

**Nothing of the caller's runs before the walls.** The spawner starts this wrapper under a
fixed, minimal environment (`environment.fixed_environment`): no loader variable
(`LD_PRELOAD`, `GCONV_PATH`, ...) and no `PYTHON*` variable reaches the dynamic loader or the
interpreter that runs it. The caller's environment is handed over in `--env-file`
(NUL-separated `KEY=VALUE`, the format of /proc/PID/environ, a 0600 file of this uid), which is
read as data and removed, and reaches only the final `execve`, after every wall is in place.

Walls, in the order they are built:

- with namespaces (`--read-only`, `--hide`, `--bind`, `--devpts` or `--net`): a user and mount
  namespace of its own; each `--private` DIR (/tmp, /run/user, ...) replaced by an empty
  read-only tmpfs into which the `--keep` paths beneath it are mounted back, by descriptors
  opened before anything was covered (`private.py`); SRC of each `--bind` mounted on the file
  DST (the runtime's socket at a path the process can reach once its own is covered); each
  `--read-only` PATH bind-mounted read-only (repository metadata); `--devpts`: a private
  devpts instance on /dev/pts (and its ptmx on /dev/ptmx), so no other terminal can be opened;
  each `--hide` PATH covered (an empty read-only tmpfs over a directory, /dev/null over a
  file): meith homes and sockets, the user's sockets, secrets; each `--hide-file` FILE (a secret
  file inside the directory) covered with /dev/null through a descriptor, if a regular file.
- `--net none|gate`: a network namespace with only loopback. With `--control FD` (the spawn's
  control channel, an inherited socket pair: `control.py`), the forwarder (`forwarder.py`)
  takes it over: with `gate` it listens on 127.0.0.1:PROXY_PORT inside and the proxy variables
  of the child point there; on each `--listen HOST:PORT` (a host-loopback destination the
  grant names) it tunnels through the gate; it relays connections the runtime sends for a port
  of the namespace's loopback; and it answers name lookups with REFUSED, reporting each name
  (`--resolv FILE`, mounted on /etc/resolv.conf, points lookups at it). The command never has
  the channel.
- Landlock (`landlock.py`): writing, creating, removing, renaming and truncating only beneath
  the `--write` directories (and on the `--write-file` files); reads and execution stay
  allowed unless `--read` limits them (a host without namespaces); with ABI 6+ signals and
  abstract unix sockets are scoped to the new domain. `--tcp-connect PORT` (ABI 4+,
  repeatable; `--tcp-connect 0` for none): TCP connections only to those ports (the network
  wall where no network namespace can be made).
- `--pid-ns`: a PID namespace holding every process of the spawn (`members.py`): this wrapper
  stays, forwards signals to the namespace's init and exits with the command's status; init
  mounts the namespace's /proc, applies Landlock, runs the command, and when it exits ends
  whatever the command left (SIGTERM, then the kernel's SIGKILL as init exits).
"""

from __future__ import annotations

import os
import sys

from .command import EXIT_FAILED, exec_command
from .environment import (
    ENV_FILE_VAR,
    LOADER_HOOKS,
    PROXY_PORT,
    proxy_environment,
    read_env_file,
)
from .landlock import restrict_self
from .members import contain
from .members import probe as probe_pid_namespace
from .namespaces import (
    bind,
    enter_user_mount_namespace,
    hide,
    hide_file,
    loopback_up,
    private_devpts,
    read_only,
    resolve_here,
)
from .private import handle_path, make_private, open_handles, reenter_cwd

_LIST_FLAGS = (
    "--write",
    "--write-file",
    "--read-only",
    "--hide",
    "--tcp-connect",
    "--read",
    "--read-file",
    "--private",
    "--keep",
    "--hide-file",
    "--listen",
)
_VALUE_FLAGS = ("--env-file", "--net", "--control", "--resolv", "--proxy-url")
_SWITCHES = ("--devpts", "--pid-ns")


def main(argv: list[str]) -> int:
    if argv == ["--probe-namespaces"]:
        try:
            enter_user_mount_namespace(net=True)
            private_devpts()
            loopback_up()
            probe_pid_namespace()
        except OSError as exc:
            print(exc, file=sys.stderr)
            return EXIT_FAILED
        return 0
    lists: dict[str, list[str]] = {flag: [] for flag in _LIST_FLAGS}
    values: dict[str, str] = {}
    binds: list[tuple[str, str]] = []
    switches: set[str] = set()
    i = 0
    while i < len(argv) and argv[i] != "--":
        flag = argv[i]
        if flag == "--bind" and i + 2 < len(argv):
            binds.append((argv[i + 1], argv[i + 2]))
            i += 3
            continue
        if flag in _SWITCHES:
            switches.add(flag)
            i += 1
            continue
        if flag in lists and i + 1 < len(argv):
            lists[flag].append(argv[i + 1])
            i += 2
            continue
        if flag in _VALUE_FLAGS and i + 1 < len(argv):
            values[flag] = argv[i + 1]
            i += 2
            continue
        print(f"meith confine: unexpected argument {flag!r}", file=sys.stderr)
        return EXIT_FAILED
    command = argv[i + 1 :]
    if not command:
        print("meith confine: no command after --", file=sys.stderr)
        return EXIT_FAILED
    net = values.get("--net")
    devpts, pid_ns = "--devpts" in switches, "--pid-ns" in switches
    control_fd = None
    if "--control" in values:
        try:
            control_fd = int(values["--control"])
            # Never the command's, whatever happens next.
            os.set_inheritable(control_fd, False)
        except (ValueError, OSError) as exc:
            print(f"meith confine: bad --control: {exc}", file=sys.stderr)
            return EXIT_FAILED
    if "--env-file" not in values and os.environ.get(ENV_FILE_VAR):
        values["--env-file"] = os.environ[ENV_FILE_VAR]
    if "--env-file" not in values:
        preloaded = [k for k in LOADER_HOOKS if k in os.environ]
        if preloaded:
            # The loader has already run that code here, outside every wall: do not go on
            # as if nothing happened. Spawners hand the environment over in --env-file.
            print(
                f"meith confine: refusing to run: {', '.join(preloaded)} reached the wrapper "
                "itself (spawn it through meith_core.ConfinedSpawn, which gives the caller's "
                "environment to the command only)",
                file=sys.stderr,
            )
            return EXIT_FAILED
    try:
        # Data only: the caller's environment is parsed here and applied at the execve.
        env = read_env_file(values["--env-file"]) if "--env-file" in values else dict(os.environ)
        tcp_ports = [int(p) for p in lists["--tcp-connect"]] if lists["--tcp-connect"] else None
        if net is not None:
            # Imported before anything is covered: this package's own directory is hidden
            # from the process too (the per-user directory under /tmp).
            from .forwarder import start_forwarder
        if lists["--read-only"] or lists["--hide"] or binds or devpts or net:
            # Mounts first: once Landlock applies, the mount topology cannot change any more
            # (so the confined process cannot undo them either).
            enter_user_mount_namespace(net=net is not None)
            # Opened before anything is covered: what is mounted back is what the plan named.
            handles = open_handles([*lists["--keep"], *(source for source, _t in binds)])
            # The resolver stub lives in the per-user directory under /tmp: held by descriptor
            # too, since /tmp is made private before it is mounted.
            stub = open_handles([values["--resolv"]]) if "--resolv" in values else {}
            for directory in lists["--private"]:
                make_private(directory, handles)
            for source, target in binds:
                bind(handle_path(handles[source]) if source in handles else source, target)
            for fd in stub.values():
                resolve_here(handle_path(fd))
            for path in lists["--read-only"]:
                read_only(path)
            if devpts:
                private_devpts()
            for path in lists["--hide"]:
                hide(path)
            for path in lists["--hide-file"]:
                hide_file(path)
            reenter_cwd()
            if net is not None:
                loopback_up()
                if control_fd is not None:
                    fd, control_fd = control_fd, None
                    start_forwarder(fd, net == "gate", lists["--listen"], dns=True)
                if net == "gate":
                    env.update(proxy_environment(f"http://127.0.0.1:{PROXY_PORT}"))
        if "--proxy-url" in values:
            env.update(proxy_environment(values["--proxy-url"]))
        limit_reads = bool(lists["--read"])

        def restrict() -> None:
            restrict_self(
                lists["--write"],
                lists["--write-file"],
                tcp_ports=tcp_ports,
                read_dirs=lists["--read"] if limit_reads else None,
                read_files=lists["--read-file"],
            )

        if control_fd is not None:
            os.close(control_fd)  # no forwarder here: nobody holds the channel
        if pid_ns:
            # Last: the first child after it is the namespace's init (the forwarder is not).
            contain(restrict, command, env)
        restrict()
    except (OSError, ValueError) as exc:
        # Never run the command unconfined when confinement was asked for.
        print(f"meith confine: could not confine the process: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return exec_command(command, env)
