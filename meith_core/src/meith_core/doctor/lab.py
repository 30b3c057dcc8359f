"""The doctor's lab: a live runtime of its own in a temporary directory, where the corpus's
entries play their attacks, and the helpers they share to do it.

Nothing of the user's is touched. The runtime gets its own `MEITH_HOME`, registry of homes
(`XDG_STATE_HOME`) and socket, and a home directory of its own (`HOME`) holding canary
secrets, so the default secret paths (`~/.ssh`, `~/.npmrc`, ...) name files the lab made; the
variables that would lead to the user's agents, buses and displays are replaced by the lab's.
Every entry's agent is an agent session of its own label, with a standing grant for that
label only, in the lab's home.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import shutil
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from meith_core.doctor.agent import Agent
from meith_core.doctor.served import Served, end_processes

if TYPE_CHECKING:
    from meith_core.host.trust_edits import TrustEditor

#: Variables of the user's session that lead to sockets and displays: never the lab's.
SESSION_VARIABLES: Final = (
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "TMUX",
    "TMUX_PANE",
    "STY",
    "DBUS_SESSION_BUS_ADDRESS",
    "GPG_AGENT_INFO",
)
#: meith's own variables the lab's runtime keeps: the test knobs (they only take walls away)
#: and where the browser is.
_KEPT_MEITH: Final = ("MEITH_CONFINE_", "MEITH_BROWSER_EXECUTABLE", "MEITH_REQUIRE_BROWSER")


def lab_environment(root: Path, base: Mapping[str, str]) -> dict[str, str]:
    """The environment of the lab's runtimes: the user's, with a home, state, config and
    session sockets of the lab's own."""
    env = {
        k: v
        for k, v in base.items()
        if (not k.startswith("MEITH_") or k.startswith(_KEPT_MEITH)) and k not in SESSION_VARIABLES
    }
    home = root / "home"
    sockets = root / "sockets"
    env.update(
        HOME=str(home),
        XDG_STATE_HOME=str(root / "state"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        # Packages installed for the user stay importable with another HOME.
        PYTHONUSERBASE=base.get("PYTHONUSERBASE") or site.getuserbase(),
        GIT_CONFIG_NOSYSTEM="1",
        # What a desktop session gives a runtime, pointing at nothing of the user's.
        SSH_AUTH_SOCK=str(sockets / "ssh-agent.sock"),
        DISPLAY=":87",
        TMUX=f"{sockets / 'tmux.sock'},1,0",
        DBUS_SESSION_BUS_ADDRESS=f"unix:path={sockets / 'bus'}",
    )
    real_browsers = Path(base.get("HOME", "~")).expanduser() / ".cache" / "ms-playwright"
    if "PLAYWRIGHT_BROWSERS_PATH" not in base and real_browsers.is_dir():
        env["PLAYWRIGHT_BROWSERS_PATH"] = str(real_browsers)
    return env


class Lab:
    """The lab: its directories, its runtime, its agents, the programs it started."""

    def __init__(self, root: Path, env: Mapping[str, str]) -> None:
        self.root = root
        self.home = root / "home"
        #: The text every canary secret of the lab holds: seeing it means a secret was read.
        self.secret = f"meith-doctor-secret-{secrets.token_hex(8)}"
        self.env = dict(env)
        self.runtime = Served(root, self.env)
        self._counter = itertools.count(1)
        self._stoppers: list[Any] = []
        self._agents: list[Agent] = []
        self._second: Served | None = None
        self._grants: list[str] = []
        self._pids: list[int] = []
        self.plugins: set[str] = set()
        #: The confinement check of the runtime's `app_health`: its walls, built or not.
        self.status: dict[str, Any] = {}
        #: Every check of the runtime's `app_health`, by name.
        self.health: dict[str, dict[str, Any]] = {}

    @classmethod
    @contextlib.contextmanager
    def open(cls, base: Mapping[str, str] | None = None) -> Iterator[Lab]:
        """A lab with its runtime started and its plugins approved; everything stopped and
        removed after."""
        root = Path(tempfile.mkdtemp(prefix="meith-doctor-")).resolve()
        lab = cls(root, lab_environment(root, os.environ if base is None else base))
        try:
            lab._prepare()
            lab.runtime.start()
            listing = lab.runtime.approve_plugins()
            lab.plugins = {p["id"] for p in listing if p["status"] == "loaded"}
            health = lab.runtime.content("app_health")
            lab.health = {str(c["name"]): c for c in health["checks"]}
            lab.status = dict(lab.health.get("confinement", {}).get("details") or {})
            yield lab
        finally:
            lab.close()

    def _prepare(self) -> None:
        from meith_core.confine.secret_paths import DEFAULT_SECRET_PATHS

        for sub in ("ws", "out", "sockets", "state", "home/.config", "home/.cache"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "sockets").chmod(0o700)
        for name, text in {
            ".ssh/id_ed25519": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{self.secret}\n",
            ".aws/credentials": f"[default]\naws_secret_access_key = {self.secret}\n",
            ".netrc": f"machine example.org login me password {self.secret}\n",
            ".npmrc": f"//registry.npmjs.org/:_authToken={self.secret}\n",
            ".pypirc": f"[pypi]\nusername = __token__\npassword = {self.secret}\n",
        }.items():
            path = self.home / name
            path.parent.mkdir(mode=0o700, exist_ok=True)
            path.write_text(text)
            path.chmod(0o600)
        # The user's git identity: the agents' commits need one, like the user's.
        (self.home / ".gitconfig").write_text(
            "[user]\n\tname = meith doctor\n\temail = doctor@example.org\n"
            "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
        )
        kube = self.home / "dotfiles" / "kube"
        kube.mkdir(parents=True)
        (kube / "config").write_text(f"token: {self.secret}\n")
        (self.home / ".kube").symlink_to(kube)
        vault = self.root / "vault"
        vault.mkdir()
        (vault / "token").write_text(self.secret + "\n")
        # A secret path whose name holds glob characters, beside a look-alike that is not.
        for name, text in (
            ("vault[1]/token.txt", "hunter2 token"),
            ("vault1/notes.txt", "token notes"),
        ):
            (self.root / "glob" / name).parent.mkdir(parents=True, exist_ok=True)
            (self.root / "glob" / name).write_text(text + "\n")
        listed = [*DEFAULT_SECRET_PATHS, str(vault), str(self.root / "glob" / "vault[1]")]
        settings = {"confinement": {"secretPaths": listed}}
        (self.runtime.home.root / "settings.json").write_text(json.dumps(settings))

    def second_runtime(self) -> Served:
        """Another runtime of the same user (its own home, the lab's registry of homes), with
        the process plugin approved: started on first use, stopped with the lab."""
        if self._second is None:
            self._second = Served(self.root / "second", {**self.env, "MEITH_PLUGINS": "process"})
            self._stoppers.append(self._second.stop)
            self._second.start()
            self._second.approve_plugins()
        return self._second

    @contextlib.contextmanager
    def private_runtime(self) -> Iterator[Served]:
        """A runtime of one entry's own (the process plugin approved), for an attack that
        damages what it attacks (the trail); stopped when the block ends."""
        served = Served(
            self.root / f"private-{next(self._counter)}", {**self.env, "MEITH_PLUGINS": "process"}
        )
        try:
            served.start()
            served.approve_plugins()
            yield served
        finally:
            served.stop()

    # -- places -------------------------------------------------------------------------

    def dir(self, name: str, *, outside: bool = False) -> Path:
        """A fresh directory: a workspace (under `ws/`), or `outside` every workspace."""
        path = self.root / ("out" if outside else "ws") / f"{next(self._counter):03d}-{name}"
        path.mkdir()
        return path

    # -- callers ------------------------------------------------------------------------

    def agent(
        self,
        scope: Path,
        *capabilities: str,
        net: tuple[str, ...] = (),
        sockets: tuple[str, ...] = (),
        confined: bool = True,
        tool: str | None = None,
        caller: str = "agent",
        uses: int | None = None,
    ) -> Agent:
        """An agent session working in `scope`, granted `capabilities` (default:
        starts-process; `"none"`: no grant at all) confined to `scope`, or anywhere when not
        `confined`. `caller="cli"`: a session of the local user's instead (its grant covers
        every cli session of the lab until the run ends, so give it a directory of its own)."""
        from meith_core.policy.grants import new_grant

        label = f"doctor-{next(self._counter)}"
        if capabilities != ("none",):
            grant = new_grant(
                caller,
                capabilities or ("starts-process",),
                cwd_prefix=str(scope) if confined else None,
                source="standing",
                agent=label if caller == "agent" else None,
                net=net,
                sockets=sockets,
                tool=tool,
                uses=uses,
            )
            self._editor().add_grant(grant)
            self._grants.append(grant.id)
        return self.session(caller, label, scope)

    def session(self, caller: str, label: str, scope: Path) -> Agent:
        """Another session of `caller` with `label` (the grants of that label apply to it)."""
        agent = Agent(self.runtime.client(caller, label=label, cwd=str(scope)), scope, label)
        self._agents.append(agent)
        return agent

    def settle(self) -> None:
        """End what one run of a trick opened: its sessions (and so what they started) and
        its grants. A grant left behind would cover the next run's calls too."""
        agents, self._agents = self._agents, []
        for agent in agents:
            agent.close()
        grants, self._grants = self._grants, []
        editor = self._editor()
        for grant_id in grants:
            editor.revoke_grant(grant_id)

    def _editor(self) -> TrustEditor:
        from meith_core.host.trust_edits import TrustEditor

        return TrustEditor(self.runtime.home, "meith doctor (its own runtime)")

    def sh(
        self, script: str, cwd: Path, timeout_s: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        """`sh -c script` as the local user, outside every wall (with the lab's home)."""
        return subprocess.run(
            ["/bin/sh", "-c", script],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The `meith` command as the local user, on the lab's runtime and home."""
        from meith_core.doctor.served import meith_command

        env = {
            **self.env,
            "MEITH_HOME": str(self.runtime.home.root),
            "MEITH_SOCKET": self.runtime.socket,
        }
        return subprocess.run(
            [*meith_command(), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def cli_as_child(self, socket: str, token: str, *args: str) -> subprocess.CompletedProcess[str]:
        """The `meith` command as a process a session started would run it: its socket and
        token, no home."""
        from meith_core.doctor.served import meith_command

        env = {**self.env, "MEITH_SOCKET": socket, "MEITH_SESSION_TOKEN": token}
        return subprocess.run(
            [*meith_command(), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def git(
        self, cwd: Path, *args: str, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The user's own git, later, outside every wall."""
        env = {
            **self.env,
            "GIT_AUTHOR_NAME": "doctor",
            "GIT_AUTHOR_EMAIL": "doctor@example.org",
            "GIT_COMMITTER_NAME": "doctor",
            "GIT_COMMITTER_EMAIL": "doctor@example.org",
        }
        return subprocess.run(
            [shutil.which("git", path=env.get("PATH")) or "git", *args],
            cwd=cwd,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def audit_records(self) -> list[dict[str, Any]]:
        """Every record of the lab's trail so far."""
        records: list[dict[str, Any]] = []
        for path in sorted(self.runtime.home.root.glob("audit*.jsonl*")):
            for line in path.read_text(errors="replace").splitlines():
                with contextlib.suppress(ValueError):
                    records.append(json.loads(line))
        return records

    def wall_built(self, name: str) -> bool:
        return any(w["wall"] == name and w["built"] for w in self.status.get("walls", ()))

    def browser_found(self) -> bool:
        return self.health.get("browser.chromium", {}).get("status") == "ok"

    # -- what the entries started ----------------------------------------------------------

    def track(self, pid: int) -> None:
        """A process an entry started outside the runtime (a tmux server, an agent): ended
        when the lab closes, if it still runs."""
        self._pids.append(pid)

    def on_close(self, stop: Any) -> None:
        self._stoppers.append(stop)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.settle()
        for stop in reversed(self._stoppers):
            with contextlib.suppress(Exception):
                stop()
        self._stoppers.clear()
        self.runtime.stop()
        end_processes(self._pids)
        _remove(self.root)


def _remove(root: Path) -> None:
    """Remove the lab, including what its entries made read-only."""

    def writable(func: Any, path: str, _exc: Any) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            func(path)

    if sys.version_info >= (3, 12):
        shutil.rmtree(root, onexc=writable)
    else:
        shutil.rmtree(root, onerror=writable)


__all__ = ["Lab", "lab_environment"]
