"""What a process tool checks before it starts a process for a caller, and says about it: its
directory against the grant's, the walls this host cannot build, when it ends, and the git
metadata it planted (found when it stops)."""

from __future__ import annotations

import asyncio
from typing import Final

from meith_core import (
    CallerKind,
    ConfinedSpawn,
    Diagnostic,
    ErrorCode,
    PlantedGitReport,
    ToolContext,
    ToolError,
    is_within,
    landlock_status,
)

Diagnostics = list[Diagnostic | dict[str, str]]

#: How long stopping a confined process waits for its exit scan for planted git metadata.
EXIT_SCAN_WAIT_S: Final = 20.0


def check_scope(ctx: ToolContext, cwd: str) -> None:
    """A grant confined to a directory confines where processes may start, too."""
    if ctx.grant_scope is not None and not is_within(cwd, ctx.grant_scope):
        raise ToolError(
            ErrorCode.PERMISSION_DENIED,
            f"cwd {cwd} is outside the directory this grant is limited to ({ctx.grant_scope})",
            {"reason": "outside grant scope", "grantScope": ctx.grant_scope},
        )


def unconfined_warning(ctx: ToolContext) -> Diagnostics:
    """Say so when a directory-confined grant cannot be enforced by the kernel, and name each
    wall of the confinement this host cannot build."""
    if ctx.grant_scope is None:
        return []
    status = landlock_status()
    if status.available:
        return [
            {
                "level": "warn",
                "message": f"Confinement wall missing on this host: {wall.name} ({wall.fix})",
            }
            for wall in status.missing()
        ]
    return [
        {
            "level": "warn",
            "message": "Not confined: this kernel has no Landlock, so the process runs with the "
            f"user's full access although the grant is limited to {ctx.grant_scope}",
        }
    ]


def confinement_notes(confined: ConfinedSpawn | None) -> Diagnostics:
    """What a confinement says about itself (a secret-file walk cut short)."""
    notes = confined.notes() if confined is not None else []
    return [{"level": "warn", "message": note} for note in notes]


def detached_note(ctx: ToolContext, what: str, object_id: str, detach: bool) -> Diagnostics:
    """What the result says about the object's lifetime (the audit records the result)."""
    if detach:
        return [
            {
                "level": "info",
                "message": f"{what} {object_id} is detached: handed to the local user, it keeps "
                "running after this session ends",
            }
        ]
    if ctx.caller.caller is CallerKind.AGENT:
        return [
            {
                "level": "info",
                "message": f"{what} {object_id} is stopped when this session ends "
                "(start it with detach: true to hand it to the local user)",
            }
        ]
    return []


async def exit_scan(task: asyncio.Task[PlantedGitReport] | None) -> Diagnostics:
    """The diagnostics of a confined process's exit scan for planted git metadata."""
    if task is None:
        return []
    try:
        report = await asyncio.wait_for(asyncio.shield(task), EXIT_SCAN_WAIT_S)
    except (TimeoutError, asyncio.CancelledError):
        return [
            {
                "level": "warn",
                "message": "the scan for git metadata this process planted has not finished; "
                "it goes on, and app_health (check planted-git) shows what it finds",
            }
        ]
    return list(report.diagnostics())
