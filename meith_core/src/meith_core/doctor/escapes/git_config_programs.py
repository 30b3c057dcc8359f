"""A hostile repository's config names programs (`core.fsmonitor`, `diff.external`, a
`filter` and a `textconv` by attributes) that the read tools would run."""

from __future__ import annotations

from pathlib import Path

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import hook, repository


def _hostile(lab: Lab) -> tuple[Path, Path]:
    ws, out = lab.dir("config-programs"), lab.dir("config-programs", outside=True)
    canary = out / "ran"
    repo = repository(
        lab, ws / "repo", **{"a.txt": "aaaa\n", ".gitattributes": "*.txt diff=evil filter=evil\n"}
    )
    program = out / "program.sh"
    hook(program, f'touch {canary}\ncat "$1" 2>/dev/null\nexit 0')
    with open(repo / ".git" / "config", "a") as fh:
        fh.write(
            f"[core]\n\tfsmonitor = {program}\n[diff]\n\texternal = {program}\n"
            f'[diff "evil"]\n\ttextconv = {program}\n[filter "evil"]\n\tclean = {program}\n'
        )
    (repo / "a.txt").write_text("bbbb\n")
    return repo, canary


def _user(lab: Lab) -> Seen:
    repo, canary = _hostile(lab)
    lab.git(repo, "status")
    lab.git(repo, "diff")
    return Seen(canary.exists(), "the user's git status and diff ran the repository's program")


def _agent(lab: Lab) -> Seen:
    repo, canary = _hostile(lab)
    agent = lab.agent(repo.parent, "none")
    said = []
    for tool, extra in (
        ("git_status", {}),
        ("git_diff", {"includePatches": True}),
        ("git_log", {"limit": 3}),
    ):
        result = agent.call(tool, {"cwd": str(repo), **extra})
        said.append(f"{tool} ok={result.ok}")
    return Seen(canary.exists(), ", ".join(said))


ENTRY = Entry(
    id="git-config-programs",
    wall="git-tools",
    attack="A repository's own config sets `core.fsmonitor`, `diff.external`, a `textconv` "
    "and a `filter` to a program that touches OUTSIDE/ran; an agent with no grant calls "
    "`git_status`, `git_diff` and `git_log` there.",
    assertion="no program of the repository's runs",
    control=_user,
    trick=_agent,
    needs=Needs(plugins=("git",), programs=("git",)),
)
