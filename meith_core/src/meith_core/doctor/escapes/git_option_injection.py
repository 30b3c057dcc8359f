"""A path argument that looks like an option (`--output=FILE`) makes git write a file."""

from __future__ import annotations

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import repository


def _user(lab: Lab) -> Seen:
    repo = repository(lab, lab.dir("injection") / "repo")
    canary = lab.dir("injection", outside=True) / "written"
    lab.git(repo, "diff", f"--output={canary}")
    return Seen(canary.exists(), "the user's `git diff --output=FILE` wrote the file")


def _agent(lab: Lab) -> Seen:
    repo = repository(lab, lab.dir("injection") / "repo")
    canary = lab.dir("injection", outside=True) / "written"
    agent = lab.agent(repo.parent, "none")
    said = []
    for tool in ("git_diff", "git_log"):
        result = agent.call(tool, {"cwd": str(repo), "paths": [f"--output={canary}"]})
        said.append(f"{tool} ok={result.ok}")
    return Seen(canary.exists(), ", ".join(said))


ENTRY = Entry(
    id="git-option-injection",
    wall="git-tools",
    attack="An agent with no grant calls `git_diff` and `git_log` with `paths: "
    '["--output=OUTSIDE/written"]`.',
    assertion="nothing is written (caller values are paths, never options)",
    control=_user,
    trick=_agent,
    needs=Needs(plugins=("git",), programs=("git",)),
)
