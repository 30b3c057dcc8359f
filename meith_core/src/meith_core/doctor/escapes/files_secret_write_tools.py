"""An agent's write tools show a secret file's content: in a write's diff, a dry run's diff,
an undo, or a "not found" answer to a guess."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.probes import leaks


def _probe(lab: Lab, *, caller: str) -> Seen:
    # A workspace of its own holding a copy of the secret at a secret path, so that a write
    # the wall lets through changes nothing the other entries read.
    home = lab.dir("write-tools")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text((lab.home / ".ssh" / "id_ed25519").read_text())
    agent = lab.agent(home, "writes-files", caller=caller)
    at = {"cwd": str(home), "path": ".ssh/id_ed25519"}
    guess = {"oldText": lab.secret[:-1] + "?", "newText": "x"}
    return leaks(
        agent,
        lab.secret,
        [
            (
                "workspace_apply_patch",
                {**at, "edits": [{"oldText": "KEY", "newText": "K"}], "dryRun": True},
            ),
            ("workspace_apply_patch", {**at, "edits": [guess]}),
            ("workspace_write_file", {**at, "content": "replaced\n"}),
            ("workspace_undo", {**at, "force": True}),
        ],
    )


ENTRY = Entry(
    id="files-secret-write-tools",
    wall="secrets",
    attack="An agent holding `writes-files` over a directory with `.ssh/id_ed25519` calls "
    "`workspace_apply_patch {dryRun: true}`, a patch with a wrong guess, "
    "`workspace_write_file` and `workspace_undo` on it.",
    assertion="no answer shows the key (the secret-path rule is the write tools' too)",
    control=partial(_probe, caller="cli"),
    trick=partial(_probe, caller="agent"),
    needs=Needs(plugins=("files",)),
)
