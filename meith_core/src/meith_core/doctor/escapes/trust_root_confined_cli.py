"""A confined process runs `meith grants add` on the runtime's home: the trust root edited
from inside."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.served import meith_command


def _add(lab: Lab, *, confined: bool) -> Seen:
    home = lab.runtime.home
    home.grants_path.touch()
    before = home.grants_path.read_text()
    line = (
        f"MEITH_HOME={home.root} {' '.join(meith_command())} grants add --caller agent "
        "--agent doctor-nobody -c writes-files; echo exit:$?"
    )
    if confined:
        said = lab.agent(lab.dir("grants-add")).run(line)["stdout"]
    else:
        said = lab.sh(line, lab.dir("grants-add")).stdout
    added = "doctor-nobody" in home.grants_path.read_text() and "doctor-nobody" not in before
    if added:
        from meith_core.host.trust_edits import TrustEditor
        from meith_core.policy.grants import StandingGrants

        editor = TrustEditor(home, "meith doctor (its own runtime)")
        for grant in StandingGrants(home.grants_path).current():
            if grant.agent == "doctor-nobody":
                editor.revoke_grant(grant.id)
    return Seen(added, said.strip()[-300:])


ENTRY = Entry(
    id="trust-root-confined-cli",
    wall="trust-root",
    attack="An agent holding `starts-process --cwd WS` runs `MEITH_HOME=HOME meith grants add "
    "--caller agent -c writes-files`.",
    assertion="no grant is added (every meith home is out of reach)",
    control=partial(_add, confined=False),
    trick=partial(_add, confined=True),
    needs=Needs(plugins=("process",), walls=("writes",)),
)
