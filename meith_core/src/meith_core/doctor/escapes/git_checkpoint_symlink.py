"""`.git/meith` planted as a link to a directory outside: a checkpoint's metadata write would
land there, replacing what is there."""

from __future__ import annotations

from pathlib import Path

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import repository


def _linked(lab: Lab) -> tuple[Path, Path]:
    repo = repository(lab, lab.dir("checkpoint") / "repo")
    outside = lab.dir("checkpoint", outside=True)
    (outside / "checkpoints.json").write_text("precious\n")
    (repo / ".git" / "meith").symlink_to(outside)
    return repo, outside


def _by_name(lab: Lab) -> Seen:
    repo, outside = _linked(lab)
    (repo / ".git" / "meith" / "checkpoints.json").write_text("replaced\n")
    changed = (outside / "checkpoints.json").read_text() != "precious\n"
    return Seen(changed, "a write by name through .git/meith replaced the file outside")


def _agent(lab: Lab) -> Seen:
    repo, outside = _linked(lab)
    agent = lab.agent(repo.parent, "writes-files")
    result = agent.call("git_checkpoint_create", {"cwd": str(repo)})
    touched = sorted(p.name for p in outside.iterdir()) != ["checkpoints.json"] or (
        (outside / "checkpoints.json").read_text() != "precious\n"
    )
    said = result.error.message[:200] if result.error else "created"
    return Seen(touched, f"git_checkpoint_create: {said}")


ENTRY = Entry(
    id="git-checkpoint-symlink",
    wall="git-tools",
    attack="A repository's `.git/meith` is a link to a directory OUTSIDE holding "
    "`checkpoints.json`; an agent holding `writes-files --cwd WS` calls `git_checkpoint_create`.",
    assertion="nothing outside is written or replaced (the metadata is never written through a link)",
    control=_by_name,
    trick=_agent,
    needs=Needs(plugins=("git",), programs=("git",)),
)
