"""What an agent pays for the same work: `meith mcp` against the reference `mcp-server-git` and
Playwright's MCP server.

Both servers are driven by the official MCP SDK client over stdio, in this process, on one
generated repository (2,000 files in 40 directories, committed; 200 modified, 20 of them staged,
20 untracked). For each piece of work the benchmark reports the characters of text content the
model would read, and for status and the diffs the p50 latency of the call, the sides taking turns
call by call:

| work         | meith                                        | mcp-server-git            |
|--------------|----------------------------------------------|---------------------------|
| status       | `git_status`                                 | `git_status`              |
| diff         | `git_diff` (scope unstaged, patches)         | `git_diff_unstaged`       |
| diff_tracked | the same with `includeUntracked: false`      | `git_diff_unstaged`       |
| log          | `git_log` (limit 10)                         | `git_log` (max_count 10)  |

`diff` is each tool's default answer: ours also shows the 20 untracked files (as the original's
`git_diff` does), the peer's leaves them out; `diff_tracked` is the same work on both sides.

The page work: one local page (`bench/pages/app.html`, a task list with navigation, a form and
a table) served on 127.0.0.1, read by `get_browser_state` after `open_browser_tab`, against
`browser_snapshot` after `browser_navigate` of `@playwright/mcp` (both on the same Chromium).

Targets (issue: answers sized for a model, faster than the peer): characters <= 1.0x the
peer's, p50 <= 1.0x the peer's. `meith mcp` answers with the text only by default; a second
bridge started with `--structured` (which adds the structured content, 61 KB for this status)
is timed in the same rounds and reported beside it, for programs that want the machine form. mcp-server-git is a bench dependency and `nox -s bench` installs
`@playwright/mcp` with npm into `bench/.node`; without one of them, or without Chromium, the
benchmark says so and measures meith alone for that part.

    python bench/bench_agent_answers.py [--quick] [--calls N] [--rounds R]

Writes bench/results/agent_answers.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
from _launch import MEITH, serve
from bench_git import git_env  # one git environment for the benchmarks
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "agent_answers.json"
TARGET = 1.0


def make_repo(work: Path, files: int = 2000, modified: int = 200) -> tuple[Path, dict[str, str]]:
    home = work / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    env = git_env(home)
    repo = work / "repo"
    repo.mkdir()
    for i in range(files):
        d = repo / f"pkg{i % 40:02d}"
        d.mkdir(exist_ok=True)
        lines = "".join(f"def f{j}():\n    return {i * 31 + j}\n\n" for j in range(12))
        (d / f"module_{i:04d}.py").write_text(lines)

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "initial")
    for n in range(9):  # some history for git_log
        (repo / "pkg00" / "module_0000.py").write_text(f"# revision {n}\n")
        git("commit", "-qam", f"revise module_0000 ({n})")
    for i in range(1, modified + 1):
        path = repo / f"pkg{i % 40:02d}" / f"module_{i:04d}.py"
        text = path.read_text().replace("return", "return -", 2)
        path.write_text(text + f"# changed {i}\n")
    git("add", *[f"pkg{i % 40:02d}/module_{i:04d}.py" for i in range(1, 21)])
    for i in range(20):
        (repo / "pkg01" / f"new_{i:02d}.py").write_text(f"NEW = {i}\n")
    return repo, env


def _chars(result: Any) -> int:
    if result.is_error:
        raise RuntimeError(f"tool failed: {result.content}")
    return sum(len(block.text) for block in result.content if getattr(block, "text", None))


WORK = {
    "status": (("git_status", {}), ("git_status", {})),
    "diff": (
        ("git_diff", {"scope": "unstaged"}),
        ("git_diff_unstaged", {}),
    ),
    # The peer's diff leaves untracked files out; ours includes them (20 new files here, read
    # and shown whole) unless asked not to. This row is the same work on both sides.
    "diff_tracked": (
        ("git_diff", {"scope": "unstaged", "includeUntracked": False}),
        ("git_diff_unstaged", {}),
    ),
    "log": (("git_log", {"limit": 10}), ("git_log", {"max_count": 10})),
}


#: The work whose latency is measured (log and page: characters only).
TIMED = ("status", "diff", "diff_tracked")


async def _timed(client: Client, name: str, arguments: dict[str, Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        result = await client.call_tool(name, arguments)
        out.append((time.perf_counter() - start) * 1000)
        _chars(result)
    return out


async def measure(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    repo, env = make_repo(work)
    runtime = serve(work / "serve", plugins="git", env={"HOME": env["HOME"]})
    have_peer = importlib.util.find_spec("mcp_server_git") is not None
    out: dict[str, Any] = {"peer": "mcp-server-git" if have_peer else None, "work": {}}
    try:
        meith_env = {**runtime.cli_env, "HOME": env["HOME"], "GIT_CONFIG_NOSYSTEM": "1"}
        meith_params = StdioServerParameters(
            command=MEITH, args=["mcp", "--no-start", "--cwd", str(repo)], env=meith_env
        )
        structured_params = StdioServerParameters(
            command=MEITH,
            args=["mcp", "--no-start", "--cwd", str(repo), "--structured"],
            env=meith_env,
        )
        peer_params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "mcp_server_git", "--repository", str(repo)],
            env=env,
        )
        async with Client(meith_params) as meith, Client(structured_params) as structured:
            peer_cm = Client(peer_params) if have_peer else None
            peer = await peer_cm.__aenter__() if peer_cm is not None else None
            try:
                for work_name, ((m_tool, m_args), (p_tool, p_args)) in WORK.items():
                    m_args = {"cwd": str(repo), **m_args}
                    row: dict[str, Any] = {
                        "meith_chars": _chars(await meith.call_tool(m_tool, m_args))
                    }
                    if peer is not None:
                        p_args = {"repo_path": str(repo), **p_args}
                        row["peer_chars"] = _chars(await peer.call_tool(p_tool, p_args))
                        row["chars_ratio"] = row["meith_chars"] / max(1, row["peer_chars"])
                    if work_name in TIMED:
                        m_times: list[float] = []
                        s_times: list[float] = []
                        p_times: list[float] = []
                        await _timed(meith, m_tool, m_args, args.warmup)
                        await _timed(structured, m_tool, m_args, args.warmup)
                        if peer is not None:
                            await _timed(peer, p_tool, p_args, args.warmup)
                        # One call each in turn: a burst of load from elsewhere on the
                        # machine lands on all three sides alike, not on one side's block.
                        for _ in range(args.rounds * args.calls):
                            m_times += await _timed(meith, m_tool, m_args, 1)
                            s_times += await _timed(structured, m_tool, m_args, 1)
                            if peer is not None:
                                p_times += await _timed(peer, p_tool, p_args, 1)
                        row["meith_p50_ms"] = statistics.median(m_times)
                        row["structured_p50_ms"] = statistics.median(s_times)
                        if p_times:
                            row["peer_p50_ms"] = statistics.median(p_times)
                            row["p50_ratio"] = row["meith_p50_ms"] / row["peer_p50_ms"]
                            row["structured_ratio"] = row["structured_p50_ms"] / row["peer_p50_ms"]
                    out["work"][work_name] = row
            finally:
                if peer_cm is not None:
                    await peer_cm.__aexit__(None, None, None)
    finally:
        runtime.stop()
    return out


class _Pages(SimpleHTTPRequestHandler):
    """bench/pages, quietly."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, directory=str(ROOT / "bench" / "pages"), **kwargs)

    def log_message(self, format: str, *args: Any) -> None:
        pass


PLAYWRIGHT_MCP = ROOT / "bench" / ".node" / "node_modules" / ".bin" / "playwright-mcp"


async def measure_page(work: Path) -> dict[str, Any]:
    """Characters of the page state each server gives a model for the same page."""
    from meith_plugins_browser.executable import BrowserNotFoundError, find_browser

    try:
        chromium = find_browser().path
    except BrowserNotFoundError:
        return {"skipped": "no Chromium"}
    site = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{site.server_address[1]}/app.html"
    runtime = serve(work / "serve-browser", plugins="browser")
    out: dict[str, Any] = {}
    try:
        runtime.approve("browser")
        runtime.grant("controls-browser", caller="agent")
        params = StdioServerParameters(
            command=MEITH,
            args=["mcp", "--no-start", "--tools", "browser"],
            env=dict(runtime.cli_env),
        )
        async with Client(params) as meith:
            tab = await meith.call_tool("open_browser_tab", {"url": url})
            if tab.is_error:
                raise RuntimeError(f"open_browser_tab failed: {tab.content}")
            # It has no rendering: its text is its content as JSON, as an agent reads it.
            opened = json.loads(tab.content[0].text)  # type: ignore[union-attr]
            state = await meith.call_tool("get_browser_state", {"tabId": opened["id"]})
            out["meith_chars"] = _chars(state)
        if PLAYWRIGHT_MCP.exists():
            pw = StdioServerParameters(
                command=str(PLAYWRIGHT_MCP),
                args=["--headless", "--isolated", "--no-sandbox", "--executable-path", chromium],
                env=dict(os.environ),
            )
            async with Client(pw) as peer:
                await peer.call_tool("browser_navigate", {"url": url})
                out["peer_chars"] = _chars(await peer.call_tool("browser_snapshot", {}))
                out["chars_ratio"] = out["meith_chars"] / max(1, out["peer_chars"])
        else:
            out["peer"] = "@playwright/mcp not installed (nox -s bench installs it)"
    finally:
        runtime.stop()
        site.shutdown()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls (a smoke run)")
    parser.add_argument("--calls", type=int, default=20, help="calls per side per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    if args.quick:
        args.calls, args.rounds, args.warmup = 2, 1, 1
    with tempfile.TemporaryDirectory(prefix="meith-bench-answers-") as tmp:
        result = anyio.run(measure, args, Path(tmp))
        result["page"] = anyio.run(measure_page, Path(tmp))
    peer = result["peer"]
    print(f"git work through MCP stdio: meith mcp vs {peer or '(mcp-server-git not installed)'}")
    for name, row in result["work"].items():
        line = f"  {name:12} chars: meith {row['meith_chars']:>7,}"
        if "peer_chars" in row:
            line += f"  peer {row['peer_chars']:>7,}  ratio {row['chars_ratio']:.2f}x"
        if "meith_p50_ms" in row:
            line += f"   p50: meith {row['meith_p50_ms']:.1f} ms"
            if "peer_p50_ms" in row:
                line += f"  peer {row['peer_p50_ms']:.1f} ms  ratio {row['p50_ratio']:.2f}x"
            line += f"\n{'':22}--structured: meith {row['structured_p50_ms']:.1f} ms"
            if "structured_ratio" in row:
                line += f"  ratio {row['structured_ratio']:.2f}x"
        print(line)
    page = result["page"]
    if "meith_chars" in page:
        line = f"  page         chars: meith {page['meith_chars']:>7,}"
        if "peer_chars" in page:
            line += f"  @playwright/mcp {page['peer_chars']:>7,}  ratio {page['chars_ratio']:.2f}x"
        else:
            line += f"  ({page.get('peer')})"
        print(line)
    else:
        print(f"  page: skipped ({page.get('skipped')})")
    print(f"  targets: <= {TARGET}x the peer's characters and p50")
    print(f"  load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
