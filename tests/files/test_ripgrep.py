"""workspace_list_files and workspace_search over real trees: .gitignore and the default
ignores, limits, globs, regular expressions, context lines and the 1 MiB skip."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from meith_core import ErrorCode
from meith_core.testing import MeithHarness
from meith_plugins_files import rg_run, ripgrep
from tests.files.conftest import fails, ok

pytestmark = pytest.mark.meith_plugin("files")


def tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def listed(meith: MeithHarness, ws: Path, **args: object) -> list[str]:
    return ok(meith, "workspace_list_files", {"cwd": str(ws), **args})["files"]


def search(meith: MeithHarness, ws: Path, query: str, **args: object) -> dict:
    return ok(meith, "workspace_search", {"cwd": str(ws), "query": query, **args})


@pytest.fixture
def rg_runs(monkeypatch: pytest.MonkeyPatch) -> list[rg_run.Run]:
    """Every rg run the test starts, kept so the test can look at its process afterwards."""
    runs: list[rg_run.Run] = []
    real_feed = rg_run.Run.feed

    async def spy(self: rg_run.Run, consume: Callable[[bytes], bool]) -> None:
        runs.append(self)
        await real_feed(self, consume)

    monkeypatch.setattr(rg_run.Run, "feed", spy)
    return runs


def test_listing_honours_gitignore_and_the_default_ignores(files: MeithHarness, ws: Path) -> None:
    tree(
        ws,
        {
            ".gitignore": "*.log\nbuild/\n",
            "src/app.py": "x",
            "app.log": "x",
            "build/out.js": "x",
            "node_modules/pkg/index.js": "x",
            "dist/bundle.js": "x",
            ".cache/c": "x",
            "coverage/lcov": "x",
            ".github/workflows/ci.yml": "x",
        },
    )
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    assert listed(files, ws) == [".github/workflows/ci.yml", ".gitignore", "src/app.py"]
    everything = listed(files, ws, includeIgnored=True)
    assert "app.log" in everything
    assert "node_modules/pkg/index.js" in everything
    assert not any(p.startswith(".git/") for p in everything)  # git's own files never


def test_gitignore_applies_outside_a_git_repository_too(files: MeithHarness, ws: Path) -> None:
    tree(ws, {".gitignore": "secret.env\n", "a.txt": "x", "secret.env": "x"})
    assert listed(files, ws) == [".gitignore", "a.txt"]


def test_listing_a_subdirectory_with_a_glob(files: MeithHarness, ws: Path) -> None:
    tree(ws, {"pkg/a.py": "", "pkg/b.txt": "", "pkg/sub/c.py": "", "other/d.py": ""})
    got = ok(files, "workspace_list_files", {"cwd": str(ws), "path": "pkg", "glob": "*.py"})
    assert got["files"] == ["pkg/a.py", "pkg/sub/c.py"]
    assert got["root"] == str(ws)


def test_the_listing_limit_truncates_and_says_so(files: MeithHarness, ws: Path) -> None:
    tree(ws, {f"f{i:02}.txt": "" for i in range(30)})
    got = ok(files, "workspace_list_files", {"cwd": str(ws), "limit": 10})
    assert got["count"] == 10
    assert got["truncated"] is True
    assert fails(files, "workspace_list_files", {"cwd": str(ws), "limit": 20_001}).code == (
        ErrorCode.VALIDATION_ERROR
    )


@pytest.mark.slow
def test_a_directory_of_100000_files_lists_the_first_5000_then_20000(
    files: MeithHarness, ws: Path
) -> None:
    many = ws / "many"
    many.mkdir()
    fd = os.open(many, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(100_000):
            os.close(os.open(f"{i:06}", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    default = ok(files, "workspace_list_files", {"cwd": str(ws)})
    assert (default["count"], default["truncated"]) == (5000, True)
    most = ok(files, "workspace_list_files", {"cwd": str(ws), "limit": 20_000})
    assert (most["count"], most["truncated"]) == (20_000, True)
    assert most["files"] == sorted(most["files"])
    hits = search(files, ws, "x", path="many")
    assert hits["matches"] == []


def test_search_finds_literal_text_with_line_and_column(files: MeithHarness, ws: Path) -> None:
    tree(ws, {"a.py": "x = 1\nprint(x.y)\n", "b.py": "nothing\n"})
    got = search(files, ws, "x.y")
    assert got["matches"] == [{"path": "a.py", "line": 2, "column": 7, "text": "print(x.y)"}]


def test_search_is_case_insensitive_unless_asked(files: MeithHarness, ws: Path) -> None:
    tree(ws, {"a.txt": "Needle\nneedle\n"})
    assert search(files, ws, "needle")["count"] == 2
    assert [m["line"] for m in search(files, ws, "needle", caseSensitive=True)["matches"]] == [2]


def test_search_with_a_regular_expression(files: MeithHarness, ws: Path) -> None:
    tree(ws, {"a.py": "def alpha():\n    pass\ndef beta(x):\n"})
    got = search(files, ws, r"^def \w+\(", regex=True)
    assert [m["line"] for m in got["matches"]] == [1, 3]
    assert search(files, ws, r"^def \w+\(")["count"] == 0  # literal by default


def test_a_bad_regular_expression_is_a_validation_error(files: MeithHarness, ws: Path) -> None:
    tree(ws, {"a.txt": "x\n"})
    err = fails(files, "workspace_search", {"cwd": str(ws), "query": "(unclosed", "regex": True})
    assert err.code == ErrorCode.VALIDATION_ERROR
    assert "not a valid regular expression" in err.message


def test_a_catastrophic_pattern_runs_in_linear_time(files: MeithHarness, ws: Path) -> None:
    tree(ws, {"a.txt": "a" * 5000 + "!\n"})
    got = search(files, ws, "^(a+)+$", regex=True)
    assert got["count"] == 0


def test_context_lines_come_with_each_hit(files: MeithHarness, ws: Path) -> None:
    tree(ws, {"a.txt": "1\n2\nhit\n4\n5\n"})
    (m,) = search(files, ws, "hit", contextLines=2)["matches"]
    assert (m["before"], m["after"]) == (["1", "2"], ["4", "5"])


def test_overlapping_context_gives_each_line_once(files: MeithHarness, ws: Path) -> None:
    tree(ws, {"a.txt": "1\nhit a\n3\nhit b\n5\n6\n7\n8\n9\nhit c\n11\n"})
    got = search(files, ws, "hit", contextLines=2)
    a, b, c = got["matches"]
    assert (a["before"], a["after"]) == (["1"], ["3"])
    assert (b["before"], b["after"]) == ([], ["5", "6"])
    assert (c["before"], c["after"]) == (["8", "9"], ["11"])
    text = files.call("workspace_search", {"cwd": str(ws), "query": "hit", "contextLines": 2}).text
    assert text.splitlines() == [
        "a.txt-1- 1",
        "a.txt:2:1: hit a",
        "a.txt-3- 3",
        "a.txt:4:1: hit b",
        "a.txt-5- 5",
        "a.txt-6- 6",
        "--",
        "a.txt-8- 8",
        "a.txt-9- 9",
        "a.txt:10:1: hit c",
        "a.txt-11- 11",
    ]


def test_hits_in_hostile_names_and_text_keep_their_path_line_and_column(
    files: MeithHarness, ws: Path
) -> None:
    """rg's line output is split by the plugin: a name with a newline (or a colon and a dash,
    rg's own separators), text that is not UTF-8, a multi-byte column, context at each file's
    edge, and more output than one read all land in the hit they belong to."""
    (ws / "odd\nname:1:2-3.txt").write_text("first\nneedle here\nlast\n")
    (ws / "bytes.txt").write_bytes(b"\x80\x81 needle\n")
    (ws / "wide.txt").write_text("\u00e9\u00e9\u00e9 needle\n")
    (ws / "many.txt").write_text("".join(f"{i:05d} needle {'x' * 200}\n" for i in range(800)))
    got = search(files, ws, "needle", contextLines=1, limit=5000)
    by_path: dict[str, list[dict]] = {}
    for m in got["matches"]:
        by_path.setdefault(m["path"], []).append(m)
    assert sorted(by_path) == ["bytes.txt", "many.txt", "odd\nname:1:2-3.txt", "wide.txt"]
    (odd,) = by_path["odd\nname:1:2-3.txt"]
    assert (odd["line"], odd["column"], odd["text"]) == (2, 1, "needle here")
    assert (odd["before"], odd["after"]) == (["first"], ["last"])
    (raw,) = by_path["bytes.txt"]
    assert (raw["column"], raw["text"]) == (4, "\ufffd\ufffd needle")
    assert (raw["before"], raw["after"]) == ([], [])
    (wide,) = by_path["wide.txt"]
    assert wide["column"] == 5  # characters, not the 8 bytes before it
    lines = [m["line"] for m in by_path["many.txt"]]
    assert lines == list(range(1, 801))  # 170 KB of output, read in several pieces
    assert all(m["text"].startswith(f"{m['line'] - 1:05d} needle") for m in by_path["many.txt"])


def test_files_over_1_mib_are_skipped(files: MeithHarness, ws: Path) -> None:
    tree(ws, {"big.txt": "needle\n" + "x" * (1024 * 1024 + 10), "small.txt": "needle\n"})
    assert [m["path"] for m in search(files, ws, "needle")["matches"]] == ["small.txt"]


def test_the_search_limit_truncates_and_says_so(files: MeithHarness, ws: Path) -> None:
    tree(ws, {"a.txt": "hit\n" * 50})
    got = search(files, ws, "hit", limit=7)
    assert (got["count"], got["truncated"]) == (7, True)
    assert search(files, ws, "hit", limit=50)["truncated"] is False


def test_search_honours_gitignore_and_glob(files: MeithHarness, ws: Path) -> None:
    tree(
        ws, {".gitignore": "gen/\n", "gen/a.py": "hit\n", "src/b.py": "hit\n", "src/c.md": "hit\n"}
    )
    assert sorted(m["path"] for m in search(files, ws, "hit")["matches"]) == [
        "src/b.py",
        "src/c.md",
    ]
    assert [m["path"] for m in search(files, ws, "hit", glob="*.py")["matches"]] == ["src/b.py"]


def test_a_query_that_looks_like_an_option_is_searched_for(files: MeithHarness, ws: Path) -> None:
    tree(ws, {"a.txt": "--pre=sh\n"})
    assert search(files, ws, "--pre=sh")["count"] == 1


def test_search_in_one_file_given_as_path(files: MeithHarness, ws: Path) -> None:
    tree(ws, {"a/x.py": "hit\n", "a/y.py": "hit\n"})
    got = search(files, ws, "hit", path="a/y.py")
    assert [(m["path"], m["line"]) for m in got["matches"]] == [("a/y.py", 1)]


def test_a_fifo_named_as_the_search_path_is_refused(files: MeithHarness, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    err = fails(files, "workspace_search", {"cwd": str(ws), "query": "x", "path": "pipe"})
    assert err.details == {"reason": "not searchable"}


@pytest.mark.anyio
async def test_rg_is_killed_when_the_search_is_cancelled(
    ws: Path, rg_runs: list[rg_run.Run]
) -> None:
    import anyio

    os.mkfifo(ws / "pipe")  # rg blocks reading it: the call can only end by cancellation
    rg = rg_run.locate()
    assert rg is not None
    argv = ripgrep.search_argv(
        rg, ripgrep.Walk(), "./pipe", query="x", regex=False, case_sensitive=False, context=0
    )
    with anyio.move_on_after(0.5):
        await ripgrep.search(rg, str(ws), argv, 10, 0)
    (run,) = rg_runs
    assert run.proc is not None
    assert run.proc.returncode is not None  # killed and reaped, not left behind


@pytest.mark.slow
@pytest.mark.anyio
async def test_rg_stopped_at_the_limit_is_killed_and_reaped(
    ws: Path, rg_runs: list[rg_run.Run]
) -> None:
    """A listing or search that has its `limit` stops reading and kills rg; rg is reaped
    before the call answers, and what was read before the stop is the answer."""

    tree(ws, {f"d{i:03}/f{j:02}.txt": "hit\n" * 50 for i in range(100) for j in range(20)})
    rg = rg_run.locate()
    assert rg is not None
    names, cut = await ripgrep.list_files(rg, str(ws), ripgrep.Walk(), ".", 7)
    argv = ripgrep.search_argv(
        rg, ripgrep.Walk(), ".", query="hit", regex=False, case_sensitive=True, context=0
    )
    hits, hits_cut = await ripgrep.search(rg, str(ws), argv, 5, 0)
    assert (len(names), cut) == (7, True)
    assert (len(hits), hits_cut) == (5, True)
    assert all(h.text == "hit" for h in hits)
    assert len(rg_runs) == 2
    for run in rg_runs:
        assert run.stopped_early
        assert run.proc is not None
        assert run.proc.returncode is not None  # reaped, not left behind


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_failure_while_reading_rg_output_kills_rg(ws: Path) -> None:

    tree(ws, {f"d{i:03}/f{j:02}.txt": "" for i in range(50) for j in range(20)})
    rg = rg_run.locate()
    assert rg is not None
    run = rg_run.Run(ripgrep.files_argv(rg, ripgrep.Walk(), "."), str(ws))

    def consume(chunk: bytes) -> bool:
        raise RuntimeError("bad read")

    with pytest.raises(RuntimeError, match="bad read"):
        await run.feed(consume)
    assert run.proc is not None
    assert run.proc.returncode is not None


def test_a_ripgrep_config_in_the_environment_is_ignored(
    files: MeithHarness, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "pre-ran"
    script = tmp_path / "pre.sh"
    script.write_text(f'#!/bin/sh\ntouch {marker}\ncat "$1"\n')
    script.chmod(0o755)
    config = tmp_path / "rgrc"
    config.write_text(f"--pre={script}\n")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(config))
    tree(ws, {"a.txt": "hit\n"})
    assert search(files, ws, "hit")["count"] == 1
    assert not marker.exists()  # --pre would run a program per file


def test_a_search_result_is_what_its_declared_output_schema_says(
    files: MeithHarness, ws: Path
) -> None:
    """The tool writes its result as plain JSON (no model per hit): with and without context
    lines, it validates as the SearchResult the descriptor declares, and keys no hit has are
    left out."""
    from meith_plugins_files.models import SearchResult

    tree(ws, {"a.py": "one\nhit here\nthree\n", "b.py": "hit\n"})
    plain = search(files, ws, "hit")
    assert SearchResult.model_validate(plain).count == 2
    assert all(set(m) == {"path", "line", "column", "text"} for m in plain["matches"])
    around = search(files, ws, "hit here", contextLines=1)
    (m,) = SearchResult.model_validate(around).matches
    assert (m.before, m.after) == (["one"], ["three"])
