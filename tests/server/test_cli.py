"""The `meith` CLI end to end: output, exit codes, Ctrl-C, help and the admin commands."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness import MEITH, PtyServe, reap, wait_until

# Every test runs the real `meith` CLI in a subprocess against a real runtime.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One probe runtime for the read-only CLI tests of this module."""
    from tests.harness import MeithServer
    from tests.server.probe_plugin import install_probe

    base = tmp_path_factory.mktemp("cli")
    probe_dir = base / "probe"
    probe_dir.mkdir()
    site = install_probe(base / "site")
    env = {
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p
        ),
        "PROBE_DIR": str(probe_dir),
    }
    srv = MeithServer(base / "home", env=env)
    srv.cli_env.update(env)
    srv.approve("probe")
    yield srv
    srv.stop()


def test_string_content_prints_raw_and_other_content_as_indented_json(shared) -> None:
    proc = shared.cli("call", "probe_echo", "--value", "hello")
    assert (proc.returncode, proc.stdout) == (0, "hello\n")
    proc = shared.cli("call", "probe_echo", "--value-json", '{"a": [1, 2]}')
    assert proc.stdout == json.dumps({"a": [1, 2]}, indent=2) + "\n"


def test_empty_content_prints_ok_unless_quiet(shared) -> None:
    assert shared.cli("call", "probe_echo").stdout == "ok\n"
    assert shared.cli("call", "probe_echo", "--quiet").stdout == ""


def test_json_prints_the_raw_envelope(shared) -> None:
    proc = shared.cli("call", "probe_echo", "--value", "7", "--json")
    assert json.loads(proc.stdout) == {"ok": True, "content": 7}


def test_repeated_flags_reach_the_tool_as_an_array(shared) -> None:
    assert json.loads(
        shared.cli("call", "probe_echo", "--value", "a", "--value", "b", "--json").stdout
    )["content"] == ["a", "b"]


def test_stdin_provides_base_arguments_and_flags_override(shared) -> None:
    proc = shared.cli(
        "call", "probe_echo", "--stdin", "--json", input='{"value": "from-stdin", "repeat": 2}'
    )
    assert json.loads(proc.stdout)["content"] == ["from-stdin", "from-stdin"]
    proc = shared.cli(
        "call",
        "probe_echo",
        "--stdin",
        "--value",
        "flag",
        "--json",
        input='{"value": "from-stdin"}',
    )
    assert json.loads(proc.stdout)["content"] == "flag"


def test_partial_text_streams_to_stdout_progress_and_artifacts_to_stderr_logs_only_verbose(
    shared,
) -> None:
    proc = shared.cli("call", "probe_stream", "--count", "3")
    assert proc.stdout == "part0;part1;part2;done\n"
    assert "… step 0 33%" in proc.stderr
    assert "artifact text/plain: note.txt" in proc.stderr
    assert "log 0" not in proc.stderr
    verbose = shared.cli("call", "probe_stream", "--count", "2", "--verbose")
    assert "  [info] log 1" in verbose.stderr


def test_cwd_option_sets_the_working_directory_the_runtime_sees(shared, tmp_path) -> None:
    content = json.loads(
        shared.cli("call", "probe_whoami", "--cwd", str(tmp_path), "--json").stdout
    )["content"]
    assert content["cwd"] == str(tmp_path)
    here = json.loads(shared.cli("call", "probe_whoami", "--json", cwd=str(tmp_path)).stdout)[
        "content"
    ]
    assert here["cwd"] == str(tmp_path)


@pytest.mark.parametrize(
    ("args", "code", "stderr"),
    [
        (["call", "probe_fail"], 1, "error (TOOL_FAILED): probe failure"),
        (["call", "probe_sleep", "--seconds", "soon"], 2, "error (VALIDATION_ERROR): "),
        (["call", "no_such_tool"], 2, "error (UNKNOWN_TOOL): Unknown tool: no_such_tool"),
        (["call", "probe_write"], 4, "error (PERMISSION_DENIED): "),
        (
            ["call", "probe_sleep", "--timeout", "300"],
            5,
            'error (TIMEOUT): Tool "probe_sleep" timed out after 300ms',
        ),
        (["call", "probe_echo", "--timeout", "soon"], 2, "--timeout must be a positive integer"),
        (["call", "probe_echo", "stray"], 2, "unexpected argument 'stray'"),
        (["call", "probe_sleep", "--seconds"], 2, "error: --seconds needs a value (number)"),
        (
            ["call", "probe_echo", "--valeu", "1"],
            2,
            "error: probe_echo has no parameter --valeu. Did you mean --value?",
        ),
        (
            ["call", "probe_echo", "--socket", "/nonexistent/s.sock"],
            3,
            "No meith runtime is listening at /nonexistent/s.sock",
        ),
    ],
)
def test_exit_codes_and_error_lines(shared, args, code, stderr) -> None:
    proc = shared.cli(*args)
    assert proc.returncode == code, proc.stderr
    assert stderr in proc.stderr


def test_ctrl_c_cancels_the_call_and_exits_130(shared) -> None:
    marker = shared.cli_env["PROBE_DIR"] + "/interrupted"
    proc = subprocess.Popen(
        [MEITH, "call", "probe_sleep", "--marker", "interrupted"],
        env=shared.cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert wait_until(
        lambda: '"inFlight": 2' in shared.cli("call", "app_health").stdout or False, 30
    )
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert json.loads(out)["cancelled"] is True  # the runtime's answer arrived before exit
    assert Path(marker).exists()


def test_call_tool_help_shows_parameters_and_capabilities(shared) -> None:
    proc = shared.cli("call", "probe_sleep", "--help")
    assert proc.returncode == 0
    assert "meith call probe_sleep — Sleep until cancelled" in proc.stdout
    assert "Capabilities: read-only" in proc.stdout
    assert "--seconds <number> (optional; default: 60.0)" in proc.stdout
    assert "--marker <string>" in proc.stdout


def test_call_help_without_a_tool_shows_usage_with_examples(shared) -> None:
    proc = shared.cli("call", "--help")
    assert proc.returncode == 0
    assert "Examples:" in proc.stdout
    assert "meith call app_health" in proc.stdout


def test_call_without_a_tool_is_a_usage_error_with_help_on_stderr(shared) -> None:
    proc = shared.cli("call")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Examples:" in proc.stderr
    assert "error: name the tool to call" in proc.stderr


def test_a_misspelt_tool_suggests_the_closest_names(shared) -> None:
    proc = shared.cli("call", "probe_ecoh")
    assert proc.returncode == 2
    assert "Unknown tool: probe_ecoh. Did you mean probe_echo? List the tools" in proc.stderr
    proc = shared.cli("call", "probe_ecoh", "--help")
    assert proc.returncode == 2
    assert "Did you mean probe_echo?" in proc.stderr


def test_error_details_reach_stderr_only_with_verbose(shared) -> None:
    quiet = shared.cli("call", "probe_sleep", "--seconds", "soon")
    assert quiet.returncode == 2
    assert quiet.stderr.strip().count("\n") == 0, quiet.stderr  # the one documented line
    verbose = shared.cli("call", "probe_sleep", "--seconds", "soon", "--verbose")
    assert '"errors"' in verbose.stderr
    as_json = json.loads(shared.cli("call", "probe_sleep", "--seconds", "soon", "--json").stdout)
    assert as_json["error"]["details"]["errors"]


def test_tool_help_shows_a_filled_in_cwd_as_optional(shared) -> None:
    proc = shared.cli("call", "probe_whoami", "--help")
    assert proc.returncode == 0
    if "--cwd" in proc.stdout.split("Parameters:")[1].split("\n\n")[0]:
        assert "--cwd <string> (optional; default: the current directory)" in proc.stdout
        assert "(required)" not in proc.stdout


def test_summaries_are_cut_at_a_boundary_with_an_ellipsis() -> None:
    from meith_core.cli.call import summarise

    text = "Start a dev server in a directory. Its output is kept and streamed to attached readers."
    assert summarise(text, 200) == text
    assert summarise(text, 60) == "Start a dev server in a directory. …"
    cut = summarise("one two three four five six seven eight nine ten", 20)
    assert cut.endswith("…")
    assert cut[:-1] in "one two three four five six seven eight nine ten"
    assert not cut[:-1].endswith(" ")
    assert len(cut) <= 21
    assert summarise("First paragraph\nwrapped.\n\nSecond.", 80) == "First paragraph wrapped."


def test_tools_long_shows_whole_descriptions(shared) -> None:
    proc = shared.cli("tools", "--long")
    assert proc.returncode == 0
    described = json.loads(shared.cli("tools", "--json").stdout)
    longest = max(described, key=lambda t: len(t["description"]))
    words = longest["description"].split()
    assert " ".join(proc.stdout.split()).count(" ".join(words)) == 1


def test_tools_lists_names_capabilities_and_summaries(shared) -> None:
    proc = shared.cli("tools")
    line = next(line for line in proc.stdout.splitlines() if line.startswith("probe_write "))
    assert "writes-files" in line
    assert "A privileged tool" in line
    tools = json.loads(shared.cli("tools", "--json").stdout)
    assert {"name", "description", "inputSchema", "capabilities", "plugin", "timeoutMs"} <= set(
        tools[0]
    )


def test_devlogs_without_the_process_plugin_reports_the_unknown_tool_cleanly(meith_server) -> None:
    srv = meith_server(plugins="core")
    proc = srv.cli("devlogs", "--quiet")
    assert proc.returncode == 2
    assert "error (UNKNOWN_TOOL): Unknown tool: attach_process_logs" in proc.stderr


def test_every_command_has_help_with_an_example() -> None:
    commands = [
        [],
        ["serve"],
        ["call"],
        ["tools"],
        ["devlogs"],
        ["instances"],
        ["stop"],
        ["plugins"],
        ["plugins", "approve"],
        ["plugins", "revoke"],
        ["grants", "list"],
        ["grants", "add"],
        ["grants", "revoke"],
        ["audit"],
        ["settings", "get"],
        ["settings", "set"],
    ]
    for command in commands:
        proc = subprocess.run(
            [MEITH, *command, "--help"], capture_output=True, text=True, timeout=30
        )
        assert proc.returncode == 0, (command, proc.stderr)
        if command:
            assert "Example" in proc.stdout, command


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["tools", "--socket", "/nonexistent.sock"],
        ["call", "app_health", "--socket", "/nonexistent.sock"],
    ],
)
def test_the_client_path_imports_no_plugin_playwright_or_server_module(argv) -> None:
    code = (
        "import sys\n"
        "from meith_core.cli import run\n"
        f"sys.argv = ['meith', *{argv!r}]\n"
        "try:\n"
        "    run()\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('meith_plugins', 'playwright', 'psutil', 'meith_core.serve', 'meith_core.call.pipeline', 'meith_core.policy', "
        "'meith_core.host.plugins', 'structlog', 'pydantic', 'pluggy', 'anyio', 'asyncio')\n"
        "print(sorted({m for m in sys.modules if m.startswith(heavy)}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout + proc.stderr


def test_instances_and_stop(meith_server) -> None:
    a = meith_server(extra_args=("--label", "alpha"))
    b = meith_server(home=a.home.root, extra_args=("--label", "beta"))
    listing = json.loads(a.cli("instances", "--json").stdout)
    assert {r["label"] for r in listing} == {"alpha", "beta"}
    table = a.cli("instances").stdout
    assert "PID" in table
    assert "alpha" in table
    ambiguous = a.cli("stop")
    assert ambiguous.returncode == 2
    assert "Several instances are running" in ambiguous.stderr
    stopped = a.cli("stop", "beta", "--json")
    assert json.loads(stopped.stdout) == {"stopped": [b.pid], "stillRunning": []}
    assert b.proc.wait(timeout=10) == 0
    assert a.cli("stop", "--all").returncode == 0
    assert a.proc.wait(timeout=10) == 0
    assert a.cli("instances").stdout.strip() == "No running meith instances."


def test_an_instance_started_without_a_label_has_none(meith_server) -> None:
    """Not the home folder's name (`.meith` for the default home): all share that."""
    srv = meith_server()
    [record] = json.loads(srv.cli("instances", "--json").stdout)
    assert record["label"] is None
    [_, row] = srv.cli("instances").stdout.splitlines()
    assert row.split()[5] == "-"  # PID, STARTED (date, time, UTC), VERSION, then LABEL


def test_plugins_approve_and_revoke_take_effect_without_a_restart(probe_server) -> None:
    srv = probe_server()
    listing = {p["id"]: p for p in json.loads(srv.cli("plugins", "--json").stdout)}
    probe = listing["probe"]
    assert probe["status"] == "loaded"
    assert probe["approval"]["valid"] is True
    assert set(probe["approval"]["capabilities"]) == {"read-only", "writes-files"}
    assert listing["core"]["approval"]["implicit"] is True
    srv.grant("writes-files", tool="probe_write")
    assert srv.call("probe_write", {"name": "w1"})["ok"] is True
    assert srv.cli("plugins", "revoke", "probe").returncode == 0
    denied = srv.call("probe_write", {"name": "w2"})
    assert denied["error"]["code"] == "PERMISSION_DENIED"
    assert "meith plugins approve probe" in denied["error"]["message"]
    srv.approve("probe", "read-only")  # a partial approval: writes-files still refused
    assert srv.call("probe_write", {"name": "w3"})["error"]["code"] == "PERMISSION_DENIED"
    assert srv.call("probe_echo", {"value": 1})["ok"] is True
    srv.approve("probe")
    assert srv.call("probe_write", {"name": "w4"})["ok"] is True
    human = srv.cli("plugins").stdout
    assert "probe  (meith-probe-plugin 0.1.0)  loaded" in human


def test_a_changed_plugin_shows_its_approval_void(probe_server, probe_env) -> None:
    srv = probe_server()
    site = Path(probe_env["PYTHONPATH"].split(os.pathsep)[0])
    metadata = site / "meith_probe_plugin-0.1.0.dist-info" / "METADATA"
    metadata.write_text(metadata.read_text().replace("Version: 0.1.0", "Version: 0.2.0"))
    # The running runtime still runs the version it loaded, under its approval; it says
    # what is installed now.
    probe = {p["id"]: p for p in json.loads(srv.cli("plugins", "--json").stdout)}["probe"]
    assert probe["approval"]["valid"] is True
    assert probe["installedVersion"] == "0.2.0"
    assert "installed: 0.2.0 (restart the runtime" in srv.cli("plugins").stdout
    srv.stop()  # what a runtime started now would load: the new version, its approval void
    probe = {p["id"]: p for p in json.loads(srv.cli("plugins", "--json").stdout)}["probe"]
    assert probe["approval"]["valid"] is False
    assert probe["approval"]["changes"] == ["version 0.1.0 → 0.2.0"]
    human = srv.cli("plugins").stdout
    assert "VOID" in human
    assert "    changed:   version 0.1.0 → 0.2.0\n" in human


def test_a_plugin_that_gained_a_tool_says_which(probe_server) -> None:
    srv = probe_server()  # approved as the CLI loads it; the runtime started now has one more
    srv.stop()
    srv.cli_env["PROBE_EXTRA_TOOL"] = "1"
    probe = {p["id"]: p for p in json.loads(srv.cli("plugins", "--json").stdout)}["probe"]
    assert probe["approval"]["valid"] is False
    assert probe["approval"]["changes"] == [
        "tool added: probe_spawn (starts-process)",
        "requested capabilities +starts-process",
    ]
    assert "    changed:   tool added: probe_spawn (starts-process)\n" in srv.cli("plugins").stdout


def test_grant_and_plugin_changes_at_the_cli_are_audited(probe_server, tmp_path) -> None:
    srv = probe_server()  # `meith plugins approve probe` ran
    gid = srv.grant("writes-files", tool="probe_write", cwd=str(tmp_path))
    assert srv.call("probe_write", {"name": "w"}, "--cwd", str(tmp_path))["ok"] is True
    assert srv.cli("grants", "revoke", gid).returncode == 0
    assert srv.cli("plugins", "revoke", "probe").returncode == 0
    assert srv.cli("grants", "revoke", gid).returncode == 1  # nothing revoked: nothing recorded
    records = [
        json.loads(line)
        for line in srv.cli("audit", "--json", "-n", "100").stdout.splitlines()
        if '"trust-change"' in line
    ]
    assert [(r["action"], r["reason"].rsplit(" by ", 1)[1]) for r in records] == [
        ("plugin-approved", "the local user (meith plugins approve)"),
        ("grant-added", "the local user (meith grants add)"),
        ("grant-revoked", "the local user (meith grants revoke)"),
        ("plugin-revoked", "the local user (meith plugins revoke)"),
    ]
    assert all((r["caller"], r["sessionId"]) == ("cli", None) for r in records)
    assert records[1]["subject"]["id"] == gid
    assert records[1]["capabilities"] == ["writes-files"]
    assert records[0]["subject"]["tools"]["probe_write"] == ["writes-files"]
    # The table names the change where a call names its tool.
    table = srv.cli("audit").stdout
    assert "grant-added" in table
    assert "plugin-revoked" in table
    # Written by the CLI into the chain the runtime writes too: one chain, intact.
    verified = srv.cli("audit", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_grants_add_list_revoke_and_the_runtime_follows(probe_server, tmp_path) -> None:
    srv = probe_server()
    add = srv.cli(
        "grants",
        "add",
        "--capability",
        "writes-files",
        "--tool",
        "probe_write",
        "--cwd",
        str(tmp_path),
        "--expires",
        "1h",
        "--json",
    )
    grant = json.loads(add.stdout)
    assert grant["cwdPrefix"] == str(tmp_path)
    assert grant["expiresAt"] > time.time() * 1000
    listed = srv.cli("grants", "list").stdout
    assert grant["id"] in listed
    assert srv.call("probe_write", {"name": "in"}, "--cwd", str(tmp_path))["ok"] is True
    assert (
        srv.call("probe_write", {"name": "out"}, "--cwd", "/")["error"]["code"]
        == "PERMISSION_DENIED"
    )
    assert srv.cli("grants", "revoke", grant["id"]).returncode == 0
    assert (
        srv.call("probe_write", {"name": "again"}, "--cwd", str(tmp_path))["error"]["code"]
        == "PERMISSION_DENIED"
    )
    bad = srv.cli("grants", "add", "--capability", "read-only")
    assert bad.returncode == 2
    assert "needs no grant to run" in bad.stderr
    assert "--tool get_audit_log" in bad.stderr


def test_audit_table_filters_and_json(probe_server) -> None:
    srv = probe_server()
    srv.call("probe_echo", {"value": "x", "token": "Bearer abcdefghijklmnopqrstuvwxyz123456"})
    srv.call("probe_write", {"name": "nope"})
    table = srv.cli("audit").stdout
    assert table.splitlines()[0].split() == [
        "TIME", "(UTC)", "CALLER", "AGENT", "TOOL", "DECISION", "OUTCOME", "DURATION", "REASON"
    ]  # fmt: skip
    assert "probe_write" in table
    denied = [
        json.loads(line) for line in srv.cli("audit", "--denied", "--json").stdout.splitlines()
    ]
    assert denied
    assert all(r["decision"] == "deny" for r in denied)
    only_echo = [
        json.loads(line)
        for line in srv.cli(
            "audit", "--tool", "probe_echo", "--json", "-n", "1"
        ).stdout.splitlines()
    ]
    assert len(only_echo) == 1
    assert "abcdefghijklmnopqrstuvwxyz" not in srv.home.audit_path.read_text()


def test_audit_follow_prints_new_entries(probe_server) -> None:
    srv = probe_server()
    follow = subprocess.Popen(
        [MEITH, "audit", "--follow", "--json", "-n", "0"],
        env=srv.cli_env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        # The follower prints what is written after it started; call until it has started.
        assert follow.stdout is not None
        deadline = time.monotonic() + 30
        ready: list[object] = []
        while not ready and time.monotonic() < deadline:
            srv.call("probe_echo", {"value": "followed"})
            ready, _, _ = select.select([follow.stdout], [], [], 1.0)
        assert ready
        record = json.loads(follow.stdout.readline())
        assert record["toolName"] == "probe_echo"
    finally:
        reap(follow)


def test_settings_get_and_set_with_dotted_keys(meith_server) -> None:
    srv = meith_server()
    assert srv.cli("settings", "set", "editor.theme", "dark").returncode == 0
    assert srv.cli("settings", "set", "editor.size", "14").returncode == 0
    assert srv.cli("settings", "get", "editor.theme").stdout == "dark\n"
    assert json.loads(srv.cli("settings", "get", "editor").stdout) == {"theme": "dark", "size": 14}
    assert srv.cli("settings", "set", "editor", "null").returncode == 0
    assert srv.cli("settings", "get", "editor").returncode == 1
    assert srv.call("get_app_settings")["content"] == {"settings": {}}


def test_serve_on_a_terminal_denies_by_default_with_a_hint(probe_env, tmp_path) -> None:
    """The walkthrough's denial step: `meith serve` typed in a terminal does not prompt unless
    asked to, so the CLI is told what to run instead of waiting on a prompt nobody watches."""
    from tests.harness import base_env

    env = base_env(tmp_path / "home", probe_env)
    subprocess.run([MEITH, "plugins", "approve", "probe"], env=env, check=True, capture_output=True)
    serve = PtyServe(env, "--log-format", "json")
    try:
        serve.read_until(b"listening on")
        out, _ = serve.call("probe_write", "--name", "denied").communicate(timeout=60)
        error = json.loads(out)["error"]
        assert error["code"] == "PERMISSION_DENIED"
        assert "meith grants add" in error["message"]
        assert b"Allow?" not in serve.screen
    finally:
        serve.close()


def test_serve_prompt_asks_on_its_terminal_and_the_answer_decides(probe_env, tmp_path) -> None:
    """`--approvals prompt`: the serve terminal (a real PTY) asks; allow once, then deny."""
    from tests.harness import base_env

    home = tmp_path / "home"
    env = base_env(home, probe_env)
    subprocess.run([MEITH, "plugins", "approve", "probe"], env=env, check=True, capture_output=True)
    serve = PtyServe(env, "--approvals", "prompt", "--log-format", "json")
    try:
        serve.read_until(b"listening on")
        call = serve.call("probe_write", "--name", "prompted")
        text = serve.read_until(b"Allow? [o]nce")
        assert "tool          probe_write  (plugin probe)" in text
        assert "capabilities  writes-files" in text
        os.write(serve.fd, b"o\n")
        out, _ = call.communicate(timeout=30)
        assert json.loads(out)["ok"] is True
        serve.screen = b""
        call = serve.call("probe_write", "--name", "refused")
        serve.read_until(b"Allow? [o]nce")
        os.write(serve.fd, b"d\n")
        out, _ = call.communicate(timeout=30)
        assert json.loads(out)["error"]["code"] == "PERMISSION_DENIED"
        audit = [json.loads(line) for line in (home / "audit.jsonl").read_text().splitlines()]
        outcomes = [r for r in audit if r.get("kind") is None]  # not the intent records
        reasons = [r["reason"] for r in outcomes if r["toolName"] == "probe_write"]
        assert reasons == ["approved once at prompt", "denied at prompt"]
    finally:
        serve.close()


def test_a_call_waiting_at_the_serve_prompt_says_so_on_its_own_terminal(
    probe_env, tmp_path
) -> None:
    """The calling CLI is told where its call waits and for how long, while it waits (not only
    once answered), even with --json (a line on stderr)."""
    from tests.harness import base_env

    env = base_env(tmp_path / "home", probe_env)
    subprocess.run([MEITH, "plugins", "approve", "probe"], env=env, check=True, capture_output=True)
    serve = PtyServe(env, "--approvals", "prompt", "--log-format", "json")
    try:
        serve.read_until(b"listening on")
        call = subprocess.Popen(
            [MEITH, "call", "probe_write", "--name", "waiting", "--json"],
            env=serve.cli_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        serve.read_until(b"Allow? [o]nce")
        assert call.stderr is not None
        ready, _, _ = select.select([call.stderr], [], [], 30)
        told = call.stderr.readline() if ready else ""
        os.write(serve.fd, b"o\n")
        _, rest = call.communicate(timeout=30)
        assert told == (
            f"… waiting for approval in the meith serve terminal (pid {serve.pid}): denied after "
            "120 s without an answer\n"
        )
        assert call.returncode == 0, rest
    finally:
        serve.close()


def test_output_into_a_closed_pipe_ends_quietly(meith_server) -> None:
    """`meith tools | head`: a reader that leaves early is no traceback on the terminal."""
    srv = meith_server()
    read, write = os.pipe()
    os.close(read)  # the reader is gone before meith writes a byte
    # Unbuffered (as many shells' environments make Python), the first write meets the pipe.
    env = {**srv.cli_env, "PYTHONUNBUFFERED": "1"}
    try:
        done = subprocess.run(
            [MEITH, "tools"], env=env, stdout=write, stderr=subprocess.PIPE,
            text=True, timeout=60, check=False,
        )  # fmt: skip
    finally:
        os.close(write)
    assert done.returncode == 141
    assert done.stderr == ""


def test_audit_reasons_are_cut_after_a_whole_word() -> None:
    from meith_core.cli.audit import clip

    reason = "denied by the user at the MCP client, who declined (reported by the calling agent)"
    assert clip(reason, 200) == reason
    cut = clip(reason, 40)
    assert cut == "denied by the user at the MCP client…"
    assert len(cut) <= 40
    assert reason.startswith(cut[:-1])
    # One long word (a path) is cut where it must be.
    assert clip("x" * 100, 10) == "x" * 9 + "…"
