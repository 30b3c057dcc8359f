"""`--net` values that do not say what they seem to (`any:80`, `[::1]8080`) are taken as
something else at grant time, instead of being refused."""

from __future__ import annotations

from functools import partial

from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab

MALFORMED = ("any:80", "[::1]8080", "127.0.0.1:", "*.")


def _grant(lab: Lab, *, values: tuple[str, ...]) -> Seen:
    from meith_core.policy.grants import standing_grant

    ws = lab.dir("net-values")
    accepted = []
    for value in values:
        try:
            grant = standing_grant("agent", ["starts-process"], cwd=str(ws), net=[value])
        except ValueError as exc:
            accepted.append(f"{value!r} refused ({exc})")
            continue
        accepted.append(f"{value!r} accepted as {list(grant.net)}")
    return Seen(any("accepted" in a for a in accepted), "; ".join(accepted))


ENTRY = Entry(
    id="network-malformed-grant",
    wall="network",
    attack="The user runs `meith grants add -c starts-process --cwd WS --net V` with a value "
    "that does not say what it seems to: " + ", ".join(f"`{v}`" for v in MALFORMED) + ".",
    assertion="each is an error at grant time, never a grant that means something else",
    control=partial(_grant, values=("127.0.0.1:8080",)),
    trick=partial(_grant, values=MALFORMED),
    needs=Needs(),
)
