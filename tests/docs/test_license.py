"""The license the metadata names is the one shipped: every distribution's pyproject.toml says
MIT, and the repository and each distribution (whose wheel carries it) hold the same LICENSE."""

from __future__ import annotations

import tomllib

from tests.readme import ROOT

DISTRIBUTIONS = [
    "meith_core",
    "meith_plugins_git",
    "meith_plugins_process",
    "meith_plugins_browser",
]


def test_every_distribution_ships_the_mit_license_its_metadata_names() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n\nCopyright (c) 2026 the meith authors\n")
    for name in DISTRIBUTIONS:
        project = tomllib.loads((ROOT / name / "pyproject.toml").read_text())["project"]
        assert project["license"] == "MIT", name
        assert (ROOT / name / "LICENSE").read_text() == text, name
