"""A repository's own `core.hooksPath` names hooks outside it, which a git tool runs."""

from __future__ import annotations

from pathlib import Path

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import hook, staged


def _planted(lab: Lab) -> tuple[Path, Path]:
    repo, canary = staged(lab, "true")
    elsewhere = lab.dir("hooks-path", outside=True)
    hook(elsewhere / "pre-commit", f"touch {canary}")
    lab.git(repo, "config", "core.hooksPath", str(elsewhere))
    return repo, canary


def _user(lab: Lab) -> Seen:
    repo, canary = _planted(lab)
    lab.git(repo, "commit", "-q", "-m", "the user's")
    return Seen(canary.exists(), "the user's commit ran the hook core.hooksPath names")


def _agent(lab: Lab) -> Seen:
    repo, canary = _planted(lab)
    agent = lab.agent(repo.parent, "writes-files", "starts-process")
    agent.content("git_commit", {"cwd": str(repo), "message": "the agent's"})
    return Seen(
        canary.exists(),
        "git_commit committed; " + ("the hook ran" if canary.exists() else "the hook did not run"),
    )


ENTRY = Entry(
    id="git-hooks-path-outside",
    wall="git-tools",
    attack="A repository's config says `core.hooksPath = ELSEWHERE`, whose `pre-commit` "
    "touches OUTSIDE/ran; an agent holding `writes-files` and `starts-process` over WS calls "
    "`git_commit`.",
    assertion="the hook does not run (only the repository's own hooks directory or the user's "
    "global one count)",
    control=_user,
    trick=_agent,
    needs=Needs(plugins=("git",), programs=("git",)),
)
