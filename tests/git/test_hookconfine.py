"""Allowed hooks run under the confinement of the directory-confined grant that allowed them.

An agent session holds `writes-files` and `starts-process`, both confined to a project
directory; its commit runs the repository's hooks, and each hook tries to do what a process
started under that grant may not. git itself still writes `.git` (the commit lands); only the
hook processes are confined. Real repositories, real git, the real kernel confinement.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from meith_core import CallerInfo, Runtime
from tests.core.confine.support import needs_landlock, needs_namespaces
from tests.git.support import call_ok

pytestmark = [pytest.mark.anyio, pytest.mark.kernel, needs_landlock]


def _hook(repo: Path, name: str, body: str) -> None:
    path = repo / ".git" / "hooks" / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def _agent(rt: Runtime, scope: Path) -> CallerInfo:
    agent = rt.open_session("agent", cwd=str(scope))
    rt.grant(agent, ["writes-files", "starts-process"], cwd_prefix=str(scope))
    return agent


async def _commit(rt: Runtime, repo: Path, sh, caller: CallerInfo | None) -> None:
    (repo / "a.txt").write_text(os.urandom(4).hex())
    sh(repo, "add", "a.txt")
    kw = {"caller": caller} if caller is not None else {}
    await call_ok(rt, "git_commit", {"cwd": str(repo), "message": "x"}, **kw)


def _attempt(target: str, report: Path) -> str:
    """Shell lines trying to write `target`, reporting "ok"/"refused" to `report`."""
    return f"( echo planted > '{target}' ) 2>/dev/null && echo ok >> '{report}' || echo refused >> '{report}'\n"


async def test_a_confined_hook_writes_inside_but_not_outside_or_into_meith_home(
    git_rt, make_repo, sh, tmp_path
):
    repo = make_repo("project/repo")
    scope = repo.parent
    outside = tmp_path / "outside"
    outside.mkdir()
    home = git_rt.home.root
    report = scope / "report"
    _hook(
        repo,
        "pre-commit",
        _attempt(str(scope / "inside.txt"), report)
        + _attempt(str(outside / "planted.txt"), report)
        + _attempt(str(home / "grants.json"), report)
        + f"echo \"home=${{MEITH_HOME-unset}}\" >> '{report}'\n",
    )
    await _commit(git_rt, repo, sh, _agent(git_rt, scope))
    assert report.read_text().splitlines() == ["ok", "refused", "refused", "home=unset"]
    assert (scope / "inside.txt").exists()
    assert not (outside / "planted.txt").exists()
    assert (
        "planted" not in (home / "grants.json").read_text()
        if (home / "grants.json").exists()
        else True
    )
    # git itself wrote the commit.
    assert sh(repo, "log", "-1", "--format=%s").strip() == "x"


@needs_namespaces
async def test_a_confined_hook_cannot_plant_into_git_metadata(git_rt, make_repo, sh, tmp_path):
    """A hook that writes another hook, or a config key, would run later in the user's own
    git, outside every wall: `.git` is read-only inside the confinement."""
    repo = make_repo("project/repo")
    scope = repo.parent
    report = scope / "report"
    canary = tmp_path / "CANARY"
    planted = f"#!/bin/sh\\necho ran >> '{canary}'\\n"
    _hook(
        repo,
        "pre-commit",
        f"( printf '{planted}' > .git/hooks/post-commit && chmod +x .git/hooks/post-commit ) "
        f"2>/dev/null && echo ok >> '{report}' || echo refused >> '{report}'\n"
        f"( git config core.fsmonitor 'echo ran >> {canary}' ) 2>/dev/null "
        f"&& echo ok >> '{report}' || echo refused >> '{report}'\n",
    )
    await _commit(git_rt, repo, sh, _agent(git_rt, scope))
    assert report.read_text().splitlines() == ["refused", "refused"]
    assert not (repo / ".git" / "hooks" / "post-commit").exists()
    # A plain git run by the user afterwards fires nothing (without the planting hook).
    (repo / ".git" / "hooks" / "pre-commit").unlink()
    (repo / "b.txt").write_text("b\n")
    sh(repo, "add", "b.txt")
    sh(repo, "commit", "-q", "-m", "plain git")
    sh(repo, "status")
    assert not canary.exists()


async def test_a_hook_cannot_rewrite_the_wrapper_of_the_next_hook(git_rt, make_repo, sh, tmp_path):
    """The wrappers are run by git, unconfined: a hook that could rewrite the next one's wrapper
    would escape. git tells hooks where they are (GIT_CONFIG_PARAMETERS names core.hooksPath)."""
    repo = make_repo("project/repo")
    scope = repo.parent
    report = scope / "report"
    canary = tmp_path / "CANARY-escaped"
    _hook(
        repo,
        "pre-commit",
        "dir=$(git config core.hooksPath)\n"
        f"echo \"$dir\" > '{scope / 'wrappers'}'\n"
        f"( printf '#!/bin/sh\\necho ran > {canary}\\n' > \"$dir/commit-msg\" ) 2>/dev/null "
        f"&& echo ok >> '{report}' || echo refused >> '{report}'\n",
    )
    _hook(repo, "commit-msg", "exit 0\n")
    await _commit(git_rt, repo, sh, _agent(git_rt, scope))
    wrappers = (scope / "wrappers").read_text().strip()
    assert wrappers != str(repo / ".git" / "hooks")
    assert report.read_text().splitlines() == ["refused"]
    assert not canary.exists()
    # The per-call wrapper directory is gone.
    assert not os.path.exists(wrappers)


async def test_hooks_of_a_trusted_caller_run_unconfined(git_rt, make_repo, sh, tmp_path):
    repo = make_repo("project/repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    _hook(repo, "pre-commit", f"echo ran > '{outside / 'trusted.txt'}'\n")
    await _commit(git_rt, repo, sh, None)
    assert (outside / "trusted.txt").read_text() == "ran\n"


async def test_hooks_under_an_unconfined_grant_run_unconfined(git_rt, make_repo, sh, tmp_path):
    repo = make_repo("project/repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    _hook(repo, "pre-commit", f"echo ran > '{outside / 'unconfined.txt'}'\n")
    agent = git_rt.open_session("agent", cwd=str(repo))
    git_rt.grant(agent, ["writes-files"], cwd_prefix=str(repo.parent))
    git_rt.grant(agent, ["starts-process"])
    await _commit(git_rt, repo, sh, agent)
    assert (outside / "unconfined.txt").read_text() == "ran\n"


async def test_a_checkout_hook_of_a_new_worktree_runs_confined(git_rt, make_repo, sh, tmp_path):
    repo = make_repo("project/repo")
    scope = repo.parent
    outside = tmp_path / "outside"
    outside.mkdir()
    report = scope / "report"
    _hook(
        repo,
        "post-checkout",
        _attempt(str(scope / "checkout.txt"), report) + _attempt(str(outside / "x"), report),
    )
    agent = _agent(git_rt, scope)
    await call_ok(
        git_rt,
        "git_worktree",
        {"cwd": str(repo), "action": "create", "path": "../wt", "branch": "side"},
        caller=agent,
    )
    assert report.read_text().splitlines() == ["ok", "refused"]
    assert (scope / "wt" / "README.md").exists()


async def test_git_metadata_a_confined_hook_plants_is_neutralised_and_audited(
    git_rt, make_repo, sh, tmp_path
):
    """Issue 19, attack 4 for hooks: a confined pre-commit hook makes a nested repository with
    a `core.fsmonitor` and a `!` alias; after the commit both are gone (the repository stays),
    and the audit trail has a `planted-git` record."""
    repo = make_repo("project/repo")
    scope = repo.parent
    ran = tmp_path / "ran"
    _hook(
        repo,
        "pre-commit",
        f"git init -q '{scope}/nested' && "
        f"git -C '{scope}/nested' config core.fsmonitor 'touch {ran}-fsmonitor' && "
        f"git -C '{scope}/nested' config alias.x '!touch {ran}-alias'\n",
    )
    await _commit(git_rt, repo, sh, _agent(git_rt, scope))
    config = (scope / "nested/.git/config").read_text()
    assert "fsmonitor" not in config
    assert "alias" not in config.split("[alias]")[-1] or "touch" not in config
    assert "repositoryformatversion" in config  # still a repository
    records = [r for r in git_rt.audit.read() if r.get("kind") == "planted-git"]
    assert records, "no planted-git record"
    assert records[-1]["subject"]["kind"] == "git-hooks"
    assert "core.fsmonitor" in str(records[-1]["findings"])


@pytest.mark.slow  # about 0.5-1 s alone: over the guard's limit on a loaded CI machine
@needs_namespaces
async def test_a_confined_hook_reaches_the_destinations_its_grant_names(
    git_rt, make_repo, sh, tmp_path
):
    """git hands the hooks' control channel down to each hook it runs (an inherited
    descriptor): a named host-loopback destination answers, another port does not."""
    import http.server
    import threading

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "3")
            self.end_headers()
            self.wfile.write(b"hi\n")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = httpd.server_address[1]
    try:
        repo = make_repo("project/repo")
        scope = repo.parent
        report = scope / "report"
        _hook(
            repo,
            "pre-commit",
            f"curl -s -m 10 http://127.0.0.1:{port}/ >> '{report}'\n"
            f"curl -s -m 10 -o /dev/null -w '%{{http_code}}\\n' --noproxy '' -x http://127.0.0.1:3128 "
            f"http://127.0.0.1:{port + 1}/ >> '{report}'\n",
        )
        agent = git_rt.open_session("agent", cwd=str(scope))
        git_rt.grant(
            agent,
            ["writes-files", "starts-process"],
            cwd_prefix=str(scope),
            net=(f"127.0.0.1:{port}",),
        )
        await _commit(git_rt, repo, sh, agent)
        assert report.read_text().splitlines() == ["hi", "403"]
    finally:
        httpd.shutdown()
        httpd.server_close()
