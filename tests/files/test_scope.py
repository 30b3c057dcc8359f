"""Who may read and write what: the local user reads what the user can; agents and plugins
read their workspace and what their grants cover, never a secret path; writes need the
plugin approved and a grant, and stay inside a confined grant's directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from meith_core import ErrorCode
from meith_core.testing import MeithHarness
from tests.files.conftest import fails, ok

pytestmark = pytest.mark.meith_plugin("files")


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "notes.txt").write_text("private notes\n")
    return other.resolve()


def read_args(where: Path, path: str = "notes.txt") -> dict:
    return {"cwd": str(where), "path": path}


def test_an_agent_reads_its_workspace_but_not_another_directory(
    files: MeithHarness, ws: Path, elsewhere: Path
) -> None:
    (ws / "a.txt").write_text("mine\n")
    agent = files.session("agent", cwd=ws)
    assert (
        ok(files, "workspace_read_file", read_args(ws, "a.txt"), caller=agent)["content"]
        == "mine\n"
    )
    for tool, args in [
        ("workspace_read_file", read_args(elsewhere)),
        ("workspace_list_files", {"cwd": str(elsewhere)}),
        ("workspace_search", {"cwd": str(elsewhere), "query": "private"}),
    ]:
        err = fails(files, tool, args, caller=agent)
        assert err.code == ErrorCode.PERMISSION_DENIED, tool
        assert err.details["reason"] == "outside readable scope"
        assert f"its workspace is {ws}" in err.message
        assert "meith grants add" in err.message  # says how to widen it


def test_the_workspace_is_fixed_when_the_session_opens_not_by_a_calls_cwd(
    files: MeithHarness, ws: Path, elsewhere: Path
) -> None:
    """A call's cwd is a hint (a default for the tool's own `cwd`), never what authorises: an
    agent session opened for `ws` that says it now works in `elsewhere` still reads only `ws`."""
    agent = files.session("agent", cwd=ws).with_cwd(str(elsewhere))
    assert agent.workspace == str(ws)
    err = fails(files, "workspace_read_file", read_args(elsewhere), caller=agent)
    assert err.details["reason"] == "outside readable scope"
    assert f"its workspace is {ws}" in err.message


def test_the_configured_secret_paths_are_what_reads_refuse(files: MeithHarness, ws: Path) -> None:
    """The read tools refuse what the policy setting `confinement.secretPaths` lists (the list
    confined processes are kept out of), not a list of their own."""
    (ws / "vault").mkdir()
    (ws / "vault" / "key.txt").write_text("k\n")
    files.runtime.settings.merge({"confinement": {"secretPaths": [str(ws / "vault")]}})
    agent = files.session("agent", cwd=ws)
    err = fails(files, "workspace_read_file", read_args(ws, "vault/key.txt"), caller=agent)
    assert err.details["reason"] == "secret path"
    assert "confinement.secretPaths" in err.message


def test_the_local_user_reads_outside_the_workspace(
    files: MeithHarness, ws: Path, elsewhere: Path
) -> None:
    cli = files.session("cli", cwd=ws)
    assert ok(files, "workspace_read_file", read_args(elsewhere), caller=cli)["content"] == (
        "private notes\n"
    )


def test_a_grant_confined_to_a_directory_makes_it_readable_for_the_agent(
    files: MeithHarness, ws: Path, elsewhere: Path
) -> None:
    # A session whose workspace is `ws` (not a directory above both): only the grant covers
    # `elsewhere`.
    session = files.session("agent", cwd=ws)
    assert fails(files, "workspace_read_file", read_args(elsewhere), caller=session).details[
        "reason"
    ] == ("outside readable scope")
    agent = files.grant(["writes-files"], caller=session, confine_to=elsewhere)
    assert ok(files, "workspace_read_file", read_args(elsewhere), caller=agent)["content"] == (
        "private notes\n"
    )


def test_a_plugin_caller_reads_only_its_callers_directory(
    files: MeithHarness, ws: Path, elsewhere: Path
) -> None:
    (ws / "a.txt").write_text("a\n")
    assert ok(
        files,
        "workspace_read_file",
        read_args(ws, "a.txt"),
        caller="plugin",
        plugin_id="other",
        cwd=ws,
    )
    err = fails(
        files,
        "workspace_read_file",
        read_args(elsewhere),
        caller="plugin",
        plugin_id="other",
        cwd=ws,
    )
    assert err.code == ErrorCode.PERMISSION_DENIED


def test_secret_paths_are_never_read_by_agents_even_inside_the_workspace(
    files: MeithHarness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "user"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / "code.py").write_text("print('PRIVATE KEY')\n")
    monkeypatch.setenv("HOME", str(home))
    agent = files.session("agent", cwd=home)
    err = fails(files, "workspace_read_file", read_args(home, ".ssh/id_ed25519"), caller=agent)
    assert err.details["reason"] == "secret path"
    listed = ok(
        files, "workspace_list_files", {"cwd": str(home), "includeIgnored": True}, caller=agent
    )
    assert listed["files"] == ["code.py"]
    found = ok(files, "workspace_search", {"cwd": str(home), "query": "PRIVATE KEY"}, caller=agent)
    assert [m["path"] for m in found["matches"]] == ["code.py"]
    cli = files.session("cli", cwd=home)
    assert ok(files, "workspace_read_file", read_args(home, ".ssh/id_ed25519"), caller=cli)


def test_writes_need_the_plugin_approved_and_a_grant(meith: MeithHarness, ws: Path) -> None:
    args = {"cwd": str(ws), "path": "a.txt", "content": "x\n"}
    agent = meith.session("agent", cwd=ws)
    assert fails(meith, "workspace_write_file", args, caller=agent).details["gate"] == "provider"
    meith.approve()
    assert fails(meith, "workspace_write_file", args, caller=agent).details["gate"] == "caller"
    granted = meith.grant(["writes-files"], caller="agent", confine_to=ws).with_cwd(str(ws))
    ok(meith, "workspace_write_file", args, caller=granted)
    assert (ws / "a.txt").read_text() == "x\n"


def test_a_confined_grant_does_not_reach_outside_its_directory(
    files: MeithHarness, ws: Path, elsewhere: Path
) -> None:
    agent = files.grant(["writes-files"], caller="agent", confine_to=ws).with_cwd(str(ws))
    err = fails(
        files,
        "workspace_write_file",
        {"cwd": str(elsewhere), "path": "notes.txt", "content": "overwritten\n"},
        caller=agent,
    )
    assert err.code == ErrorCode.PERMISSION_DENIED
    assert (elsewhere / "notes.txt").read_text() == "private notes\n"


def test_file_contents_and_diffs_are_redacted_to_lengths_in_the_audit_trail(
    files: MeithHarness, ws: Path
) -> None:
    ok(files, "workspace_write_file", {"cwd": str(ws), "path": "a.txt", "content": "TOP-SECRET\n"})
    ok(
        files,
        "workspace_apply_patch",
        {
            "cwd": str(ws),
            "path": "a.txt",
            "edits": [{"oldText": "TOP", "newText": "BOTTOM-SECRET"}],
        },
    )
    ok(files, "workspace_read_file", {"cwd": str(ws), "path": "a.txt"})
    ok(files, "workspace_search", {"cwd": str(ws), "query": "SECRET"})
    records = [r for r in files.audit() if r["toolName"].startswith("workspace_")]
    assert [r["toolName"] for r in records] == [
        "workspace_write_file",
        "workspace_apply_patch",
        "workspace_read_file",
        "workspace_search",
    ]
    trail = repr(records)
    assert "TOP-SECRET" not in trail
    assert "BOTTOM-SECRET" not in trail
    assert "[REDACTED_TEXT 11 chars]" in records[0]["argsSummary"]


def test_old_text_and_context_lines_are_redacted_in_the_audit_trail(
    files: MeithHarness, ws: Path
) -> None:
    (ws / "a.txt").write_text("OLD-PART\nneedle\nCONTEXT-PART\n")
    ok(
        files,
        "workspace_apply_patch",
        {"cwd": str(ws), "path": "a.txt", "edits": [{"oldText": "OLD-PART", "newText": "x"}]},
    )
    ok(files, "workspace_search", {"cwd": str(ws), "query": "needle", "contextLines": 1})
    trail = repr([r for r in files.audit() if r["toolName"].startswith("workspace_")])
    assert "OLD-PART" not in trail
    assert "CONTEXT-PART" not in trail


def test_a_read_only_grant_from_the_python_api_widens_what_an_agent_reads(
    files: MeithHarness, ws: Path, elsewhere: Path
) -> None:
    agent = files.grant(["read-only"], caller="agent", confine_to=elsewhere).with_cwd(str(ws))
    got = ok(files, "workspace_search", {"cwd": str(elsewhere), "query": "private"}, caller=agent)
    assert [m["path"] for m in got["matches"]] == ["notes.txt"]
    err = fails(
        files,
        "workspace_write_file",
        {"cwd": str(elsewhere), "path": "n.txt", "content": "x"},
        caller=agent,
    )
    assert err.code == ErrorCode.PERMISSION_DENIED  # reading is not writing


def test_secret_paths_are_skipped_when_listing_a_subdirectory_above_them(
    files: MeithHarness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "user"
    (home / ".config" / "gh").mkdir(parents=True)
    (home / ".config" / "gh" / "hosts.yml").write_text("oauth_token: SECRET\n")
    (home / ".config" / "app.toml").write_text("x = 1\n")
    monkeypatch.setenv("HOME", str(home))
    agent = files.session("agent", cwd=home)
    listed = ok(files, "workspace_list_files", {"cwd": str(home), "path": ".config"}, caller=agent)
    assert listed["files"] == [".config/app.toml"]
    found = ok(
        files,
        "workspace_search",
        {"cwd": str(home), "path": ".config", "query": "SECRET"},
        caller=agent,
    )
    assert found["matches"] == []


def test_a_refused_read_suggests_the_read_widening_that_then_allows_it(
    files: MeithHarness, ws: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent refused a read is told the narrowest grant that allows it, a read-only one
    for the directory (not `writes-files`), and the command works as told."""
    from typer.testing import CliRunner

    from meith_core.cli.main import app

    agent = files.session("agent", cwd=ws)
    err = fails(files, "workspace_read_file", read_args(elsewhere), caller=agent)
    suggested = f"meith grants add --caller agent --read {elsewhere}"
    assert suggested in err.message
    assert "writes-files" not in err.message
    monkeypatch.setenv("MEITH_HOME", str(files.runtime.home.root))
    done = CliRunner().invoke(app, suggested.split()[1:])
    assert done.exit_code == 0, done.output
    assert f"agent may use read-only under {elsewhere}" in done.output
    assert ok(files, "workspace_read_file", read_args(elsewhere), caller=agent)["content"] == (
        "private notes\n"
    )
    # It widens reads only: the agent still may not write there.
    write = {"cwd": str(elsewhere), "path": "new.txt", "content": "x"}
    assert fails(files, "workspace_write_file", write, caller=agent).code == (
        ErrorCode.PERMISSION_DENIED
    )
