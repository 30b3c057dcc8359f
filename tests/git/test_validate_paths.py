"""Path containment: caller paths must resolve inside the work tree, component by component."""

from __future__ import annotations

import pytest

from tests.git.support import call_err, call_ok

pytestmark = pytest.mark.anyio


@pytest.fixture
def setup(make_repo, tmp_path):
    repo = make_repo(files={"a.txt": "a\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (repo / "escape").symlink_to(outside, target_is_directory=True)
    return repo, outside


def bad_paths(outside):
    return [
        "../../etc/passwd",
        "../outside/secret.txt",
        "/etc/passwd",
        str(outside / "secret.txt"),
        "escape/secret.txt",  # a symlinked directory that leads out
        "escape/../../outside/secret.txt",
        "a.txt\0../../etc/passwd",
        ".git/config",
        ".git",
        "sub/.GIT/hooks/pre-commit",
    ]


CALLS = [
    ("git_stage", lambda p: {"paths": [p]}),
    ("git_unstage", lambda p: {"paths": [p]}),
    ("git_restore", lambda p: {"paths": ["a.txt", p], "confirm": True}),
    ("git_diff", lambda p: {"path": p}),
    ("git_log", lambda p: {"path": p}),
    ("git_blame", lambda p: {"path": p}),
]


@pytest.mark.parametrize(("tool", "make_args"), CALLS, ids=[c[0] for c in CALLS])
async def test_paths_outside_the_work_tree_are_validation_errors(git_rt, setup, tool, make_args):
    repo, outside = setup
    (repo / "a.txt").write_text("changed\n")
    for bad in bad_paths(outside):
        code, message = await call_err(git_rt, tool, {"cwd": str(repo), **make_args(bad)})
        assert code == "VALIDATION_ERROR", (tool, bad, message)
    # Nothing happened: the refused call did not run even for its valid paths.
    assert (repo / "a.txt").read_text() == "changed\n"
    assert (outside / "secret.txt").read_text() == "secret\n"


async def test_a_symlink_itself_is_staged_as_a_link_never_followed(git_rt, setup, sh):
    repo, outside = setup
    (repo / "link-to-secret").symlink_to(outside / "secret.txt")
    status = await call_ok(git_rt, "git_stage", {"cwd": str(repo), "paths": ["link-to-secret"]})
    assert [f["path"] for f in status["staged"]] == ["link-to-secret"]
    mode = sh(repo, "ls-files", "-s", "link-to-secret").split()[0]
    assert mode == "120000"
    await call_ok(
        git_rt,
        "git_restore",
        {"cwd": str(repo), "paths": ["link-to-secret"], "target": "both", "confirm": True},
    )
    assert not (repo / "link-to-secret").is_symlink()
    assert (outside / "secret.txt").read_text() == "secret\n"


async def test_a_nul_byte_in_cwd_is_a_validation_error(git_rt, make_repo):
    repo = make_repo()
    code, _ = await call_err(git_rt, "git_status", {"cwd": f"{repo}\0/../"})
    assert code == "VALIDATION_ERROR"


async def test_paths_may_name_directories_inside_the_tree(git_rt, make_repo):
    repo = make_repo(files={"d/a.txt": "a\n", "d/b.txt": "b\n"})
    (repo / "d" / "a.txt").write_text("A\n")
    (repo / "d" / "b.txt").write_text("B\n")
    status = await call_ok(git_rt, "git_stage", {"cwd": str(repo), "paths": ["d/"]})
    assert sorted(f["path"] for f in status["staged"]) == ["d/a.txt", "d/b.txt"]
    status = await call_ok(git_rt, "git_unstage", {"cwd": str(repo), "paths": ["."]})
    assert status["staged"] == []
