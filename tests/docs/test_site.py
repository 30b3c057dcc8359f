"""The documentation site builds with `mkdocs build --strict` (`nox -s docs` does it in CI; here
where MkDocs is installed, as in the dev venv of `uv sync`), and its anchors are GitHub's."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.test_markdown_links import anchors
from tests.docs.test_markdown_links import slug as github_slug
from tests.readme import ROOT

pytest.importorskip("mkdocs", reason="MkDocs is not installed here (nox -s docs builds the site)")


def _hook():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("docs_site", ROOT / "scripts" / "docs_site.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_site_anchors_are_the_ones_github_makes() -> None:
    slug = _hook().slug
    headings = [
        heading
        for page in (*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md")
        for heading in anchors(page)
    ]
    assert "agent-extensions-protocol-1" in headings
    for text in ("Agent extensions (protocol 1)", "CLI reference and exit codes", "meith mcp: the bridge",
                 "Files under MEITH_HOME (default ~/.meith)", "a — b"):  # fmt: skip
        assert slug(text) == github_slug(text), text


@pytest.mark.slow
def test_mkdocs_build_strict_passes(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "security" / "index.html").exists()
    # The README is the home page, and its links into docs/ are the site's own.
    home = (tmp_path / "site" / "index.html").read_text()
    assert 'href="python/"' in home
    assert 'href="tools/browser/#getting-a-browser"' in home
