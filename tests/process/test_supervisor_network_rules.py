"""Network rules mean what they say, and the walls explain themselves to the model.

An agent session holding `starts-process --cwd REPO` (and `--net` where named) runs real
commands through the real process plugin: `--net any` is the internet, never the host's own
services; a refused connection, name lookup or write is named in the result with the grant
flag that would open it. Loopback listeners on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from meith_core import is_within
from tests.core.confine.support import needs_landlock, needs_namespaces, results
from tests.process.conftest import Proc
from tests.process.sealed import agent, http_server
from tests.process.support import ok

pytestmark = [pytest.mark.anyio, pytest.mark.slow, needs_landlock, needs_namespaces]


async def _run(proc: Proc, caller: Any, repo: Path, shell: str) -> Any:
    result = await proc.rt.call(
        "run_command", {"cwd": str(repo), "shell": shell, "timeoutMs": 60_000}, caller=caller
    )
    return result


async def test_any_means_the_internet_never_the_host_s_own_services(
    proc: Proc, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    with http_server() as port:
        caller = agent(proc, repo, net=("any",))
        via = "--noproxy '' -x http://127.0.0.1:3128"
        targets = {
            "loopback": f"http://127.0.0.1:{port}/",
            "tunnel": f"-p http://127.0.0.1:{port}/",
            "localhost": f"http://localhost:{port}/",
            "mapped": f"-p http://[::ffff:127.0.0.1]:{port}/",
            "upper": f"-p http://LOCALHOST:{port}/",
            "metadata": "http://169.254.169.254/latest/meta-data/",
            "unspecified": f"-p http://0.0.0.0:{port}/",
        }
        steps = [
            f"curl -s -m 10 -o /dev/null -w '{name}:%{{http_code}}\\n' {via} {url}"
            for name, url in targets.items()
        ]
        result = await _run(proc, caller, repo, "; ".join(steps))
    content = ok(result)
    got = results(content["stdout"])
    # A plain request is answered 403; a tunnel's 403 is its CONNECT answer (curl: 000/403).
    for name in targets:
        assert got.get(name) in ("403", "000"), (name, content)
        assert got.get(name) != "200"
    refused = {r["what"]: r for r in content["walls"]["refused"]}
    assert f"127.0.0.1:{port}" in refused, content["walls"]
    assert f"--net 127.0.0.1:{port}" in refused[f"127.0.0.1:{port}"]["open"]
    assert "169.254.169.254:80" in refused, content["walls"]
    audit = [r for r in proc.rt.audit.read() if r.get("outcome") == "NETWORK_REFUSED"]
    assert any(f"127.0.0.1:{port}" in json.dumps(r) for r in audit), audit
    assert all(r["sessionId"] == caller.session_id for r in audit)


async def test_a_refused_name_lookup_is_named_with_the_flag_that_opens_it(
    proc: Proc, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    caller = agent(proc, repo)
    lookup = "import socket; socket.getaddrinfo('pypi.example.org', 443)"
    result = await _run(proc, caller, repo, f'{sys.executable} -c "{lookup}"')
    content = ok(result)
    assert content["exitCode"] != 0
    refused = content["walls"]["refused"]
    assert {"wall": "network", "what": "pypi.example.org (name lookup)"}.items() <= refused[
        0
    ].items(), refused
    assert refused[0]["open"].endswith("--net pypi.example.org"), refused
    assert str(repo) in refused[0]["open"]
    messages = [d.message for d in result.diagnostics or []]
    assert any("meith refused pypi.example.org (name lookup)" in m for m in messages), messages
    audit = [r for r in proc.rt.audit.read() if r.get("outcome") == "NETWORK_REFUSED"]
    assert any("pypi.example.org" in json.dumps(r) for r in audit), audit


async def test_a_lookup_of_an_allowed_name_says_the_proxy_is_the_way(
    proc: Proc, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    caller = agent(proc, repo, net=("pypi.example.org",))
    lookup = "import socket; socket.getaddrinfo('pypi.example.org', 443)"
    content = ok(await _run(proc, caller, repo, f'{sys.executable} -c "{lookup}"'))
    (entry,) = content["walls"]["refused"]
    assert "HTTP proxy" in entry["note"], entry
    assert "open" not in entry
    assert content["walls"]["network"] == ["pypi.example.org"]


async def test_a_write_the_walls_stopped_is_explained(proc: Proc, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    caller = agent(proc, repo)
    result = await _run(proc, caller, repo, f"touch {repo}/inside && touch {outside}/planted")
    content = ok(result)
    assert content["exitCode"] != 0
    assert (repo / "inside").exists()
    assert not (outside / "planted").exists()
    assert str(repo) in content["walls"]["writable"]
    assert "writes" in content["walls"]["inForce"]
    messages = [d.message for d in result.diagnostics or []]
    # Under /tmp (private for the process, holding only its directories) the outside path is
    # not even there; elsewhere the write is refused: each said with the wall that did it.
    if any(is_within(outside, d) for d in ("/tmp", "/var/tmp")):
        assert any("private /tmp" in m and f"{outside}/planted" in m for m in messages), messages
    else:
        assert any("writes wall" in m and f"{outside}/planted" in m for m in messages), messages


async def test_a_command_that_succeeds_gets_no_wall_diagnostics(proc: Proc, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    caller = agent(proc, repo)
    result = await _run(proc, caller, repo, "echo fine; echo 'x: Permission denied /etc/x' >&2")
    content = ok(result)
    assert content["walls"]["refused"] == []
    assert not [d for d in result.diagnostics or [] if "wall" in d.message]
