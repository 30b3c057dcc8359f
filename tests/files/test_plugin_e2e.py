"""The loop end to end: a real `meith serve` with the files plugin, driven by `meith call`,
with the plugin approved and the grant given through the CLI; undo across a restart."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.readme import readme_block

pytestmark = pytest.mark.slow


def ok(srv, tool: str, args: dict) -> dict:
    envelope = srv.call(tool, args)
    assert envelope["ok"], (tool, envelope)
    return envelope["content"]


def test_read_search_edit_undo_through_meith_serve_and_the_cli(
    meith_server, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    cwd = str(ws)
    home = tmp_path / "home"
    srv = meith_server(home=home, plugins="files")

    denied = srv.call("workspace_write_file", {"cwd": cwd, "path": "x.txt", "content": "x"})
    assert denied["error"]["code"] == "PERMISSION_DENIED"
    assert denied["error"]["details"]["gate"] == "provider"
    srv.approve("files")
    denied = srv.call("workspace_write_file", {"cwd": cwd, "path": "x.txt", "content": "x"})
    assert denied["error"]["details"]["gate"] == "caller"
    srv.grant("writes-files", cwd=cwd)

    hits = ok(srv, "workspace_search", {"cwd": cwd, "query": "a - b"})
    assert hits["matches"] == [
        {"path": "src/calc.py", "line": 2, "column": 12, "text": "    return a - b"}
    ]
    read = ok(srv, "workspace_read_file", {"cwd": cwd, "path": "src/calc.py"})
    assert read["totalLines"] == 2
    dry = ok(
        srv,
        "workspace_apply_patch",
        {
            "cwd": cwd,
            "path": "src/calc.py",
            "edits": [{"oldText": "a - b", "newText": "a + b"}],
            "dryRun": True,
        },
    )
    assert "+    return a + b\n" in dry["diff"]
    assert (ws / "src" / "calc.py").read_text().endswith("a - b\n")
    done = ok(
        srv,
        "workspace_apply_patch",
        {
            "cwd": cwd,
            "path": "src/calc.py",
            "edits": [{"oldText": "a - b", "newText": "a + b"}],
            "expectedSha256": read["sha256"],
        },
    )
    assert done["undoSteps"] == 1
    assert (ws / "src" / "calc.py").read_text().endswith("a + b\n")
    assert ok(srv, "workspace_list_files", {"cwd": cwd})["files"] == ["src/calc.py"]

    srv.stop()
    again = meith_server(home=home, plugins="files")
    undone = ok(again, "workspace_undo", {"cwd": cwd, "path": "src/calc.py"})
    assert undone["undoSteps"] == 0
    assert (ws / "src" / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    records = [r for r in again.audit_records() if r["toolName"] == "workspace_undo"]
    assert [r["decision"] for r in records] == ["allow"]


def test_the_readme_files_block_runs_as_written(meith_server, tmp_path: Path) -> None:
    block = readme_block("meith call workspace_search --query", "sh")
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "cart.py").write_text("def total(items):\n    return sum(items)\n")
    srv = meith_server(plugins="files")
    outputs = []
    for line in block.text.splitlines():
        argv = shlex.split(line)
        assert argv[0] == "meith"
        done = srv.cli(*argv[1:], cwd=str(ws))
        assert done.returncode == 0, (line, done.stdout, done.stderr)
        outputs.append(done.stdout)
    found = json.loads(outputs[-1])
    assert found["matches"] == [
        {"path": "src/cart.py", "line": 1, "column": 1, "text": "def total(items):"}
    ]


def test_a_socket_caller_gets_the_text_only_when_it_asks(meith_server, tmp_path: Path) -> None:
    """The rendered text (what a model reads) doubles a large read: a program reading
    `content` does not pay for it; a caller that asks (`withText`) gets both, and one that
    reads only the text (`textOnly`) gets only the text."""
    from meith_core.client import Client

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\ny = 2\n")
    srv = meith_server(plugins="files")
    with Client(srv.socket, cwd=str(ws)) as client:
        plain = client.call_raw("workspace_read_file", {"path": "a.py"})
        assert plain["ok"] is True
        assert "text" not in plain
        assert plain["content"]["content"] == "x = 1\ny = 2\n"
        asked = client.call_raw("workspace_read_file", {"path": "a.py"}, with_text=True)
        assert asked["text"].splitlines()[1:] == ["1\tx = 1", "2\ty = 2"]
        assert asked["content"] == plain["content"]
        # A caller that reads only the text (the MCP bridge without --structured) is sent
        # only the text; a tool with no rendering still answers with its content.
        text_only = client.call_raw("workspace_read_file", {"path": "a.py"}, text_only=True)
        assert (text_only["text"], "content" in text_only) == (asked["text"], False)
        unrendered = client.call_raw("list_plugins", {}, text_only=True)
        assert isinstance(unrendered["content"], list)
        assert "text" not in unrendered
