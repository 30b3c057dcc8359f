"""The live audit segment is deleted under the runtime (what a files-tool race did to a
workspace holding MEITH_HOME): the records in it are gone, and the chain goes on as if."""

from __future__ import annotations

import contextlib
import json

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab
from meith_core.doctor.served import LabError, Served


def _privileged_call(lab: Lab, served: Served, marker: str) -> None:
    from meith_core.host.trust_edits import TrustEditor
    from meith_core.policy.grants import new_grant

    scope = lab.dir("trail-cut")
    TrustEditor(served.home, "meith doctor (its own runtime)").add_grant(
        new_grant("cli", ["starts-process"], cwd_prefix=str(scope), source="standing")
    )
    with served.client("cli", cwd=str(scope)) as client:
        result = client.call("run_command", {"cwd": str(scope), "shell": f"echo {marker}"})
    if not result.ok:
        raise LabError(f"run_command failed: {result.to_wire()}")


def _kinds(served: Served) -> list[str]:
    """The kinds of the records the live segment holds (what the runtime said of the trail)."""
    kinds = []
    for line in served.home.audit_path.read_text(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            kinds.append(str(json.loads(line).get("kind", "")))
    return kinds


def _deleted(lab: Lab) -> Seen:
    with lab.private_runtime() as served:
        _privileged_call(lab, served, "first")
        served.home.audit_path.unlink()
        gone = not served.home.audit_path.exists()
    return Seen(gone, "the live segment, with the privileged call's records, was deleted")


def _verified(lab: Lab) -> Seen:
    from meith_core.audit.verify import verify

    with lab.private_runtime() as served:
        _privileged_call(lab, served, "first")
        served.home.audit_path.unlink()
        _privileged_call(lab, served, "second")
        report = verify(served.home.audit_path)
        noticed = [k for k in _kinds(served) if "vanish" in k or "segment" in k]
    said = "OK" if report.ok else f"BROKEN ({report.problems[0]['problem']})"
    return Seen(
        report.ok and not noticed,
        f"after the deletion, meith audit verify says {said}; "
        + (f"the trail records it ({noticed})" if noticed else "no record says a segment vanished"),
    )


ENTRY = Entry(
    id="audit-segment-vanished",
    wall="audit",
    attack="The local user's privileged call is recorded; the live segment `audit.jsonl` is "
    "then deleted under the running runtime, and the next call recorded.",
    assertion="the runtime records that the segment vanished and `meith audit verify` fails",
    control=_deleted,
    trick=_verified,
    needs=Needs(plugins=("process",)),
)
