"""The discovery cache: a call reuses what discovery learnt only while nothing git read for it
has changed, and never reuses what depends on the caller.

Each attack below first warms the cache (and checks that it answers: a test against a cache
that is not in use would prove nothing), then changes one thing discovery reads the way an
attacker or another program would, and checks the next call sees the change. The racy-git
window is shortened on the live plugin (the default, 2 s, is for filesystems with coarse
clocks) so the tests need not wait for files to age; nothing else is replaced.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from meith_plugins_git.discovery_cache import DiscoveryCache, Found, watch_list
from meith_plugins_git.repoconfig import ConfigEntry
from tests.git.support import call_err, call_ok

pytestmark = pytest.mark.anyio

WINDOW_S = 0.05


@pytest.fixture
def cache(git_rt) -> DiscoveryCache:
    found: DiscoveryCache = git_rt.plugins.records["git"].obj.tools.git.discoveries
    found.racy_window_s = WINDOW_S
    return found


async def warm(git_rt, cache: DiscoveryCache, cwd: Path, **kw) -> None:
    """Call until the cache answers: the first call learns the paths, a later one stores a
    snapshot once the files it read are older than the racy window."""
    with anyio.fail_after(30):
        while True:
            hits = cache.hits
            await call_ok(git_rt, "git_status", {"cwd": str(cwd)}, **kw)
            if cache.hits == hits + 1:
                break
    hits = cache.hits
    await call_ok(git_rt, "git_status", {"cwd": str(cwd)}, **kw)
    assert cache.hits == hits + 1, "the cache did not answer: the test would prove nothing"


def evil_filter(repo: Path, marker: Path) -> str:
    """A clean filter that leaves a marker when git runs it (git status runs it for a tracked
    file whose stat changed and whose size did not)."""
    return f'[filter "evil"]\n\tclean = "touch {marker}; cat"\n'


@pytest.fixture
def filtered_repo(make_repo, sh):
    repo = make_repo(files={"a.txt": "same\n", ".gitattributes": "*.txt filter=evil\n"})
    os.utime(repo / "a.txt", (1, 1))  # stat dirty, same size: git must read it
    return repo


async def test_a_warm_cache_answers_with_what_a_fresh_discovery_finds(git_rt, cache, make_repo):
    repo = make_repo(files={"a.txt": "a\n", "sub/b.txt": "b\n"})
    (repo / "a.txt").write_text("changed\n")
    fresh = await call_ok(git_rt, "git_status", {"cwd": str(repo / "sub")})
    await warm(git_rt, cache, repo / "sub")
    hits = cache.hits
    assert await call_ok(git_rt, "git_status", {"cwd": str(repo / "sub")}) == fresh
    assert cache.hits == hits + 1


async def test_a_program_added_to_the_repository_config_is_neutralised_at_once(
    git_rt, cache, filtered_repo, tmp_path
):
    marker = tmp_path / "filter-ran"
    await warm(git_rt, cache, filtered_repo)
    with open(filtered_repo / ".git" / "config", "a") as fh:
        fh.write(evil_filter(filtered_repo, marker))
    await call_ok(git_rt, "git_status", {"cwd": str(filtered_repo)})
    assert not marker.exists(), "a setting added after the cache was warm was not neutralised"


async def test_an_include_target_created_later_is_read(git_rt, cache, filtered_repo, tmp_path, sh):
    marker = tmp_path / "filter-ran"
    sh(filtered_repo, "config", "include.path", "later.cfg")  # relative to .git/config
    sh(filtered_repo, "config", "includeIf.gitdir:/.path", str(tmp_path / "also-later.cfg"))
    await warm(git_rt, cache, filtered_repo)
    (filtered_repo / ".git" / "later.cfg").write_text(evil_filter(filtered_repo, marker))
    await call_ok(git_rt, "git_status", {"cwd": str(filtered_repo)})
    assert not marker.exists()
    await warm(git_rt, cache, filtered_repo)
    other = tmp_path / "other-marker"
    (tmp_path / "also-later.cfg").write_text(
        evil_filter(filtered_repo, other).replace('"evil"', '"evil2"')
    )
    (filtered_repo / ".gitattributes").write_text("*.txt filter=evil2\n")
    await call_ok(git_rt, "git_status", {"cwd": str(filtered_repo)})
    assert not other.exists()


async def test_a_repository_planted_between_cwd_and_the_root_is_found(git_rt, cache, make_repo, sh):
    repo = make_repo(files={"a/b/c.txt": "c\n"})
    await warm(git_rt, cache, repo / "a" / "b")
    sh(repo / "a", "init", "-q")
    status = await call_ok(git_rt, "git_status", {"cwd": str(repo / "a" / "b")})
    assert status["root"] == str(repo / "a")


async def test_a_dot_git_swapped_for_a_file_naming_another_repository_is_refused(
    git_rt, cache, make_repo
):
    repo = make_repo("repo")
    victim = make_repo("victim")
    await warm(git_rt, cache, repo)
    (repo / ".git").rename(repo.parent / "moved-away.git")
    (repo / ".git").write_text(f"gitdir: {victim / '.git'}\n")
    code, message = await call_err(git_rt, "git_status", {"cwd": str(repo)})
    assert code == "TOOL_FAILED"
    assert "Refusing the repository" in message


async def test_a_commit_made_outside_meith_moves_the_base_of_the_next_diff(
    git_rt, cache, make_repo, sh
):
    repo = make_repo(files={"a.txt": "a\n"})
    (repo / "a.txt").write_text("committed elsewhere\n")
    sh(repo, "add", "a.txt")
    await warm(git_rt, cache, repo)
    staged = await call_ok(git_rt, "git_diff", {"cwd": str(repo), "scope": "staged"})
    assert [f["path"] for f in staged["files"]] == ["a.txt"]
    sh(repo, "commit", "-q", "-m", "elsewhere")
    print("HITS before", cache.hits, cache.misses)
    staged = await call_ok(git_rt, "git_diff", {"cwd": str(repo), "scope": "staged"})
    print("HITS after", cache.hits, cache.misses)
    assert staged["files"] == []


async def test_packed_refs_rewritten_in_place_move_head(git_rt, cache, make_repo, sh):
    repo = make_repo(files={"a.txt": "one\n"})
    first = sh(repo, "rev-parse", "HEAD").strip()
    (repo / "a.txt").write_text("two\n")
    sh(repo, "commit", "-q", "-am", "two")
    second = sh(repo, "rev-parse", "HEAD").strip()
    sh(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    await warm(git_rt, cache, repo)
    assert (await call_ok(git_rt, "git_diff", {"cwd": str(repo)}))["files"] == []
    packed = repo / ".git" / "packed-refs"
    packed.write_text(packed.read_text().replace(second, first))  # same size, same inode
    diff = await call_ok(git_rt, "git_diff", {"cwd": str(repo)})
    assert [(f["path"], f["additions"], f["deletions"]) for f in diff["files"]] == [("a.txt", 1, 1)]


async def test_a_grant_confined_to_a_directory_is_checked_on_a_cached_discovery(
    git_rt, cache, make_repo, sh, tmp_path
):
    victim = make_repo("victim")
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    linked = allowed / "wt"
    sh(victim, "worktree", "add", "-q", "-b", "w", str(linked))
    (linked / "n.txt").write_text("n\n")
    await warm(git_rt, cache, linked)
    cli = git_rt.open_session("cli", cwd=str(allowed))
    git_rt.grant(cli, ["writes-files"], cwd_prefix=str(allowed))
    hits = cache.hits
    code, message = await call_err(
        git_rt, "git_stage", {"cwd": str(linked), "paths": ["n.txt"]}, caller=cli
    )
    assert cache.hits == hits + 1  # refused although the discovery itself was reused
    assert code == "PERMISSION_DENIED"
    assert "commonDir" in message


async def test_a_file_changed_within_the_racy_window_is_not_trusted(git_rt, cache, make_repo):
    cache.racy_window_s = 3600.0  # every file is "just changed"
    repo = make_repo()
    for _ in range(4):
        await call_ok(git_rt, "git_status", {"cwd": str(repo)})
    assert cache.hits == 0


def test_include_targets_are_watched_where_git_looks_and_unknown_forms_are_not_cached(tmp_path):
    root, home = str(tmp_path / "r"), str(tmp_path / "home")
    git_dir = os.path.join(root, ".git")

    def found(*entries: ConfigEntry) -> Found:
        return Found(root, git_dir, git_dir, None, entries)

    local = "file:.git/config"
    watched = watch_list(
        root,
        found(
            ConfigEntry("local", "include.path", "more.cfg", local),
            ConfigEntry("local", "includeIf.onbranch:main.path", "~/x.cfg", local),
            ConfigEntry("global", "include.path", "/abs/y.cfg", f"file:{home}/.gitconfig"),
        ),
        (),
        home,
    )
    assert watched is not None
    for path in ("more.cfg", "config"):
        assert os.path.join(git_dir, path) in watched.full
    assert os.path.join(home, "x.cfg") in watched.full
    assert "/abs/y.cfg" in watched.full
    for unknown in ("~someone/x.cfg", "%(prefix)/etc/x.cfg"):
        entry = ConfigEntry("local", "include.path", unknown, local)
        assert watch_list(root, found(entry), (), home) is None
    blob = ConfigEntry("local", "user.name", "x", "blob:HEAD:.gitconfig")
    assert watch_list(root, found(blob), (), home) is None


async def test_staging_a_file_keeps_the_discovery(git_rt, cache, make_repo, sh):
    """An index write moves the `.git` directory's mtime but nothing discovery reads: a
    `.git` directory is watched by identity, so the next call still reuses the discovery."""
    repo = make_repo(files={"a.txt": "a\n"})
    (repo / "a.txt").write_text("b\n")
    await warm(git_rt, cache, repo)
    sh(repo, "add", "a.txt")
    hits = cache.hits
    status = await call_ok(git_rt, "git_status", {"cwd": str(repo)})
    assert cache.hits == hits + 1
    assert [f["path"] for f in status["staged"]] == ["a.txt"]
