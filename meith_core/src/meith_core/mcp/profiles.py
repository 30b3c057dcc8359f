"""What a bridge offers (`--tools`, `--plugins`, `--read-only`), the tool profiles, and the
server's instructions that say so.

A profile is a named set of tools for one kind of work, so that an agent's client lists (and
its model reads) only the schemas that work needs: every meith tool is about 50 KB of schemas.
`coding`, the default, is the loop of read, search, edit, undo, run and git's status, diff and
log; `git`, `browser` and `all` widen it, and `--tools` takes profiles and globs together
(`--tools coding,git`, `--tools 'coding,get_browser_*'`).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Profile:
    globs: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    about: str = ""


PROFILES: Final = {
    "coding": Profile(
        ("workspace_*", "run_command", "git_status", "git_diff", "git_log"),
        about="read, search, edit and undo files, run commands, git status, diff and log",
    ),
    "git": Profile(("git_*",), about="every git tool: stage, commit, branches, checkpoints, …"),
    "browser": Profile(
        (
            "start_dev_server",
            "stop_dev_server",
            "wait_for_dev_server",
            "list_dev_servers",
            "get_process_logs",
        ),
        plugins=("browser",),
        about="the browser's tabs and pages, and dev servers",
    ),
    "all": Profile(("*",), about="every tool of every approved plugin"),
}
DEFAULT_PROFILE: Final = "coding"


@dataclass(frozen=True)
class Selection:
    """What this bridge offers: `--plugins`, `--tools` (profiles and globs), `--read-only`.
    Nothing given offers every tool (the bridge's command line gives `coding` by default)."""

    plugins: frozenset[str] = frozenset()
    tool_globs: tuple[str, ...] = ()
    #: Plugins whose every tool a profile selects (`browser`).
    tool_plugins: frozenset[str] = frozenset()
    profiles: tuple[str, ...] = ()
    read_only: bool = False

    @classmethod
    def parse(cls, plugins: str | None, tools: str | None, read_only: bool) -> Selection:
        """`--tools` items are profile names or globs; with neither `--tools` nor
        `--plugins` the default profile is offered."""
        items = _split(tools)
        if tools is None and plugins is None:
            items = [DEFAULT_PROFILE]
        named = [i for i in items if i in PROFILES]
        globs = [i for i in items if i not in PROFILES]
        for name in named:
            globs.extend(PROFILES[name].globs)
        return cls(
            plugins=frozenset(_split(plugins)),
            tool_globs=tuple(dict.fromkeys(globs)),
            tool_plugins=frozenset(p for n in named for p in PROFILES[n].plugins),
            profiles=tuple(named),
            read_only=read_only,
        )

    def picks(self, name: str, plugin: str) -> bool:
        """Whether `--tools` selects this tool (no `--tools`: every tool)."""
        if not self.tool_globs and not self.tool_plugins:
            return True
        return plugin in self.tool_plugins or any(
            fnmatch.fnmatchcase(name, g) for g in self.tool_globs
        )

    @property
    def described(self) -> str:
        """`--tools` as given, for messages: `coding`, `coding,git_blame`."""
        shown = [*self.profiles]
        covered = {g for p in self.profiles for g in PROFILES[p].globs}
        shown += [g for g in self.tool_globs if g not in covered]
        return ",".join(shown)


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def profile_of(name: str, plugin: str) -> str:
    """The narrowest profile that offers this tool (`all` when no other does)."""
    for profile, spec in PROFILES.items():
        if plugin in spec.plugins or any(fnmatch.fnmatchcase(name, g) for g in spec.globs):
            return profile
    return "all"


def widen_hint(selection: Selection, name: str, plugin: str) -> str:
    """How the user offers one more tool: `meith mcp --tools coding,git`."""
    wanted = profile_of(name, plugin)
    current = selection.described
    tools = f"{current},{wanted}" if current and wanted != "all" else wanted
    return f"the user can widen it: meith mcp --tools {tools} (or --tools all)"


#: The coding loop's tools, by plugin, in the order the instructions name them.
_LOOP: Final = (
    ("workspace_search", "files"),
    ("workspace_read_file", "files"),
    ("workspace_apply_patch", "files"),
    ("workspace_write_file", "files"),
    ("workspace_undo", "files"),
    ("workspace_list_files", "files"),
    ("run_command", "process"),
)


def instructions(selection: Selection, cwd: str | None) -> str:
    """The server's instructions: the workspace rule, the file tools, and how to widen."""
    parts = [
        "meith runs tools on this machine for the user, each call checked against the user's "
        "grants and audited; a privileged call may wait for the user's approval."
    ]
    where = f" ({cwd})" if cwd else ""
    parts.append(
        f"Workspace rule: relative paths start at the session's workspace{where}; reads reach "
        "the workspace and the directories the user granted, never secret files, and commands "
        "run confined to what the grant covers."
    )
    loop = [
        name
        for name, plugin in _LOOP
        if selection.picks(name, plugin) and (not selection.plugins or plugin in selection.plugins)
    ]
    if loop:
        parts.append(
            f"For code use {', '.join(loop)}: read a file before you patch it (pass its "
            "sha256 back as expectedSha256); workspace_undo takes a change back."
        )
    if selection.profiles or selection.tool_globs:
        others = "; ".join(f"{p}: {spec.about}" for p, spec in PROFILES.items())
        parts.append(
            f"This bridge offers the tools of --tools {selection.described}; meith has more "
            f"(profiles {others}). The user widens the list by starting the bridge with "
            "--tools PROFILE,… (e.g. meith mcp --tools coding,git) or --tools all."
        )
    return "\n".join(parts)
