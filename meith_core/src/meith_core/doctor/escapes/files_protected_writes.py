"""The files tools write where no agent's tool may: a repository's hooks and a meith home
inside the granted directory."""

from __future__ import annotations

from pathlib import Path

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import repository


def _targets(lab: Lab) -> list[Path]:
    ws = lab.dir("protected")
    repo = repository(lab, ws / "repo")
    return [repo / ".git" / "hooks" / "pre-commit", lab.runtime.home.root / "doctor-planted.json"]


def _by_name(lab: Lab) -> Seen:
    written = []
    for target in _targets(lab):
        target.write_text("#!/bin/sh\ntrue\n")
        written.append(str(target))
        target.unlink()
    return Seen(len(written) == 2, f"the user writes {written}")


def _agent(lab: Lab) -> Seen:
    targets = _targets(lab)
    # A grant over the lab's whole directory: it holds the workspace and the runtime's home.
    agent = lab.agent(lab.root, "writes-files")
    said = []
    for target in targets:
        result = agent.call(
            "workspace_write_file",
            {
                "cwd": str(lab.root),
                "path": str(target.relative_to(lab.root)),
                "content": "#!/bin/sh\ntrue\n",
            },
        )
        said.append(f"{target.name}: {result.error.message[:120] if result.error else 'written'}")
    written = [t for t in targets if t.exists()]
    return Seen(bool(written), "; ".join(said))


ENTRY = Entry(
    id="files-protected-writes",
    wall="files-tools",
    attack="An agent holding `writes-files --cwd DIR`, where DIR holds a repository and the "
    "runtime's MEITH_HOME, calls `workspace_write_file` on `repo/.git/hooks/pre-commit` and "
    "on a file in MEITH_HOME.",
    assertion="both are refused (git metadata and every meith home are never written)",
    control=_by_name,
    trick=_agent,
    needs=Needs(plugins=("files",), programs=("git",)),
)
