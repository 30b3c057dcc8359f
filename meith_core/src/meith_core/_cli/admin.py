"""The local-admin commands: instances, stop, plugins, grants, settings.

These edit the trust root under $MEITH_HOME directly (as the local user), never through the
socket; a running runtime notices the changed files without a restart.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from meith_core._cli.output import (
    EXIT_OK,
    EXIT_TOOL_FAILED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    fail,
    pretty,
)
from meith_core._home import MeithHome
from meith_core._instances import live_instances, match_instances

if TYPE_CHECKING:
    from meith_core._capabilities import Capability


def _home() -> MeithHome:
    return MeithHome.from_env().ensure()


def _when(ms: int | float | None) -> str:
    if not ms:
        return "-"
    return datetime.fromtimestamp(float(ms) / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _table(rows: list[list[str]], header: list[str]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        sys.stdout.write(
            "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n"
        )


# -- instances and stop ------------------------------------------------------------------


def run_instances(as_json: bool) -> int:
    records = live_instances(_home())
    if as_json:
        sys.stdout.write(pretty([r.to_json() for r in records]) + "\n")
        return EXIT_OK
    if not records:
        sys.stdout.write("No running meith instances.\n")
        return EXIT_OK
    _table(
        [
            [str(r.pid), _when(r.started_at) + " UTC", r.version, r.label or "-", r.socket_path]
            for r in records
        ],
        ["PID", "STARTED", "VERSION", "LABEL", "SOCKET"],
    )
    return EXIT_OK


def run_stop(target: str | None, all_: bool, as_json: bool) -> int:
    home = _home()
    if target:
        records = match_instances(home, target)
        if not records:
            return fail(
                f'No live instance matches "{target}". Run "meith instances" to see running instances.',
                EXIT_USAGE,
            )
    else:
        records = live_instances(home)
        if not records:
            return fail("No running meith instances.", EXIT_TOOL_FAILED)
        if len(records) > 1 and not all_:
            running = ", ".join(str(r.pid) for r in records)
            return fail(
                f"Several instances are running ({running}); name one (PID or label) or use --all.",
                EXIT_USAGE,
            )
    pids = [r.pid for r in records]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 5.0
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if _pid_alive(p)]
    stopped = [p for p in pids if p not in alive]
    if as_json:
        sys.stdout.write(pretty({"stopped": stopped, "stillRunning": alive}) + "\n")
    else:
        if stopped:
            sys.stdout.write(f"Stopped: {', '.join(map(str, stopped))}\n")
        if alive:
            sys.stdout.write(f"Sent SIGTERM, still running: {', '.join(map(str, alive))}\n")
    return EXIT_OK if not alive else EXIT_TOOL_FAILED


def _pid_alive(pid: int) -> bool:
    from meith_core._instances import is_pid_alive

    if not is_pid_alive(pid):
        return False
    try:  # a zombie child of ours would count as alive otherwise
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().split(b") ", 1)[1][:1] != b"Z"
    except (OSError, IndexError):
        return True


# -- plugins -----------------------------------------------------------------------------


def _loaded_runtime() -> Any:
    import logging

    import structlog

    from meith_core._runtime.host import Runtime

    # The listing shows plugin failures (with --verbose, their tracebacks); logging them on
    # stderr as well would only repeat it.
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
    )
    runtime = Runtime(_home())
    runtime.discover_plugins()
    return runtime


def _ask_runtime(tool: str) -> tuple[Any, str] | None:
    """`tool`'s content from the running runtime and words naming that runtime; None when no
    runtime is reachable (or it cannot answer)."""
    from meith_core.client import Client
    from meith_core.client._core import TransportError

    try:
        with Client(home=_home(), connect_timeout=2.0) as client:
            result = client.call(tool, {}, timeout_ms=60_000)
            instance = client.target.instance
    except (TransportError, OSError):
        return None
    if not result.ok:
        return None
    where = f"pid {instance.pid}" if instance is not None else client.socket_path
    return result.content, where


def run_plugins_list(as_json: bool, verbose: bool = False) -> int:
    from meith_core._plugins.listing import describe_plugins, plugin_health

    # What the running runtime has loaded is what its tools are; the environment may differ
    # (a plugin installed since, a MEITH_PLUGINS of its own).
    running = _ask_runtime("list_plugins")
    if running is not None:
        listing, where = running
        if not as_json:
            sys.stdout.write(f"Plugins of the running meith runtime ({where}):\n")
    else:
        sys.stderr.write(
            "No meith runtime is running: these are the plugins installed here, which a "
            "runtime started now would load.\n"
        )
        runtime = _loaded_runtime()
        listing = describe_plugins(
            runtime.plugins.records.values(),
            runtime.permissions.approvals,
            plugin_health(runtime.plugins),
        )
    if as_json:
        sys.stdout.write(pretty(listing) + "\n")
        return EXIT_OK
    for p in listing:
        dist = f"{p['distribution']} {p['version']}" if p["distribution"] else "-"
        status = p["status"] + (f": {p['reason']}" if p["reason"] else "")
        sys.stdout.write(f"{p['id']}  ({dist})  {status}\n")
        if p.get("installedVersion"):
            sys.stdout.write(
                f"    installed: {p['installedVersion']} (restart the runtime to load it; it "
                "must then be approved again)\n"
            )
        if verbose and p["traceback"]:
            sys.stdout.write("    " + p["traceback"].rstrip().replace("\n", "\n    ") + "\n")
        if verbose and p["importMs"] is not None:
            sys.stdout.write(f"    import:    {p['importMs']} ms\n")
        if p["tools"]:
            sys.stdout.write(f"    tools:     {', '.join(t['name'] for t in p['tools'])}\n")
            sys.stdout.write(f"    requests:  {', '.join(p['requestedCapabilities'])}\n")
        approval = p["approval"]
        if approval is None:
            state = "not approved" + (
                f"  (run: meith plugins approve {p['id']})" if p["status"] == "loaded" else ""
            )
        elif approval.get("implicit"):
            state = "approved (part of meith)"
        elif not approval["valid"]:
            state = f"VOID: the plugin changed since it was approved (run: meith plugins approve {p['id']})"
        else:
            state = f"approved: {', '.join(approval['capabilities']) or 'nothing'} (since {_when(approval['approvedAt'])} UTC)"
        sys.stdout.write(f"    approval:  {state}\n")
        for check in p["health"]:
            if check["status"] != "ok":
                sys.stdout.write(f"    {check['status']}:{' ' * (10 - len(check['status']))}")
                sys.stdout.write(f"{check['message'] or check['name']}\n")
    return EXIT_OK


def run_plugins_approve(plugin_id: str, capabilities: list[str]) -> int:
    from meith_core._capabilities import parse_capabilities

    try:
        wanted = parse_capabilities(capabilities)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    runtime = _loaded_runtime()
    record = runtime.plugins.records.get(plugin_id)
    if record is None:
        known = ", ".join(sorted(runtime.plugins.records)) or "none"
        return fail(f"No plugin {plugin_id!r} is installed (installed: {known}).", EXIT_USAGE)
    if record.status != "loaded":
        return fail(
            f"Plugin {plugin_id} cannot be approved: it is {record.status} ({record.reason}).",
            EXIT_TOOL_FAILED,
        )
    requested = set(record.requested_capabilities)
    ignored = [c.value for c in wanted if c not in requested]
    if ignored:
        sys.stderr.write(f"note: {plugin_id} does not request {', '.join(ignored)}; ignored\n")
    runtime.approve_plugin(plugin_id, [c.value for c in wanted] if wanted else None)
    approval = runtime.permissions.approvals.get(plugin_id)
    caps = ", ".join(c.value for c in approval.capabilities) if approval else ""
    sys.stdout.write(f"Approved {plugin_id} {record.version or ''} for: {caps or 'nothing'}\n")
    return EXIT_OK


def run_plugins_reload() -> int:
    running = _ask_runtime("reload_plugins")
    if running is None:
        return fail(
            "No meith runtime is running; one started now loads every installed plugin.",
            EXIT_UNREACHABLE,
        )
    new, where = running
    if not new:
        sys.stdout.write(f"No new plugins: the runtime ({where}) has loaded every installed one.\n")
    for p in new:
        dist = f"{p['distribution']} {p['version']}" if p["distribution"] else "-"
        status = p["status"] + (f": {p['reason']}" if p["reason"] else "")
        tools = ", ".join(t["name"] for t in p["tools"]) or "no tools"
        sys.stdout.write(f"{p['id']}  ({dist})  {status}  [{tools}]\n")
    return EXIT_OK


def run_plugins_revoke(plugin_id: str) -> int:
    from meith_core._permissions.approvals import PluginApprovals

    if PluginApprovals(_home().plugins_path).revoke(plugin_id):
        sys.stdout.write(f"Revoked the approval of {plugin_id}.\n")
        return EXIT_OK
    return fail(f"Plugin {plugin_id} had no approval.", EXIT_TOOL_FAILED)


# -- grants ------------------------------------------------------------------------------

_DURATION = re.compile(r"^(\d+)\s*([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration_ms(text: str) -> int:
    match = _DURATION.match(text.strip().lower())
    if not match:
        raise ValueError(f"--expires {text!r}: use a number and a unit, e.g. 30m, 1h, 7d")
    return int(match.group(1)) * _UNIT_S[match.group(2)] * 1000


def run_grants_list(as_json: bool) -> int:
    from meith_core._permissions.grants import StandingGrants

    store = StandingGrants(_home().grants_path)
    grants = store.current()
    if store.load_error:
        sys.stderr.write(f"warning: {store.load_error}\n")
    if as_json:
        sys.stdout.write(pretty([g.to_json() for g in grants]) + "\n")
        return EXIT_OK
    if not grants:
        sys.stdout.write(
            "No standing grants. Add one with: meith grants add --caller cli --capability writes-files\n"
        )
        return EXIT_OK
    now = time.time_ns() // 1_000_000
    rows = []
    for g in grants:
        expiry = (
            "never"
            if g.expires_at is None
            else (_when(g.expires_at) + (" (expired)" if g.expired(now) else ""))
        )
        rows.append(
            [
                g.id,
                g.caller.value + (f" ({g.agent})" if g.agent else ""),
                ",".join(c.value for c in g.capabilities),
                g.tool or "*",
                g.cwd_prefix or "*",
                str(g.uses) if g.uses else "∞",
                expiry,
            ]
        )
    _table(rows, ["ID", "CALLER", "CAPABILITIES", "TOOL", "CWD", "USES", "EXPIRES"])
    return EXIT_OK


def run_grants_add(
    caller: str,
    capabilities: list[str],
    tool: str | None,
    cwd: str | None,
    expires: str | None,
    uses: int | None,
    as_json: bool,
    agent: str | None = None,
) -> int:
    from meith_core._capabilities import PRIVILEGED, parse_capabilities
    from meith_core._permissions.grants import StandingGrants, new_grant

    try:
        caps = parse_capabilities(capabilities)
        not_needed = [c.value for c in caps if c not in PRIVILEGED]
        if not_needed:
            raise ValueError(
                f"{', '.join(not_needed)} need no grant; grant one of: {', '.join(sorted(c.value for c in PRIVILEGED))}"
            )
        expires_at = time.time_ns() // 1_000_000 + parse_duration_ms(expires) if expires else None
        prefix = os.path.abspath(os.path.expanduser(cwd)) if cwd else None
        if prefix is not None and not os.path.isdir(prefix):
            raise ValueError(f"--cwd {prefix}: no such directory")
        grant = new_grant(
            caller,
            caps,
            tool=tool,
            uses=uses,
            expires_at=expires_at,
            cwd_prefix=prefix,
            source="standing",
            agent=agent,
        )
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    StandingGrants(_home().grants_path).add(grant)
    _confinement_note(grant.cwd_prefix, caps)
    if as_json:
        sys.stdout.write(pretty(grant.to_json()) + "\n")
    else:
        sys.stdout.write(
            f"Added {grant.id}: {caller}{' ' + agent if agent else ''} may use {', '.join(c.value for c in caps)}"
            f"{' for ' + tool if tool else ''}{' under ' + (grant.cwd_prefix or '') if grant.cwd_prefix else ''}"
            f"{' until ' + _when(grant.expires_at) + ' UTC' if grant.expires_at else ''}\n"
        )
    return EXIT_OK


def _confinement_note(prefix: str | None, caps: Iterable[Capability]) -> None:
    """A directory-confined starts-process grant confines only where the kernel can enforce it."""
    from meith_core._capabilities import Capability as Cap
    from meith_core._confinement import landlock_status

    if prefix is None or Cap.STARTS_PROCESS not in caps:
        return
    status = landlock_status()
    if status.available:
        sys.stderr.write(f"Confinement: {status.describe()}.\n")
    else:
        sys.stderr.write(
            f"warning: {status.describe()}. This grant lets processes started in {prefix} do "
            "anything you can do.\n"
        )


def run_grants_revoke(grant_id: str) -> int:
    from meith_core._permissions.grants import StandingGrants

    if StandingGrants(_home().grants_path).revoke(grant_id):
        sys.stdout.write(f"Revoked {grant_id}.\n")
        return EXIT_OK
    return fail(f"No standing grant {grant_id} (see meith grants list).", EXIT_TOOL_FAILED)


# -- settings ----------------------------------------------------------------------------


def run_settings_get(key: str | None) -> int:
    from meith_core._settings import SettingsStore

    store = SettingsStore(_home().settings_path)
    value: Any = store.load()
    if key:
        try:
            value = store.get(key)
        except KeyError:
            try:  # not set: the default documented by the plugin that owns the section
                value = _loaded_runtime().settings.get(key)
            except KeyError:
                return fail(f"No setting {key!r}.", EXIT_TOOL_FAILED)
    sys.stdout.write((value if isinstance(value, str) else pretty(value)) + "\n")
    return EXIT_OK


def run_settings_set(key: str, raw: str) -> int:
    from meith_core._settings import SettingsError

    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    runtime = _loaded_runtime()  # plugins declare the models of their sections
    section, _, rest = key.partition(".")
    if rest:
        current = runtime.settings.load().get(section) or {}
        if not isinstance(current, dict):
            return fail(f"Setting {section!r} is not an object; set it whole.", EXIT_USAGE)
        node = current
        parts = rest.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                return fail(f"Setting {key!r}: {part!r} is not an object.", EXIT_USAGE)
        if value is None:
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = value
        value = current
    try:
        runtime.settings.merge({section: value})
    except SettingsError as exc:
        return fail(str(exc), EXIT_USAGE)
    sys.stdout.write(f"Set {key}.\n")
    return EXIT_OK
