"""A hook a git tool runs for a directory-confined grant writes outside the directory."""

from __future__ import annotations

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import staged
from meith_core.doctor.served import LabError

#: The hook says it ran (in a file of the repository's, which it may write), then writes
#: outside.
_HOOK = "echo ran >> hook-ran; echo planted > CANARY; true"


def _user(lab: Lab) -> Seen:
    repo, canary = staged(lab, _HOOK)
    lab.git(repo, "commit", "-q", "-m", "the user's")
    return Seen(canary.exists(), "the user's commit ran the hook, which wrote outside")


def _agent(lab: Lab) -> Seen:
    repo, canary = staged(lab, _HOOK)
    (repo / "hook-ran").touch()
    agent = lab.agent(repo.parent, "writes-files", "starts-process")
    agent.content("git_commit", {"cwd": str(repo), "message": "the agent's"})
    if not (repo / "hook-ran").read_text():
        raise LabError("the repository's hook did not run at all")
    return Seen(
        canary.exists(),
        "git_commit ran the hook; "
        + ("it wrote outside" if canary.exists() else "it could not write outside"),
    )


ENTRY = Entry(
    id="git-hook-confined",
    wall="git-tools",
    attack="An agent holding `writes-files` and `starts-process`, both `--cwd WS`, calls "
    "`git_commit` in a repository whose `pre-commit` hook writes OUTSIDE/ran.",
    assertion="the hook runs confined to WS: nothing is written outside",
    control=_user,
    trick=_agent,
    needs=Needs(plugins=("git",), programs=("git",), walls=("writes",)),
)
