"""A caller without `starts-process` has a repository's hook run by a git tool."""

from __future__ import annotations

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import staged


def _user(lab: Lab) -> Seen:
    repo, canary = staged(lab, "touch CANARY")
    lab.git(repo, "commit", "-q", "-m", "the user's")
    return Seen(canary.exists(), "the user's commit ran the hook")


def _agent(lab: Lab) -> Seen:
    repo, canary = staged(lab, "touch CANARY")
    agent = lab.agent(repo.parent, "writes-files")
    agent.content("git_commit", {"cwd": str(repo), "message": "the agent's"})
    return Seen(
        canary.exists(),
        "git_commit committed; " + ("the hook ran" if canary.exists() else "the hook did not run"),
    )


ENTRY = Entry(
    id="git-hooks-need-starts-process",
    wall="git-tools",
    attack="An agent holding only `writes-files --cwd WS` calls `git_commit` in a repository "
    "whose `pre-commit` hook touches OUTSIDE/ran.",
    assertion="the hook does not run (hooks are code: they need starts-process)",
    control=_user,
    trick=_agent,
    needs=Needs(plugins=("git",), programs=("git",)),
)
