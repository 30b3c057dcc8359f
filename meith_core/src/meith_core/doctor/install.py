"""`meith doctor` without `--walls`: the installation checked in seconds, one line a check,
each with the fix when something is wrong. Nothing is started but the plugins' discovery
(when no runtime runs)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from meith_core._version import __version__
from meith_core.base.home import MeithHome

Status = Literal["ok", "warn", "fail"]
#: The oldest Python meith runs on (Debian 12's).
OLDEST_PYTHON: Final = (3, 11, 2)


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: Status
    message: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        out = {"name": self.name, "status": self.status, "message": self.message}
        if self.fix:
            out["fix"] = self.fix
        return out


def versions() -> list[Check]:
    python = ".".join(map(str, sys.version_info[:3]))
    old = sys.version_info[:3] < OLDEST_PYTHON
    import meith_core

    return [
        Check(
            "python",
            "fail" if old else "ok",
            f"{python} ({sys.executable})",
            "meith needs Python 3.11.2 or newer" if old else "",
        ),
        Check("meith", "ok", f"{__version__} ({Path(meith_core.__file__).parent})"),
    ]


def plugins(home: MeithHome) -> list[Check]:
    """Each plugin: loaded, approved (or not, or void), and the health checks it adds
    (ripgrep, Chromium, git's bare-repository setting)."""
    from meith_core.host.plugins.listing import loaded_runtime, runtime_listing

    checks = []
    for p in runtime_listing(loaded_runtime(home)):
        name = f"plugin {p['id']}"
        if p["status"] != "loaded":
            checks.append(
                Check(
                    name,
                    "fail",
                    f"{p['status']}: {p['reason']}",
                    "meith plugins -v shows the traceback",
                )
            )
            continue
        approval = p["approval"]
        dist = f"{p['distribution']} {p['version']}"
        if approval is None and p["requestedCapabilities"] != ["read-only"]:
            checks.append(
                Check(
                    name,
                    "warn",
                    f"{dist}: not approved: its privileged tools are refused",
                    f"meith plugins approve {p['id']}",
                )
            )
        elif approval is not None and not approval["valid"]:
            changed = "; ".join(approval.get("changes") or ()) or "its version or tools"
            checks.append(
                Check(
                    name,
                    "warn",
                    f"{dist}: approval VOID, the plugin changed since it was approved ({changed})",
                    f"meith plugins approve {p['id']}",
                )
            )
        else:
            state = (
                "part of meith"
                if approval and approval.get("implicit")
                else "approved"
                if approval
                else "read-only"
            )
            checks.append(Check(name, "ok", f"{dist}: {state}"))
        for health in p["health"]:
            status: Status = (
                "ok"
                if health["status"] == "ok"
                else "fail"
                if health["status"] == "error"
                else "warn"
            )
            checks.append(
                Check(f"{p['id']}.{health['name']}", status, health["message"] or health["status"])
            )
    return checks


def git() -> list[Check]:
    found = shutil.which("git")
    if found is None:
        return [
            Check(
                "git",
                "warn",
                "git is not installed: the git tools fail",
                "install git (apt install git)",
            )
        ]
    done = subprocess.run(
        [found, "--version"], capture_output=True, text=True, timeout=10, check=False
    )
    return [Check("git", "ok", f"{done.stdout.strip()} ({found})")]


def confinement() -> list[Check]:
    from meith_core.confine.status import landlock_status

    status = landlock_status()
    if not status.available:
        return [Check("confinement", "fail", status.describe(), status.walls()[0].fix)]
    checks = [
        Check(
            "confinement",
            "ok" if not status.missing() else "warn",
            f"Landlock ABI {status.abi}, user namespaces {'work' if status.namespaces else 'unavailable'}",
        )
    ]
    checks += [
        Check(f"wall {w.name}", "warn", f"not built here ({w.how})", w.fix)
        for w in status.missing()
    ]
    return checks


def audit(home: MeithHome) -> list[Check]:
    from meith_core.audit.verify import verify

    report = verify(home.audit_path)
    if not report.files:
        return [Check("audit", "ok", "no audit trail yet")]
    if report.ok:
        return [
            Check(
                "audit",
                "ok",
                f"{report.records} records in {len(report.files)} file(s), hash chain intact; head {report.head}",
            )
        ]
    first = report.problems[0]
    where = first["file"] + (f":{first['line']}" if first["line"] else "")
    return [
        Check(
            "audit",
            "fail",
            f"trail BROKEN at {where}: {first['problem']}",
            "meith audit verify --json lists every problem; records from there on cannot be trusted "
            "(compare the head hash you kept elsewhere)",
        )
    ]


def mcp_clients(home: Path, project: Path) -> list[Check]:
    from meith_core.doctor.mcp_clients import find

    entries, unreadable = find(home, project)
    checks = [
        Check(f"mcp {client}", "warn", f"{path}: cannot be read: {why}", "fix its syntax")
        for client, path, why in unreadable
    ]
    for e in entries:
        where = f"{e.client} ({e.file}, server {e.name!r})"
        workspace = f"--cwd {e.cwd}" if e.cwd else "the client's working directory (no --cwd)"
        problem = e.problem()
        if problem:
            checks.append(
                Check(
                    f"mcp {e.client}", "warn", f"{where}: {problem}", "use the full path of meith"
                )
            )
        else:
            checks.append(
                Check(f"mcp {e.client}", "ok", f"{where} runs meith mcp; workspace: {workspace}")
            )
    if not entries:
        checks.append(
            Check(
                "mcp",
                "ok",
                "no MCP client configuration names meith mcp",
                "to add one: docs/mcp.md",
            )
        )
    return checks


def run_checks(home: MeithHome | None = None, project: Path | None = None) -> list[Check]:
    home = home or MeithHome.from_env()
    user = Path(os.path.expanduser("~"))
    return [
        *versions(),
        Check("system", "ok", f"{platform.system()} {platform.release()} ({platform.machine()})"),
        *plugins(home),
        *git(),
        *confinement(),
        *audit(home),
        *mcp_clients(user, project or Path.cwd()),
    ]


def text(checks: list[Check]) -> str:
    out = []
    for c in checks:
        line = f"{c.status.upper() if c.status == 'fail' else c.status:<5} {c.name:<24} {c.message}"
        if c.fix and c.status != "ok":
            line += f"\n{'':<30}fix: {c.fix}"
        out.append(line)
    counts = {s: sum(1 for c in checks if c.status == s) for s in ("ok", "warn", "fail")}
    out.append(
        f"{counts['ok']} ok, {counts['warn']} to look at, {counts['fail']} failed. "
        "`meith doctor --walls` tries every known attack against this host's walls."
    )
    return "\n".join(out) + "\n"


def document(checks: list[Check]) -> dict[str, Any]:
    return {
        "checks": [c.to_json() for c in checks],
        "summary": {s: sum(1 for c in checks if c.status == s) for s in ("ok", "warn", "fail")},
    }


__all__ = ["Check", "document", "run_checks", "text"]
