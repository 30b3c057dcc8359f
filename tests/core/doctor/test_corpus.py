"""The escape corpus in the suite: every entry played against a runtime of the doctor's own,
as `meith doctor --walls` plays it on a user's host. Each entry is held or skipped with the
reason this host gives; a breached entry fails with its evidence, and so does an entry whose
control did not work (it would show nothing)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from meith_core.doctor.corpus import Entry, entries
from meith_core.doctor.lab import Lab
from meith_core.doctor.runner import run_entry

ENTRIES = entries()

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    with Lab.open() as opened:
        yield opened


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_the_wall_holds(lab: Lab, entry: Entry) -> None:
    result = run_entry(lab, entry)
    if result.result == "breached":
        pytest.fail(
            f"{entry.id} ({entry.wall}) was breached.\nattack: {entry.attack}\n"
            f"held would mean: {entry.assertion}\nevidence: {result.why}",
            pytrace=False,
        )
    assert not result.inconclusive, result.why
    if result.result == "skipped":
        pytest.skip(result.why)
