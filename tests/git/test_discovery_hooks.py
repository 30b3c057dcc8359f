"""Repository hooks are code: a caller without `starts-process` never causes them to run.

Each attack is played by an agent session holding only `writes-files`, confined to a project
directory, through the same pipeline every caller uses. Every hook writes a canary when it runs.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from meith_core import CallerInfo, Runtime
from tests.git.support import call_ok

pytestmark = pytest.mark.anyio


def _hook(path: Path, canary: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho ran >> '{canary}'\n")
    path.chmod(0o755)


def _agent(rt: Runtime, scope: Path, *capabilities: str) -> CallerInfo:
    agent = rt.open_session("agent", cwd=str(scope))
    rt.grant(agent, list(capabilities), cwd_prefix=str(scope))
    return agent


def _diagnostics(result: object) -> str:
    diagnostics = getattr(result, "diagnostics", None) or []
    return "\n".join(d.message for d in diagnostics)


async def test_repository_hookspath_outside_the_grant_never_runs(git_rt, make_repo, sh, tmp_path):
    """`core.hooksPath` in the repository's own config names hooks outside the grant: neither
    a writes-files caller nor one that may also start processes runs them."""
    repo = make_repo("project/repo")
    canary = tmp_path / "CANARY-outside-hook"
    _hook(tmp_path / "elsewhere" / "pre-commit", canary)
    sh(repo, "config", "core.hooksPath", str(tmp_path / "elsewhere"))
    (repo / "a.txt").write_text("a\n")
    sh(repo, "add", "a.txt")
    # Armed: plain git runs it.
    sh(repo, "commit", "-q", "-m", "plain git")
    assert canary.read_text() == "ran\n"
    canary.unlink()

    for caps in (["writes-files"], ["writes-files", "starts-process"]):
        agent = _agent(git_rt, repo.parent, *caps)
        (repo / "a.txt").write_text(f"{caps}\n")
        sh(repo, "add", "a.txt")
        await call_ok(git_rt, "git_commit", {"cwd": str(repo), "message": "x"}, caller=agent)
        assert not canary.exists(), caps
        await git_rt.close_session(agent)


async def test_a_chain_of_writes_files_tools_never_runs_a_hook_the_caller_wrote(
    git_rt, make_repo, sh, tmp_path
):
    """Stage a new `.husky/pre-commit` (a patch, mode 755), commit it, create a worktree (which
    checks it out), commit there: with husky's `core.hooksPath=.husky` in the repository's
    config, plain git would run the caller's script."""
    repo = make_repo("project/repo")
    sh(repo, "config", "core.hooksPath", ".husky")
    canary = tmp_path / "CANARY-husky"
    agent = _agent(git_rt, repo.parent, "writes-files")
    script = f"#!/bin/sh\necho ran >> '{canary}'\n"
    lines = "".join(f"+{line}\n" for line in script.splitlines())
    patch = (
        textwrap.dedent(
            """\
        diff --git a/.husky/pre-commit b/.husky/pre-commit
        new file mode 100755
        --- /dev/null
        +++ b/.husky/pre-commit
        @@ -0,0 +1,2 @@
        """
        )
        + lines
    )
    cwd = {"cwd": str(repo)}
    await call_ok(git_rt, "git_stage", {**cwd, "patch": patch}, caller=agent)
    await call_ok(git_rt, "git_commit", {**cwd, "message": "add a hook"}, caller=agent)
    await call_ok(
        git_rt,
        "git_worktree",
        {**cwd, "action": "create", "path": "../wt", "branch": "side"},
        caller=agent,
    )
    wt = repo.parent / "wt"
    assert (wt / ".husky" / "pre-commit").stat().st_mode & 0o111
    (wt / "b.txt").write_text("b\n")
    await call_ok(git_rt, "git_stage", {"cwd": str(wt), "paths": ["b.txt"]}, caller=agent)
    result = await git_rt.call("git_commit", {"cwd": str(wt), "message": "hook?"}, caller=agent)
    assert result.ok, result.error
    assert not canary.exists()
    # Armed: plain git in that worktree runs the caller's script.
    (wt / "c.txt").write_text("c\n")
    sh(wt, "add", "c.txt")
    sh(wt, "commit", "-q", "-m", "plain git")
    assert canary.exists()


async def test_hooks_skipped_for_lack_of_starts_process_are_reported(git_rt, make_repo, sh):
    repo = make_repo("project/repo")
    canary = repo.parent / "hook-ran"
    _hook(repo / ".git" / "hooks" / "pre-commit", canary)
    agent = _agent(git_rt, repo.parent, "writes-files")
    (repo / "a.txt").write_text("a\n")
    sh(repo, "add", "a.txt")
    result = await git_rt.call("git_commit", {"cwd": str(repo), "message": "x"}, caller=agent)
    assert result.ok, result.error
    assert not canary.exists()
    note = _diagnostics(result)
    assert "pre-commit" in note
    assert "starts-process" in note


async def test_hooks_run_when_the_grant_covers_starts_process_there(git_rt, make_repo, sh):
    repo = make_repo("project/repo")
    canary = repo.parent / "hook-ran"
    _hook(repo / ".git" / "hooks" / "pre-commit", canary)
    agent = _agent(git_rt, repo.parent, "writes-files", "starts-process")
    (repo / "a.txt").write_text("a\n")
    sh(repo, "add", "a.txt")
    result = await git_rt.call("git_commit", {"cwd": str(repo), "message": "x"}, caller=agent)
    assert result.ok, result.error
    assert canary.read_text() == "ran\n"
    assert "hook" not in _diagnostics(result)


async def test_starts_process_for_another_directory_does_not_run_hooks(
    git_rt, make_repo, sh, tmp_path
):
    repo = make_repo("project/repo")
    canary = repo.parent / "hook-ran"
    _hook(repo / ".git" / "hooks" / "pre-commit", canary)
    agent = _agent(git_rt, repo.parent, "writes-files")
    other = tmp_path / "other"
    other.mkdir()
    git_rt.grant(agent, ["starts-process"], cwd_prefix=str(other))
    (repo / "a.txt").write_text("a\n")
    sh(repo, "add", "a.txt")
    await call_ok(git_rt, "git_commit", {"cwd": str(repo), "message": "x"}, caller=agent)
    assert not canary.exists()


async def test_checkpoint_metadata_is_not_written_through_a_symlink(
    git_rt, make_repo, sh, tmp_path
):
    """`.git/meith` planted as a symlink to a directory outside the grant: the checkpoint
    metadata write must neither land there nor replace what is there."""
    repo = make_repo("project/repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "checkpoints.json").write_text("precious\n")
    (repo / ".git" / "meith").symlink_to(outside)
    agent = _agent(git_rt, repo.parent, "writes-files")
    result = await git_rt.call("git_checkpoint_create", {"cwd": str(repo)}, caller=agent)
    assert (outside / "checkpoints.json").read_text() == "precious\n"
    assert sorted(p.name for p in outside.iterdir()) == ["checkpoints.json"]
    assert not result.ok
    assert result.error is not None
    assert "symbolic link" in result.error.message
    # Refused before anything was written: no checkpoint ref either.
    assert sh(repo, "for-each-ref", "refs/meith") == ""
