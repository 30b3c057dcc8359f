"""git_diff: GitDiffResult on real repositories."""

from __future__ import annotations

import pytest

from tests.git.support import call_ok

pytestmark = pytest.mark.anyio


def by_path(result):
    return {f["path"]: f for f in result["files"]}


async def test_not_a_repository_gives_is_repo_false_and_empty_totals(git_rt, tmp_path):
    result = await call_ok(git_rt, "git_diff", {"cwd": str(tmp_path), "scope": "staged"})
    assert result == {
        "isRepo": False,
        "root": None,
        "scope": "staged",
        "files": [],
        "totalAdditions": 0,
        "totalDeletions": 0,
    }


@pytest.fixture
def changed_repo(make_repo, sh):
    repo = make_repo(files={"staged.txt": "one\n", "unstaged.txt": "one\ntwo\n", "gone.txt": "x\n"})
    (repo / "staged.txt").write_text("one\nstaged\n")
    sh(repo, "add", "staged.txt")
    (repo / "unstaged.txt").write_text("one\n")
    (repo / "gone.txt").unlink()
    (repo / "untracked.txt").write_text("u1\nu2\nu3\n")
    return repo


async def test_scope_all_has_staged_unstaged_and_untracked_files(git_rt, changed_repo):
    result = await call_ok(git_rt, "git_diff", {"cwd": str(changed_repo)})
    files = by_path(result)
    assert result["isRepo"]
    assert result["root"] == str(changed_repo)
    assert result["scope"] == "all"
    assert list(files) == ["gone.txt", "staged.txt", "unstaged.txt", "untracked.txt"]
    assert files["staged.txt"]["status"] == "modified"
    assert (files["staged.txt"]["additions"], files["staged.txt"]["deletions"]) == (1, 0)
    assert (files["unstaged.txt"]["additions"], files["unstaged.txt"]["deletions"]) == (0, 1)
    assert files["gone.txt"]["status"] == "deleted"
    assert files["untracked.txt"]["status"] == "untracked"
    assert files["untracked.txt"]["additions"] == 3
    assert result["totalAdditions"] == 1 + 0 + 0 + 3
    assert result["totalDeletions"] == 0 + 1 + 1
    assert files["staged.txt"]["diff"].startswith("diff --git a/staged.txt b/staged.txt\n")
    assert "+staged" in files["staged.txt"]["diff"]
    assert "+u3" in files["untracked.txt"]["diff"]


async def test_scope_staged_and_unstaged(git_rt, changed_repo):
    staged = by_path(
        await call_ok(git_rt, "git_diff", {"cwd": str(changed_repo), "scope": "staged"})
    )
    assert list(staged) == ["staged.txt"]
    unstaged = by_path(
        await call_ok(git_rt, "git_diff", {"cwd": str(changed_repo), "scope": "unstaged"})
    )
    assert list(unstaged) == ["gone.txt", "unstaged.txt", "untracked.txt"]


@pytest.mark.parametrize("scope", ["all", "unstaged"])
async def test_include_untracked_false_leaves_untracked_files_out(git_rt, changed_repo, scope):
    args = {"cwd": str(changed_repo), "scope": scope, "includeUntracked": False}
    result = await call_ok(git_rt, "git_diff", args)
    files = by_path(result)
    assert "untracked.txt" not in files
    assert "unstaged.txt" in files
    assert result["totalAdditions"] == (1 if scope == "all" else 0)  # only staged.txt's line


async def test_include_patches_false_gives_counts_without_bodies(git_rt, changed_repo):
    result = await call_ok(git_rt, "git_diff", {"cwd": str(changed_repo), "includePatches": False})
    assert all(f["diff"] == "" for f in result["files"])
    assert by_path(result)["untracked.txt"]["additions"] == 3


async def test_path_narrows_patches_to_one_file(git_rt, changed_repo):
    result = await call_ok(git_rt, "git_diff", {"cwd": str(changed_repo), "path": "unstaged.txt"})
    files = by_path(result)
    assert files["unstaged.txt"]["diff"].startswith("diff --git a/unstaged.txt")
    assert "-two" in files["unstaged.txt"]["diff"]
    assert all(f["diff"] == "" for p, f in files.items() if p != "unstaged.txt")
    assert len(files) == 4  # the summary still lists every file
    assert (result["path"], result["pathMatches"]) == ("unstaged.txt", 1)


async def test_a_path_that_matches_no_changed_file_says_so(git_rt, changed_repo):
    result = await git_rt.call("git_diff", {"cwd": str(changed_repo), "path": "nothing.txt"})
    assert result.ok, result.error
    assert (result.content["path"], result.content["pathMatches"]) == ("nothing.txt", 0)
    lines = (result.text or "").splitlines()
    assert lines[0] == "no changes to nothing.txt (all); it matches no changed file"
    assert lines[1].startswith("4 files changed")


async def test_huge_untracked_file_keeps_exact_counts_and_a_capped_preview(git_rt, make_repo):
    repo = make_repo()
    (repo / "big.txt").write_text("".join(f"line {i}\n" for i in range(250_000)))
    result = await call_ok(git_rt, "git_diff", {"cwd": str(repo)})
    big = by_path(result)["big.txt"]
    assert big["additions"] == 250_000
    assert "Large untracked file omitted from preview." in big["diff"]
    assert len(big["diff"]) < 1000


async def test_untracked_file_without_final_newline_counts_its_last_line(git_rt, make_repo):
    repo = make_repo()
    (repo / "partial.txt").write_text("a\nb")
    files = by_path(await call_ok(git_rt, "git_diff", {"cwd": str(repo)}))
    assert files["partial.txt"]["additions"] == 2
    assert files["partial.txt"]["diff"].endswith("+b\n\\ No newline at end of file\n")


async def test_binary_files_are_flagged(git_rt, make_repo, sh):
    repo = make_repo()
    (repo / "tracked.bin").write_bytes(b"\0\1\2binary")
    sh(repo, "add", "tracked.bin")
    (repo / "untracked.bin").write_bytes(b"\0\0\0more")
    files = by_path(await call_ok(git_rt, "git_diff", {"cwd": str(repo)}))
    assert files["tracked.bin"]["binary"] is True
    assert files["tracked.bin"]["status"] == "added"
    assert files["untracked.bin"]["binary"] is True
    assert (files["untracked.bin"]["additions"], files["untracked.bin"]["deletions"]) == (0, 0)


async def test_repository_without_commits_diffs_against_the_empty_tree(git_rt, make_repo, sh):
    repo = make_repo(files={"a.txt": "1\n2\n"}, commit=False)
    sh(repo, "add", "a.txt")
    result = await call_ok(git_rt, "git_diff", {"cwd": str(repo), "scope": "staged"})
    (entry,) = result["files"]
    assert entry["path"] == "a.txt"
    assert entry["status"] == "added"
    assert entry["additions"] == 2


async def test_rename_is_reported_with_its_original_path(git_rt, make_repo, sh):
    repo = make_repo(files={"before.txt": "a reasonably long line so rename detection works\n"})
    sh(repo, "mv", "before.txt", "after.txt")
    result = await call_ok(git_rt, "git_diff", {"cwd": str(repo), "scope": "staged"})
    (entry,) = result["files"]
    assert entry["path"] == "after.txt"
    assert entry["status"] == "renamed"
    assert entry["originalPath"] == "before.txt"
    assert "rename to after.txt" in entry["diff"]


async def test_paths_with_spaces_and_unicode_keep_their_patches(git_rt, make_repo):
    repo = make_repo(files={"dir with space/ünï cödé.txt": "a\n", 'quote"d.txt': "q\n"})
    (repo / "dir with space" / "ünï cödé.txt").write_text("b\n")
    (repo / 'quote"d.txt').write_text("r\n")
    files = by_path(await call_ok(git_rt, "git_diff", {"cwd": str(repo)}))
    assert "+b" in files["dir with space/ünï cödé.txt"]["diff"]
    assert "+r" in files['quote"d.txt']["diff"]


async def test_untracked_symlink_is_counted_not_followed(git_rt, make_repo, tmp_path):
    repo = make_repo()
    secret = tmp_path / "secret.txt"
    secret.write_text("s1\ns2\ns3\n")
    (repo / "link").symlink_to(secret)
    entry = by_path(await call_ok(git_rt, "git_diff", {"cwd": str(repo)}))["link"]
    assert entry["additions"] == 1
    assert "s1" not in entry["diff"]
    assert str(secret) in entry["diff"]


async def test_one_diff_gives_the_counts_and_every_patch_as_a_diff_per_path_does(
    git_rt, make_repo, sh
):
    """With every patch asked for, the counts and the patches come from one `git diff`; its
    records and its patch text are split where git separates them. Names with a tab, a
    newline, a space and non-ASCII letters, a rename, a binary file and a deletion must land
    exactly where separate per-path diffs put them."""
    names = ["tab\there.txt", "new\nline.txt", "sp ace.txt", "ünï.txt", "moved.txt", "gone.txt"]
    repo = make_repo(files={name: f"{name}\nkeep\n" for name in names} | {"bin.dat": "a\0b"})
    for name in names[:4]:
        (repo / name).write_text(f"{name}\nchanged\n")
    (repo / "bin.dat").write_bytes(b"a\0c")
    sh(repo, "mv", "moved.txt", "renamed.txt")
    sh(repo, "rm", "-q", "gone.txt")
    whole = by_path(await call_ok(git_rt, "git_diff", {"cwd": str(repo)}))
    assert sorted(whole) == sorted([*names[:4], "bin.dat", "renamed.txt", "gone.txt"])
    assert whole["renamed.txt"]["originalPath"] == "moved.txt"
    rename = "diff --git a/moved.txt b/renamed.txt\nsimilarity index 100%\n"
    assert whole["renamed.txt"]["diff"].startswith(rename)
    assert whole["bin.dat"]["binary"] is True
    # A diff limited to one path cannot see a rename (it is an added file there).
    for path, entry in whole.items():
        if path == "renamed.txt":
            continue
        alone = by_path(await call_ok(git_rt, "git_diff", {"cwd": str(repo), "path": path}))
        assert entry == alone[path], path
        assert entry["diff"].startswith("diff --git "), path


async def test_counts_read_from_the_patches_are_git_numstat_counts(git_rt, make_repo, sh):
    """With every patch asked for, the lines are counted from the patches, not by a second
    diff: the counts must be git's own `--numstat` ones, also where a file's text looks like a
    patch header (`--- `, `+++ `, `@@`, `Binary files`), for a mode change, an empty file
    that gains lines, a file losing its last newline, and a binary file."""
    tricky = "--- not a header\n+++ nor this\n@@ -1 +1 @@\nBinary files a and b differ\n"
    repo = make_repo(
        files={
            "headers.txt": tricky,
            "script.sh": "echo hi\n",
            "empty.txt": "",
            "tail.txt": "one\ntwo\n",
            "image.bin": "\0\1\2",
            "many.txt": "".join(f"line {i}\n" for i in range(300)),
        }
    )
    (repo / "headers.txt").write_text("-- still not\n" + tricky.replace("nor", "not") + "+++\n")
    (repo / "script.sh").chmod(0o755)
    (repo / "empty.txt").write_text("now\nthree\nlines\n")
    (repo / "tail.txt").write_text("one\ntwo")
    (repo / "image.bin").write_bytes(b"\0\1\3")
    (repo / "many.txt").write_text("".join(f"line {i}\n" for i in range(300) if i % 7))
    numstat = {}
    for line in sh(repo, "diff", "--numstat").splitlines():
        added, deleted, name = line.split("\t")
        numstat[name] = (added, deleted)
    result = by_path(await call_ok(git_rt, "git_diff", {"cwd": str(repo), "scope": "unstaged"}))
    assert sorted(result) == sorted(numstat)
    for name, (added, deleted) in numstat.items():
        entry = result[name]
        if added == "-":
            assert entry["binary"] is True, name
            assert (entry["additions"], entry["deletions"]) == (0, 0), name
        else:
            assert entry["binary"] is False, name
            assert (entry["additions"], entry["deletions"]) == (int(added), int(deleted)), name
    assert result["script.sh"]["diff"].startswith("diff --git a/script.sh b/script.sh\nold mode")
    assert (result["many.txt"]["additions"], result["many.txt"]["deletions"]) == (0, 43)


async def test_a_rename_whose_names_read_like_one_name_twice_keeps_its_own_patch(
    git_rt, make_repo, sh
):
    """`diff --git a/x b/x b/x b/x` is a rename of `x` to `x b/x b/x`, though it reads like one
    name (`x b/x`) twice: each patch must land on its own file."""
    repo = make_repo(files={"x": "rename me\n" * 5, "x b/x": "other\n"})
    (repo / "x b" / "x b").mkdir()
    sh(repo, "mv", "x", "x b/x b/x")
    (repo / "x b" / "x").write_text("other, changed\n")
    sh(repo, "add", "-A")
    result = by_path(await call_ok(git_rt, "git_diff", {"cwd": str(repo), "scope": "staged"}))
    assert sorted(result) == ["x b/x", "x b/x b/x"]
    renamed = result["x b/x b/x"]
    assert renamed["originalPath"] == "x"
    assert renamed["diff"].startswith("diff --git a/x b/x b/x b/x\nsimilarity index 100%\n")
    changed = result["x b/x"]
    assert changed["diff"].startswith("diff --git a/x b/x b/x b/x\nindex ")
    assert "+other, changed" in changed["diff"]
    assert (changed["additions"], changed["deletions"]) == (1, 1)


async def test_a_patch_names_both_objects_in_full(git_rt, make_repo, sh):
    """`--full-index`: the `index` line carries git's own object names, unabbreviated (git
    abbreviating them listed every loose-object directory), so the patch applies back with
    `git apply --3way` from the names alone."""
    repo = make_repo(files={"a.txt": "one\ntwo\n"})
    (repo / "a.txt").write_text("one\nTWO\n")
    (entry,) = (await call_ok(git_rt, "git_diff", {"cwd": str(repo)}))["files"]
    old = sh(repo, "rev-parse", "HEAD:a.txt").strip()
    new = sh(repo, "hash-object", "a.txt").strip()
    assert len(old) == len(new) == 40
    assert f"\nindex {old}..{new} 100644\n" in entry["diff"]
    sh(repo, "checkout", "--", "a.txt")
    sh(repo, "apply", "--3way", "-", input=entry["diff"])
    assert (repo / "a.txt").read_text() == "one\nTWO\n"


def test_untracked_previews_never_read_through_a_swapped_in_symlink(tmp_path):
    """git listed `dir/secret.txt`; by the time it is read `dir` is a link to elsewhere."""
    from meith_plugins_git.diff import untracked_summary

    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s1\ns2\n")
    (root / "dir").symlink_to(outside, target_is_directory=True)
    entry = untracked_summary(str(root), "dir/secret.txt", want_patch=True)
    assert entry["additions"] == 0
    assert "s1" not in entry["diff"]
