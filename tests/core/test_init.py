"""The public API (`meith_core/__init__.py`): every name resolves, what plugins need is
exported, the first-party plugins import nothing private, and importing it stays cheap."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

import meith_core
from meith_core import ToolArgs

ROOT = Path(__file__).resolve().parents[2]
CHECKER = ROOT / "scripts" / "check_plugin_imports.py"


@pytest.mark.slow
def test_the_first_party_plugins_import_only_the_public_api() -> None:
    done = subprocess.run(
        [sys.executable, str(CHECKER)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_checker_names_every_private_import(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(
        "from meith_core.base.ids import new_id\nimport meith_core.base.home\nfrom meith_core import _x\n"
        "from meith_core import ToolArgs\n"
    )
    done = subprocess.run(
        [sys.executable, str(CHECKER), str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert [line.split(": imports ")[1].split(";")[0] for line in done.stdout.splitlines()] == [
        "meith_core.base.ids",
        "meith_core.base.home",
        "meith_core._x",
    ]


def test_what_plugins_reinvented_is_exported() -> None:
    for name in [
        "ToolArgs",
        "new_id",
        "ensure_private_dir",
        "write_json_atomic",
        "read_json",
        "PRIVATE_FILE_MODE",
        "MeithHome",
        "PluginHost",
        "PLUGIN_API",
    ]:
        assert name in meith_core.__all__, name
        assert getattr(meith_core, name) is not None


def test_tool_args_rejects_unknown_arguments() -> None:
    class Args(ToolArgs):
        text: str

    assert Args.model_validate({"text": "x"}).text == "x"
    with pytest.raises(ValidationError, match="extra"):
        Args.model_validate({"text": "x", "surprise": 1})
    meith_core.tool(
        lambda ctx, a: a.text,
        name="echo_args",
        description="Echo.",
        input=Args,
        capabilities=["read-only"],
    )


def test_new_id_and_private_files(tmp_path: Path) -> None:
    assert meith_core.new_id("thing").startswith("thing_")
    target = tmp_path / "state"
    meith_core.ensure_private_dir(target)
    assert target.stat().st_mode & 0o777 == 0o700
    meith_core.write_json_atomic(target / "x.json", {"a": 1})
    assert (target / "x.json").stat().st_mode & 0o777 == meith_core.PRIVATE_FILE_MODE
    assert meith_core.read_json(target / "x.json") == {"a": 1}


def test_importing_meith_core_stays_cheap() -> None:
    code = "import sys, meith_core; print(sorted(m for m in ('pydantic', 'pluggy', 'structlog') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


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
