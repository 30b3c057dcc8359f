"""The small shared pieces: public API, ids, the one path-containment helper, the home
directory, cancel tokens and caller identities."""

from __future__ import annotations

import inspect
import os
import re
import stat
import threading
from pathlib import Path

import anyio
import pytest

import meith_core
from meith_core import (
    CallerInfo,
    CallerKind,
    CancelToken,
    PathEscapeError,
    is_within,
    resolve_within,
)
from meith_core.base.home import MeithHome, UnsafePathError, default_home, write_json_atomic
from meith_core.base.ids import new_id, new_session_id
from meith_core.host.plugins import hookspecs

# -- public API -------------------------------------------------------------------------

ISSUE_API = [
    "tool",
    "ToolDefinition",
    "ToolContext",
    "CallerInfo",
    "CallerKind",
    "ToolResult",
    "ok_result",
    "error_result",
    "ToolError",
    "ErrorCode",
    "EventKind",
    "hookimpl",
    "Capability",
    "NO_TIMEOUT",
    "Runtime",
    "MeithHome",
    "resolve_within",
    "is_within",
    "PathEscapeError",
]


def test_every_public_name_resolves() -> None:
    for name in meith_core.__all__:
        assert getattr(meith_core, name) is not None, name
    assert set(ISSUE_API) <= set(meith_core.__all__)
    assert set(dir(meith_core)) >= set(ISSUE_API)


def test_an_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        meith_core.not_a_thing  # type: ignore[attr-defined]  # noqa: B018


def test_every_hookspec_is_documented() -> None:
    specs = [
        "meith_tools",
        "meith_settings",
        "meith_startup",
        "meith_shutdown",
        "meith_session_ended",
        "meith_approve",
    ]
    for name in specs:
        doc = inspect.getdoc(getattr(hookspecs, name))
        assert doc, name
        assert len(doc) > 40, name


# -- ids --------------------------------------------------------------------------------


def test_ids_are_prefix_and_12_hex() -> None:
    ids = {new_id("req") for _ in range(1000)}
    assert len(ids) == 1000
    assert all(re.fullmatch(r"req_[0-9a-f]{12}", i) for i in ids)


def test_session_ids_carry_a_full_uuid() -> None:
    sid = new_session_id("cli")
    assert re.fullmatch(r"cli:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", sid)


# -- paths ------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "repo" / "src").mkdir(parents=True)
    (tmp_path / "repo-evil").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "repo" / "out").symlink_to(tmp_path / "outside")
    (tmp_path / "repo" / "inner").symlink_to(tmp_path / "repo" / "src")
    return tmp_path


@pytest.mark.parametrize(
    "candidate",
    ["src", "src/new/file.txt", "./src/../src/x", "inner/x", "", ".", "not/yet/there"],
)
def test_resolve_within_accepts_paths_inside(tree: Path, candidate: str) -> None:
    resolved = resolve_within(tree / "repo", candidate)
    assert is_within(resolved, tree / "repo")
    assert resolved.is_absolute()


@pytest.mark.parametrize(
    "candidate",
    ["..", "../outside", "src/../../outside", "out/x", "out", "../repo-evil/x", "/etc/passwd"],
)
def test_resolve_within_refuses_paths_that_escape(tree: Path, candidate: str) -> None:
    with pytest.raises(PathEscapeError):
        resolve_within(tree / "repo", candidate)


def test_resolve_within_accepts_an_absolute_path_inside(tree: Path) -> None:
    inside = tree / "repo" / "src" / "a.txt"
    assert resolve_within(tree / "repo", str(inside)) == inside.resolve()


def test_a_nul_byte_is_refused(tree: Path) -> None:
    with pytest.raises(PathEscapeError):
        resolve_within(tree / "repo", "src/\0x")
    assert not is_within("/tmp/\0x", "/tmp")


def test_is_within_compares_components_not_prefixes(tree: Path) -> None:
    assert is_within(tree / "repo", tree / "repo")
    assert is_within(tree / "repo" / "src", tree / "repo")
    assert not is_within(tree / "repo-evil", tree / "repo")
    assert not is_within(tree / "repo" / "out", tree / "repo")  # a symlink pointing out
    assert is_within(tree / "repo" / "inner", tree / "repo")


# -- the home directory -------------------------------------------------------------------


def test_meith_home_defaults_to_the_env_then_dot_meith(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEITH_HOME", "/tmp/somewhere")
    assert default_home() == Path("/tmp/somewhere")
    monkeypatch.delenv("MEITH_HOME")
    assert default_home() == Path.home() / ".meith"


def test_ensure_creates_a_private_home(tmp_path: Path) -> None:
    home = MeithHome(tmp_path / "a" / "b").ensure()
    assert stat.S_IMODE(home.root.stat().st_mode) == 0o700


def test_a_home_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(UnsafePathError, match="not a directory"):
        MeithHome(tmp_path / "file").ensure()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand a directory to another user")
def test_a_home_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "theirs"
    other.mkdir(mode=0o700)
    os.chown(other, 65534, 65534)
    with pytest.raises(UnsafePathError, match="owned by uid 65534"):
        MeithHome(other).ensure()


def test_a_symlinked_home_is_followed_and_its_target_made_private(tmp_path: Path) -> None:
    target = tmp_path / "real"
    target.mkdir(mode=0o755)
    target.chmod(0o755)
    (tmp_path / "link").symlink_to(target)
    MeithHome(tmp_path / "link").ensure()
    assert stat.S_IMODE(target.stat().st_mode) == 0o700


def test_json_state_is_written_atomically_and_private(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write_json_atomic(path, {"a": "é"})
    assert path.read_text(encoding="utf-8") == '{\n  "a": "é"\n}\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(TypeError):
        write_json_atomic(path, {"a": object()})
    assert path.read_text(encoding="utf-8") == '{\n  "a": "é"\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


# -- cancel tokens ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_token_cancelled_from_another_thread_wakes_its_waiter() -> None:
    token = CancelToken()
    threading.Timer(0.01, token.cancel, args=("from a thread",)).start()
    with anyio.fail_after(30):
        await token.wait()
    assert token.is_set()
    assert token.reason == "from a thread"


def test_cancel_is_idempotent_and_keeps_the_first_reason() -> None:
    token = CancelToken()
    calls: list[str] = []
    token.add_callback(lambda: calls.append("cb"))
    token.cancel("first")
    token.cancel("second")
    assert token.reason == "first"
    assert calls == ["cb"]


def test_a_callback_added_after_cancel_runs_at_once_and_removers_work() -> None:
    token = CancelToken()
    calls: list[str] = []
    remove = token.add_callback(lambda: calls.append("removed"))
    remove()
    token.cancel()
    token.add_callback(lambda: calls.append("late"))
    assert calls == ["late"]


def test_a_linked_token_follows_its_parent_with_the_reason() -> None:
    parent, child = CancelToken(), CancelToken()
    unlink = child.link(parent)
    parent.cancel("timeout")
    assert child.is_set()
    assert child.reason == "timeout"
    other = CancelToken()
    unlink_other = other.link(CancelToken())
    unlink_other()
    assert not other.is_set()
    unlink()


def test_a_raising_callback_does_not_stop_the_others() -> None:
    token = CancelToken()
    calls: list[str] = []

    def bad() -> None:
        raise RuntimeError("bug")

    token.add_callback(bad)
    token.add_callback(lambda: calls.append("second"))
    token.cancel()
    assert calls == ["second"]


# -- callers ----------------------------------------------------------------------------


def test_caller_kinds_and_trust() -> None:
    assert {k.value for k in CallerKind} == {"cli", "renderer", "agent", "plugin", "internal"}
    assert CallerInfo(CallerKind.RENDERER).trusted
    assert CallerInfo(CallerKind.INTERNAL).trusted
    for kind in ("cli", "agent", "plugin"):
        assert not CallerInfo(CallerKind(kind)).trusted


def test_a_caller_kind_given_as_a_string_is_the_same_kind() -> None:
    assert CallerInfo("renderer").caller is CallerKind.RENDERER  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        CallerInfo("root")  # type: ignore[arg-type]


def test_the_plugin_identity_is_bound_by_the_host() -> None:
    caller = CallerInfo.for_plugin("git", cwd="/w")
    assert caller.caller is CallerKind.PLUGIN
    assert caller.plugin_id == "git"
    assert caller.session_id == "plugin:git"
    assert caller.cwd == "/w"
