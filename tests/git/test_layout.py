"""Repository scope: the `.git` rule, grants confined to a directory, worktree placement.

The `.git` rule (README): a `.git` file is followed only when the git dir it names points back
at this work tree (a linked worktree or a submodule); a `.git` symlink or `core.worktree` that
leads elsewhere is refused too.
"""

from __future__ import annotations

import pytest

from tests.git.support import call_err, call_ok

pytestmark = pytest.mark.anyio

ALL_REPO_TOOLS = [
    ("git_status", {}),
    ("git_diff", {}),
    ("git_log", {}),
    ("git_stage", {"paths": ["x.txt"]}),
    ("git_commit", {"message": "m"}),
    ("git_checkpoint_create", {}),
    ("git_restore", {"paths": ["x.txt"], "confirm": True}),
]


def refs_and_index(repo, sh):
    return (
        sh(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        (repo / ".git" / "index").read_bytes(),
    )


@pytest.fixture
def victim(make_repo):
    return make_repo("victim", files={"x.txt": "victim data\n"})


async def test_a_planted_git_file_pointing_at_another_repository_is_refused(
    git_rt, victim, sh, tmp_path
):
    attacker = tmp_path / "attacker"
    attacker.mkdir()
    (attacker / ".git").write_text(f"gitdir: {victim / '.git'}\n")
    (attacker / "x.txt").write_text("attacker data\n")
    before = refs_and_index(victim, sh)
    for tool, args in ALL_REPO_TOOLS:
        code, message = await call_err(git_rt, tool, {"cwd": str(attacker), **args})
        assert code == "TOOL_FAILED", tool
        assert "Refusing the repository" in message
    assert refs_and_index(victim, sh) == before
    assert (victim / "x.txt").read_text() == "victim data\n"


async def test_core_worktree_pointing_elsewhere_is_refused(git_rt, victim, make_repo, sh):
    repo = make_repo("redirected")
    sh(repo, "config", "core.worktree", str(victim))
    (victim / "x.txt").write_text("uncommitted victim work\n")
    for tool, args in ALL_REPO_TOOLS:
        code, message = await call_err(git_rt, tool, {"cwd": str(repo), **args})
        assert code == "TOOL_FAILED", tool
        assert "Refusing the repository" in message
    assert (victim / "x.txt").read_text() == "uncommitted victim work\n"


@pytest.mark.slow
async def test_a_symlinked_git_dir_is_refused(git_rt, victim, tmp_path):
    attacker = tmp_path / "symlinked"
    attacker.mkdir()
    (attacker / ".git").symlink_to(victim / ".git", target_is_directory=True)
    code, message = await call_err(git_rt, "git_status", {"cwd": str(attacker)})
    assert code == "TOOL_FAILED"
    assert "symbolic link" in message


@pytest.mark.slow
async def test_linked_worktrees_and_submodules_are_followed(git_rt, make_repo, sh, tmp_path):
    main = make_repo("main")
    sub_origin = make_repo("sub-origin", files={"s.txt": "s\n"})
    sh(main, "submodule", "add", "-q", str(sub_origin), "sub")
    sh(main, "commit", "-q", "-m", "add sub")
    sub = main / "sub"
    assert (sub / ".git").is_file()
    status = await call_ok(git_rt, "git_status", {"cwd": str(sub)})
    assert status["root"] == str(sub)
    (sub / "s.txt").write_text("changed\n")
    status = await call_ok(git_rt, "git_stage", {"cwd": str(sub), "paths": ["s.txt"]})
    assert [f["path"] for f in status["staged"]] == ["s.txt"]
    linked = tmp_path / "linked"
    sh(main, "worktree", "add", "-q", "-b", "side", str(linked))
    status = await call_ok(git_rt, "git_status", {"cwd": str(linked)})
    assert status["root"] == str(linked)


async def test_a_git_file_naming_a_worktree_of_another_directory_is_refused(
    git_rt, make_repo, sh, tmp_path
):
    main = make_repo("main2")
    linked = tmp_path / "real-linked"
    sh(main, "worktree", "add", "-q", "-b", "side", str(linked))
    impostor = tmp_path / "impostor"
    impostor.mkdir()
    (impostor / ".git").write_text((linked / ".git").read_text())
    code, message = await call_err(git_rt, "git_status", {"cwd": str(impostor)})
    assert code == "TOOL_FAILED"
    assert "not a worktree of this directory" in message


# -- grants confined to a directory (cwd_prefix) ----------------------------------------


@pytest.fixture
def scoped(git_rt, tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    cli = git_rt.open_session("cli", cwd=str(allowed))
    git_rt.grant(cli, ["writes-files"], cwd_prefix=str(allowed))
    return allowed.resolve(), cli


async def test_a_scoped_grant_allows_a_repository_inside_its_directory(git_rt, scoped, make_repo):
    _allowed, cli = scoped
    repo = make_repo("allowed/inside")
    (repo / "n.txt").write_text("n\n")
    status = await call_ok(git_rt, "git_stage", {"cwd": str(repo), "paths": ["n.txt"]}, caller=cli)
    assert [f["path"] for f in status["staged"]] == ["n.txt"]


async def test_a_symlinked_cwd_cannot_move_a_write_outside_the_grant(git_rt, scoped, victim, sh):
    allowed, cli = scoped
    (allowed / "door").symlink_to(victim, target_is_directory=True)
    (victim / "x.txt").write_text("victim change\n")
    before = refs_and_index(victim, sh)
    for tool, args in (
        ("git_stage", {"paths": ["x.txt"]}),
        ("git_checkpoint_create", {}),
        ("git_branch", {"action": "create", "name": "evil"}),
    ):
        code, message = await call_err(
            git_rt, tool, {"cwd": str(allowed / "door"), **args}, caller=cli
        )
        assert code == "PERMISSION_DENIED", tool
        # The gate resolves the call's cwd before any grant is matched against it.
        assert f"acts on the path in argument cwd, {victim.resolve()}, outside it" in message
    assert refs_and_index(victim, sh) == before


async def test_a_worktree_inside_the_grant_of_a_repository_outside_it_is_refused(
    git_rt, scoped, victim, sh
):
    allowed, cli = scoped
    linked = allowed / "wt"
    sh(victim, "worktree", "add", "-q", "-b", "w", str(linked))
    (linked / "n.txt").write_text("n\n")
    code, message = await call_err(
        git_rt, "git_stage", {"cwd": str(linked), "paths": ["n.txt"]}, caller=cli
    )
    assert code == "PERMISSION_DENIED"
    assert "commonDir" in message


# -- where worktrees may go -------------------------------------------------------------


@pytest.mark.slow
async def test_untrusted_callers_keep_worktrees_next_to_the_repository(git_rt, make_repo, tmp_path):
    base = tmp_path / "projects"
    repo = make_repo("projects/app")
    cli = git_rt.open_session("cli", cwd=str(repo))
    git_rt.grant(cli, ["writes-files"], tool="git_worktree")
    far = tmp_path / "elsewhere" / "wt"
    code, _ = await call_err(
        git_rt,
        "git_worktree",
        {"cwd": str(repo), "action": "create", "path": str(far), "branch": "a"},
        caller=cli,
    )
    assert code == "PERMISSION_DENIED"
    assert not far.exists()
    listed = await call_ok(
        git_rt,
        "git_worktree",
        {"cwd": str(repo), "action": "create", "path": "../app-wt", "branch": "b"},
        caller=cli,
    )
    assert listed[1]["path"] == str(base / "app-wt")
    # A trusted caller (internal) may put one anywhere.
    listed = await call_ok(
        git_rt,
        "git_worktree",
        {"cwd": str(repo), "action": "create", "path": str(far), "branch": "c"},
    )
    assert str(far) in [w["path"] for w in listed]


async def test_worktree_paths_follow_the_grant_directory_too(git_rt, make_repo, tmp_path):
    repo = make_repo("scoped/app")
    scope = (tmp_path / "scoped" / "app").resolve()
    cli = git_rt.open_session("cli", cwd=str(repo))
    git_rt.grant(cli, ["writes-files"], cwd_prefix=str(scope))
    code, message = await call_err(
        git_rt,
        "git_worktree",
        {"cwd": str(repo), "action": "create", "path": "../sibling", "branch": "s"},
        caller=cli,
    )
    assert code == "PERMISSION_DENIED"
    assert "grant" in message
