"""A `.git` file planted in the agent's directory names another repository's gitdir: the
git tools would then write the other repository's index and refs."""

from __future__ import annotations

from pathlib import Path

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import repository


def _pointed(lab: Lab) -> tuple[Path, Path, bytes]:
    victim = repository(lab, lab.dir("victim", outside=True) / "victim", **{"x.txt": "victim\n"})
    attacker = lab.dir("foreign")
    (attacker / ".git").write_text(f"gitdir: {victim / '.git'}\n")
    (attacker / "x.txt").write_text("attacker data\n")
    return victim, attacker, (victim / ".git" / "index").read_bytes()


def _user(lab: Lab) -> Seen:
    victim, attacker, before = _pointed(lab)
    lab.git(attacker, "add", "x.txt")
    changed = (victim / ".git" / "index").read_bytes() != before
    return Seen(changed, "the user's `git add` there wrote the other repository's index")


def _agent(lab: Lab) -> Seen:
    victim, attacker, before = _pointed(lab)
    agent = lab.agent(attacker, "writes-files")
    result = agent.call("git_stage", {"cwd": str(attacker), "paths": ["x.txt"]})
    changed = (victim / ".git" / "index").read_bytes() != before
    message = result.error.message if result.error else "ok"
    return Seen(changed, f"git_stage: {message[:300]}")


ENTRY = Entry(
    id="git-foreign-gitdir",
    wall="git-tools",
    attack="An agent holding `writes-files --cwd WS` writes `WS/.git` as `gitdir: "
    "VICTIM/.git` (a repository outside WS) and calls `git_stage` in WS.",
    assertion="the repository is refused: the victim's index is unchanged",
    control=_user,
    trick=_agent,
    needs=Needs(plugins=("git",), programs=("git",)),
)
