"""Every process of a confined spawn in a PID namespace of its own, so that all of them are
found, and ended, by what they cannot leave: not a session, a process group, an ancestry or an
environment marker, each of which a process can shed (fork, `setsid`, fork, exec with a clean
environment).

The wrapper unshares the namespace and forks its init (PID 1 inside), then stays what the
runtime tracks: it waits for init, forwards SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1 and
SIGUSR2 to it, and exits with the command's status (or dies of the command's signal). Init
mounts the namespace's own /proc, applies the remaining walls (Landlock), forks the command and
reaps whatever is orphaned to it; it passes each forwarded signal to every process of the
namespace, once. When the command exits, what it left gets SIGTERM and a short grace, then init
exits, and the kernel kills every process left in the namespace before init's exit completes:
when the wrapper's wait returns, none is left. Init dies with the wrapper (`PR_SET_PDEATHSIG`),
so SIGKILL to the wrapper ends the whole spawn.

A terminal keeps its controlling terminal and job control: the wrapper, which the spawner made
the pty's session leader, lets go of it, and the command takes it in a session of its own.
"""

from __future__ import annotations

import gc
import os
import sys
import time

from .command import EXIT_FAILED, cannot_run, exec_command, spawn_command
from .kernel import failure, libc
from .namespaces import mount

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
    from collections.abc import Callable
else:
    import _signal  # not `signal`, whose enums cost every start a fraction of a millisecond

CLONE_NEWPID = 0x20000000
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8

#: Signals the wrapper passes on to the spawn (what the runtime's killer and terminals send).
FORWARDED = (
    _signal.SIGTERM,
    _signal.SIGHUP,
    _signal.SIGINT,
    _signal.SIGQUIT,
    _signal.SIGUSR1,
    _signal.SIGUSR2,
)
#: What the command left running gets this long between SIGTERM and the kernel's SIGKILL.
LEFTOVER_GRACE_S = 1.0


def probe() -> None:
    """Raise OSError unless a PID namespace with an init of its own can be made here."""
    enter()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status:
        raise OSError("an init in a new PID namespace did not start")


def enter() -> None:
    """Unshare a PID namespace: this process's next child is its init."""
    if libc().unshare(CLONE_NEWPID):
        raise failure("unshare(pid)")


def _holds_its_terminal() -> bool:
    """Whether this process leads the session whose controlling terminal is on fd 0."""
    if not os.isatty(0) or os.getsid(0) != os.getpid():
        return False
    try:
        os.tcgetpgrp(0)  # ENOTTY unless it is this session's controlling terminal
    except OSError:
        return False
    return True


def _let_go_of_terminal() -> None:
    import fcntl
    import termios

    # Giving up a controlling terminal sends SIGHUP and SIGCONT to its foreground group, which
    # is this process's own: ignored for that moment.
    hup = _signal.signal(_signal.SIGHUP, _signal.SIG_IGN)
    cont = _signal.signal(_signal.SIGCONT, _signal.SIG_IGN)
    try:
        fcntl.ioctl(0, termios.TIOCNOTTY)
    finally:
        _signal.signal(_signal.SIGHUP, hup)
        _signal.signal(_signal.SIGCONT, cont)


def _take_terminal() -> None:
    import fcntl
    import termios

    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def contain(restrict: Callable[[], None], command: list[str], env: dict[str, str]) -> None:
    """Run `command` with `env` in a new PID namespace, and end this process as it ended (its
    exit status, or its signal). `restrict()` applies the walls that remain, in init, before
    the command starts. Raises OSError only when the namespace cannot be made."""
    tty = _holds_its_terminal()
    if tty:
        _let_go_of_terminal()
    enter()
    # Init is a copy of this interpreter: a collection in it would touch (and so copy) every
    # page of objects it shares with the wrapper.
    gc.disable()
    gc.freeze()
    alive_r, alive_w = os.pipe2(os.O_CLOEXEC)
    status_r, status_w = os.pipe2(os.O_CLOEXEC)
    init = os.fork()
    if init == 0:
        os.close(alive_w)
        os.close(status_r)
        _init(restrict, command, env, tty, alive_r, status_w)
    os.close(alive_r)
    os.close(status_w)
    for sig in FORWARDED:
        _signal.signal(sig, lambda s, _f: _send(init, s))
    _, status = os.waitpid(init, 0)
    reported = os.read(status_r, 4)
    if len(reported) == 4:
        status = int.from_bytes(reported, sys.byteorder)
    if os.WIFSIGNALED(status):
        _die_of(os.WTERMSIG(status))
    sys.stdout.flush()
    sys.stderr.flush()
    # Without the interpreter's finalisation (milliseconds, for nothing: it only waited).
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else EXIT_FAILED)


def _send(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _die_of(sig: int) -> None:
    """End this process by `sig` (no core file: not dumpable), as the command ended."""
    libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    _signal.signal(sig, _signal.SIG_DFL)
    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, [sig])
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)


def _wrapper_gone(alive_r: int) -> bool:
    """Whether the wrapper has exited (its end of the pipe closed)."""
    os.set_blocking(alive_r, False)
    try:
        return os.read(alive_r, 1) == b""
    except BlockingIOError:
        return False


def _init(
    restrict: Callable[[], None],
    command: list[str],
    env: dict[str, str],
    tty: bool,
    alive_r: int,
    status_w: int,
) -> None:
    """PID 1 of the namespace (never returns)."""
    code = EXIT_FAILED
    try:
        if libc().prctl(PR_SET_PDEATHSIG, _signal.SIGKILL, 0, 0, 0):
            raise failure("prctl(PR_SET_PDEATHSIG)")
        if _wrapper_gone(alive_r):
            os._exit(EXIT_FAILED)  # it died before the line above
        try:
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        except OSError:
            pass  # a host /proc with parts masked: this namespace's processes still die with it
        restrict()
        code = _run(command, env, tty, status_w)
    except OSError as exc:
        print(f"meith confine: could not confine the process: {exc}", file=sys.stderr)
    finally:
        sys.stderr.flush()
        os._exit(code)


def _run(command: list[str], env: dict[str, str], tty: bool, status_w: int) -> int:
    """Start the command, reap until it exits, end what it left, report its wait status to
    the wrapper; init's exit status."""
    try:
        child = _start(command, env, tty)
    except OSError as exc:
        return cannot_run(command, exc)
    for sig in FORWARDED:
        _signal.signal(sig, lambda s, _f: _send(-1, s))
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            break
    _end_leftovers()
    os.write(status_w, status.to_bytes(4, sys.byteorder))
    return 0


def _start(command: list[str], env: dict[str, str], tty: bool) -> int:
    """The command's pid: spawned (nothing of this interpreter is copied), or, to take the
    terminal in a session of its own first, forked and exec'd."""
    if not tty:
        return spawn_command(command, env)
    pid = os.fork()
    if pid == 0:
        _take_terminal()
        os._exit(exec_command(command, env))
    return pid


def _end_leftovers() -> None:
    """SIGTERM to what the command left in the namespace, reaped until none is left or the
    grace is over (the kernel SIGKILLs the rest when init exits)."""
    for sig in FORWARDED:
        _signal.signal(sig, _signal.SIG_IGN)
    try:
        os.kill(-1, _signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    delay = 0.002
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
