"""docs/walls-card.md, the score card of the machine CI runs on, is current: it has a row for
every entry of the escape corpus and none for an entry that no longer exists (`nox -s
walls_card` writes it)."""

from __future__ import annotations

import re
from pathlib import Path

from meith_core.doctor.corpus import WALLS, entries

CARD = Path(__file__).resolve().parents[2] / "docs" / "walls-card.md"
ROW = re.compile(r"^\| `([a-z0-9-]+)` \| ([a-z-]+) \| (held|breached|skipped)", re.M)


def test_the_card_names_every_entry_and_only_those() -> None:
    rows = {m.group(1): m.group(2) for m in ROW.finditer(CARD.read_text(encoding="utf-8"))}
    corpus = {e.id: e.wall for e in entries()}
    missing = sorted(set(corpus) - set(rows))
    stale = sorted(set(rows) - set(corpus))
    assert not missing, f"docs/walls-card.md lacks {missing}: run nox -s walls_card"
    assert not stale, f"docs/walls-card.md names entries that no longer exist: {stale}"
    assert rows == corpus, "an entry moved to another wall: run nox -s walls_card"
    assert set(rows.values()) <= set(WALLS)


def test_the_readme_and_the_walls_page_link_the_card() -> None:
    root = CARD.parents[1]
    assert "(docs/walls-card.md)" in (root / "README.md").read_text(encoding="utf-8")
    assert "(walls-card.md)" in (root / "docs" / "security-walls.md").read_text(encoding="utf-8")
