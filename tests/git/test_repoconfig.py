"""The git plugin's hardening reads the core's one table of risky keys (`GIT_RISKY_KEYS`)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from meith_core import GIT_RISKY_KEYS, git_key_risk
from meith_plugins_git.repoconfig import ConfigEntry, neutralising_overrides
from meith_plugins_git.runner import BASE_CONFIG
from tests.git.conftest import git_env
from tests.git.support import call_ok


def test_what_every_command_sets_agrees_with_the_table() -> None:
    for key, value in BASE_CONFIG:
        risky = git_key_risk(key, "always" if key.startswith("protocol.") else "x")
        if risky is not None and risky.neutral is not None:
            assert value == risky.neutral, key
    assert ("protocol.allow", "never") in BASE_CONFIG


def test_transport_keys_of_every_scope_are_forced_to_the_tables_value() -> None:
    entries = [
        ConfigEntry("global", "protocol.ext.allow", "always"),
        ConfigEntry("local", "protocol.file.allow", "always"),
        ConfigEntry("local", "core.sshCommand", "evil"),
        ConfigEntry("local", "remote.origin.url", "ext::sh -c evil"),
    ]
    overrides = neutralising_overrides(entries, forced=(k for k, _ in BASE_CONFIG))
    assert ("protocol.ext.allow", "never") in overrides
    assert ("protocol.file.allow", "never") in overrides
    assert ("core.sshCommand", "") in overrides
    # An `ext::` URL needs no override: every transport is refused by protocol.allow=never.
    assert not [k for k, _ in overrides if k.startswith("remote.")]


def test_every_table_entry_with_a_neutral_value_is_a_program_or_a_transport() -> None:
    assert {k.kind for k in GIT_RISKY_KEYS if k.neutral is not None} == {"program", "transport"}


pytestmark = pytest.mark.anyio


@dataclass
class Trap:
    repo: Path
    canary: Path
    #: The plain git command that springs the trap (proof that it is armed).
    raw: list[str]


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def _base(make_repo, sh, name: str) -> Path:
    repo = make_repo(
        name, files={"a.txt": "aaaa\n", ".gitattributes": "*.txt diff=evil filter=evil\n"}
    )
    # Same size, new content and mtime: git must read the file (and so run its filters).
    (repo / "a.txt").write_text("bbbb\n")
    (repo / "new.txt").write_text("new\n")
    return repo


def _config(repo: Path, text: str) -> None:
    with (repo / ".git" / "config").open("a") as fh:
        fh.write(text)


def trap_fsmonitor(make_repo, sh, tmp: Path) -> Trap:
    repo = _base(make_repo, sh, "fsmonitor")
    canary = tmp / "CANARY-fsmonitor"
    hook = _script(tmp / "fsmonitor.sh", f"touch '{canary}'\nexit 1\n")
    _config(repo, f"[core]\n\tfsmonitor = {hook}\n")
    return Trap(repo, canary, ["status"])


def trap_diff_driver(make_repo, sh, tmp: Path) -> Trap:
    repo = _base(make_repo, sh, "diffdriver")
    canary = tmp / "CANARY-diff-driver"
    command = _script(tmp / "extdiff.sh", f"touch '{canary}'\n")
    textconv = _script(tmp / "textconv.sh", f"touch '{canary}'\ncat \"$1\"\n")
    _config(repo, f'[diff "evil"]\n\tcommand = {command}\n\ttextconv = {textconv}\n')
    return Trap(repo, canary, ["diff"])


def trap_diff_external(make_repo, sh, tmp: Path) -> Trap:
    repo = _base(make_repo, sh, "diffexternal")
    canary = tmp / "CANARY-diff-external"
    command = _script(tmp / "external.sh", f"touch '{canary}'\n")
    _config(repo, f"[diff]\n\texternal = {command}\n")
    return Trap(repo, canary, ["diff"])


def trap_filter_clean(make_repo, sh, tmp: Path) -> Trap:
    repo = _base(make_repo, sh, "filterclean")
    canary = tmp / "CANARY-filter-clean"
    filt = _script(tmp / "filter.sh", f"touch '{canary}'\ncat\n")
    _config(repo, f'[filter "evil"]\n\tclean = {filt}\n\tsmudge = {filt}\n\trequired = true\n')
    return Trap(repo, canary, ["diff"])


def trap_filter_process(make_repo, sh, tmp: Path) -> Trap:
    repo = _base(make_repo, sh, "filterprocess")
    canary = tmp / "CANARY-filter-process"
    filt = _script(tmp / "process.sh", f"touch '{canary}'\nexit 1\n")
    _config(repo, f'[filter "evil"]\n\tprocess = {filt}\n')
    return Trap(repo, canary, ["diff"])


def trap_include(make_repo, sh, tmp: Path) -> Trap:
    repo = _base(make_repo, sh, "include")
    canary = tmp / "CANARY-include"
    hook = _script(tmp / "inc-fsmonitor.sh", f"touch '{canary}'\nexit 1\n")
    filt = _script(tmp / "inc-filter.sh", f"touch '{canary}'\ncat\n")
    included = tmp / "evil-include.cfg"
    included.write_text(
        f"[core]\n\tfsmonitor = {hook}\n"
        f'[filter "evil"]\n\tclean = {filt}\n\tsmudge = {filt}\n\trequired = true\n'
        f'[diff "evil"]\n\ttextconv = {filt}\n'
    )
    _config(repo, f"[include]\n\tpath = {included}\n")
    return Trap(repo, canary, ["status"])


def trap_hooks(make_repo, sh, tmp: Path) -> Trap:
    repo = _base(make_repo, sh, "hooks")
    canary = tmp / "CANARY-hooks"
    for name in ("post-index-change", "reference-transaction", "post-checkout", "pre-commit"):
        _script(repo / ".git" / "hooks" / name, f"touch '{canary}'\n")
    # A tracked file whose mtime no longer matches the index makes `git status` refresh and
    # write the index (firing post-index-change) every time, not only when the repository
    # happened to be created within the index's own second.
    for tracked in sh(repo, "ls-files").split():
        st = (repo / tracked).stat()
        os.utime(repo / tracked, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    return Trap(repo, canary, ["status"])


def trap_signature(make_repo, sh, tmp: Path) -> Trap:
    """log.showSignature + gpg.program: a signed commit makes `git log` run the program."""
    repo = _base(make_repo, sh, "signature")
    canary = tmp / "CANARY-signature"
    gpg = _script(tmp / "gpg.sh", f"touch '{canary}'\nexit 1\n")
    raw = sh(repo, "cat-file", "commit", "HEAD")
    header, _, message = raw.partition("\n\n")
    signed = (
        header
        + "\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----"
        + "\n\n"
        + message
    )
    sha = sh(repo, "hash-object", "-t", "commit", "-w", "--stdin", input=signed).strip()
    sh(repo, "update-ref", "HEAD", sha)
    _config(repo, f"[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {gpg}\n")
    return Trap(repo, canary, ["log", "-1"])


TRAPS: dict[str, Callable[..., Trap]] = {
    "fsmonitor": trap_fsmonitor,
    "diff-driver": trap_diff_driver,
    "diff-external": trap_diff_external,
    "filter-clean": trap_filter_clean,
    "filter-process": trap_filter_process,
    "include": trap_include,
    "hooks": trap_hooks,
    "signature": trap_signature,
}


TOOLS: dict[str, dict[str, object]] = {
    "git_status": {},
    "git_diff": {"includePatches": True},
    "git_log": {"limit": 5},
    "git_blame": {"path": "a.txt"},
    "git_checkpoint_create": {"label": "trap"},
    "git_identity_detect": {},
}


@pytest.mark.parametrize("kind", list(TRAPS))
def test_each_trap_is_armed_for_plain_git(kind, make_repo, sh, tmp_path, git_home):
    trap = TRAPS[kind](make_repo, sh, tmp_path)
    subprocess.run(
        ["git", *trap.raw], cwd=trap.repo, env=git_env(git_home), capture_output=True, check=False
    )
    assert trap.canary.exists(), f"plain git {' '.join(trap.raw)} did not spring the {kind} trap"


@pytest.mark.slow
@pytest.mark.parametrize("tool", list(TOOLS))
@pytest.mark.parametrize("kind", list(TRAPS))
async def test_read_tools_and_checkpoint_create_run_no_program(
    kind, tool, git_rt, make_repo, sh, tmp_path
):
    trap = TRAPS[kind](make_repo, sh, tmp_path)
    await call_ok(git_rt, tool, {"cwd": str(trap.repo), **TOOLS[tool]})
    assert not trap.canary.exists(), f"{tool} ran the {kind} program"


@pytest.mark.parametrize("kind", ["diff-driver", "filter-clean", "include"])
async def test_checkpoint_compare_and_restore_run_no_repository_program(
    kind, git_rt, make_repo, sh, tmp_path
):
    trap = TRAPS[kind](make_repo, sh, tmp_path)
    meta = await call_ok(git_rt, "git_checkpoint_create", {"cwd": str(trap.repo)})
    await call_ok(
        git_rt,
        "git_checkpoint_compare",
        {"cwd": str(trap.repo), "left": meta["id"], "includePatch": True},
    )
    (trap.repo / "a.txt").write_text("cccc\n")
    await call_ok(
        git_rt,
        "git_checkpoint_restore",
        {"cwd": str(trap.repo), "id": meta["id"], "confirm": True},
    )
    assert (trap.repo / "a.txt").read_text() == "bbbb\n"
    assert not trap.canary.exists()


async def test_user_scope_programs_are_left_to_the_user(git_rt, make_repo, sh, tmp_path, git_home):
    """A filter the user configured globally (git-lfs style) still runs: it is the user's."""
    marker = tmp_path / "user-filter-ran"
    filt = _script(tmp_path / "user-filter.sh", f"touch '{marker}'\ncat\n")
    with (git_home / ".gitconfig").open("a") as fh:
        fh.write(f'[filter "mine"]\n\tclean = {filt}\n\tsmudge = {filt}\n')
    repo = make_repo(files={".gitattributes": "*.dat filter=mine\n"})
    (repo / "x.dat").write_text("data\n")
    await call_ok(git_rt, "git_stage", {"cwd": str(repo), "paths": ["x.dat"]})
    assert marker.exists()
