"""`$MEITH_HOME/settings.json`: shallow merge, None removes, validated sections, atomic
private writes, and a read-only view for tools."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from meith_core import Runtime, ToolContext
from meith_core.host.settings import MAX_SETTINGS_BYTES, SettingsError, SettingsStore
from tests.core.support import NoArgs, make_tool


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    email: str | None = None


class GitSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    profiles: list[Profile] = []
    active: str | None = None


@pytest.fixture
def store(tmp_path: Path) -> SettingsStore:
    s = SettingsStore(tmp_path / "settings.json")
    s.register_section("git", GitSettings)
    return s


def on_disk(store: SettingsStore) -> Any:
    return json.loads(store.path.read_text())


def test_an_absent_file_reads_as_empty(store: SettingsStore) -> None:
    assert store.load() == {}
    assert dict(store.snapshot()) == {}


def test_merge_is_shallow_top_level_keys_replace(store: SettingsStore) -> None:
    store.merge({"ui": {"theme": "dark", "font": 12}, "other": 1})
    store.merge({"ui": {"theme": "light"}})
    assert on_disk(store) == {"ui": {"theme": "light"}, "other": 1}


def test_a_key_set_to_none_is_removed(store: SettingsStore) -> None:
    store.merge({"a": 1, "b": 2})
    assert store.merge({"a": None, "missing": None}) == {"b": 2}
    assert on_disk(store) == {"b": 2}


def test_a_declared_section_is_validated_and_normalised(store: SettingsStore) -> None:
    store.merge({"git": {"profiles": [{"name": "work", "email": "w@x.org"}, {"name": "home"}]}})
    assert on_disk(store)["git"] == {
        "profiles": [{"name": "work", "email": "w@x.org"}, {"name": "home"}]
    }


@pytest.mark.parametrize(
    "bad",
    [
        {"git": {"profiles": [{"name": ""}]}},
        {"git": {"profiles": "work"}},
        {"git": {"unknown": True}},
        {"git": "not an object"},
    ],
)
def test_an_invalid_section_is_refused_and_nothing_is_written(
    store: SettingsStore, bad: dict[str, Any]
) -> None:
    store.merge({"git": {"active": "work"}, "keep": True})
    before = store.path.read_bytes()
    with pytest.raises(SettingsError, match=r"invalid setting git"):
        store.merge({**bad, "keep": False})
    assert store.path.read_bytes() == before


def test_undeclared_sections_are_kept_as_given(store: SettingsStore) -> None:
    store.merge({"plugin_x": {"anything": [1, {"a": None}]}})
    assert on_disk(store)["plugin_x"] == {"anything": [1, {"a": None}]}


@pytest.mark.parametrize("bad", [{"s": {1, 2}}, {"n": float("nan")}, {"o": object()}])
def test_values_that_are_not_json_are_refused(store: SettingsStore, bad: dict[str, Any]) -> None:
    with pytest.raises(SettingsError, match="plain JSON"):
        store.merge(bad)
    assert not store.path.exists()


def test_settings_larger_than_the_limit_are_refused(store: SettingsStore) -> None:
    with pytest.raises(SettingsError, match="limit"):
        store.merge({"big": "x" * (MAX_SETTINGS_BYTES + 1)})
    assert not store.path.exists()


def test_a_patch_must_be_an_object(store: SettingsStore) -> None:
    with pytest.raises(SettingsError):
        store.merge(["a"])  # type: ignore[arg-type]


def test_writes_are_atomic_private_and_leave_no_temporary_files(store: SettingsStore) -> None:
    store.merge({"a": 1})
    inode = store.path.stat().st_ino
    store.merge({"b": 2})
    assert store.path.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert sorted(p.name for p in store.path.parent.iterdir()) == ["settings.json"]


def test_a_failed_write_leaves_the_old_file_whole(
    store: SettingsStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.merge({"a": 1})
    before = store.path.read_bytes()

    def failing_replace(src: Any, dst: Any, **kw: Any) -> None:
        raise OSError(28, "No space left on device")

    # Simulated disk failure at the final rename (cannot be provoked for real here).
    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="No space"):
        store.merge({"a": 2})
    monkeypatch.undo()
    assert store.path.read_bytes() == before
    assert sorted(p.name for p in store.path.parent.iterdir()) == ["settings.json"]


def test_a_corrupt_settings_file_is_not_overwritten_by_a_merge(store: SettingsStore) -> None:
    store.path.write_text('{"git": {"active": "work"}, oops')
    assert store.load() == {}  # readers see no settings...
    with pytest.raises(SettingsError, match="not valid JSON"):
        store.merge({"ui": 1})  # ...but a merge must not destroy what the user wrote
    assert store.path.read_text() == '{"git": {"active": "work"}, oops'


def test_the_snapshot_is_read_only_all_the_way_down(store: SettingsStore) -> None:
    store.merge({"git": {"profiles": [{"name": "work"}]}, "flags": ["a", "b"]})
    snap = store.snapshot()
    with pytest.raises(TypeError):
        snap["new"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        snap["git"]["active"] = "x"
    with pytest.raises((TypeError, AttributeError)):
        snap["flags"].append("c")
    with pytest.raises(TypeError):
        snap["git"]["profiles"][0]["name"] = "evil"
    assert on_disk(store)["git"] == {"profiles": [{"name": "work"}]}


def test_load_returns_a_private_copy(store: SettingsStore) -> None:
    store.merge({"a": {"b": 1}})
    copy = store.load()
    copy["a"]["b"] = 2
    assert store.load() == {"a": {"b": 1}}


def test_edits_by_another_process_are_seen_without_restart(store: SettingsStore) -> None:
    store.merge({"a": 1})
    assert store.snapshot()["a"] == 1
    other = SettingsStore(store.path)  # e.g. `meith settings set` in another process
    other.merge({"a": 2})
    assert store.snapshot()["a"] == 2


@pytest.mark.anyio
async def test_tools_read_settings_through_ctx_settings(runtime: Runtime) -> None:
    seen: list[Any] = []

    async def read_settings(ctx: ToolContext, args: NoArgs) -> Any:
        seen.append(ctx.settings)
        return ctx.settings.get("ui")

    runtime.register(make_tool(read_settings))
    assert (await runtime.call("read_settings")).content is None
    runtime.settings.merge({"ui": {"theme": "dark"}})
    assert (await runtime.call("read_settings")).content == {"theme": "dark"}
    with pytest.raises(TypeError):
        seen[-1]["ui"] = {}


def test_get_returns_the_stored_value_else_the_sections_documented_default(
    store: SettingsStore,
) -> None:
    assert store.get("git.active") is None  # declared, never set: its default
    assert store.get("git.profiles") == []
    with pytest.raises(KeyError):
        store.get("git.nope")
    with pytest.raises(KeyError):
        store.get("undeclared.key")
    store.merge({"git": {"active": "work"}, "ui": {"theme": "dark"}})
    assert store.get("git.active") == "work"
    assert store.get("ui.theme") == "dark"


@pytest.mark.slow
def test_meith_settings_get_on_a_fresh_home_prints_the_default(tmp_path: Path) -> None:
    import subprocess

    from tests.harness import MEITH, base_env

    env = base_env(tmp_path / "fresh-home")
    got = subprocess.run(
        [MEITH, "settings", "get", "git.activeIdentityProfileId"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (got.returncode, got.stdout) == (0, "null\n"), got.stderr
    missing = subprocess.run(
        [MEITH, "settings", "get", "git.noSuchKey"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert missing.returncode != 0
    assert "No setting" in missing.stderr
