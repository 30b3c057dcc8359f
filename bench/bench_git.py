"""git_status and git_diff (includePatches false) through meith, against raw git, same run.

A generated repository: 20,000 files in 200 directories, committed, then 2,000 of them
modified. Measured in the same run, interleaved, medians of the repetitions:

- raw git:   the commands the tools need, as a user would run them (subprocess from Python):
             status: `git status --porcelain=v2 --branch -z`
             diff:   `git diff --raw --numstat -z HEAD` then `git ls-files --others
                     --exclude-standard -z`
- socket:    the tool through a real `meith serve` (git plugin only) over its Unix socket with
             the Python client, full pipeline (validation, permissions, audit); the result is
             parsed JSON on the client side.
- in-process: `Runtime.call(...)` in this process (no socket), for the plugin's own cost.

The tools run more than the raw commands: discovery (`git rev-parse`, in parallel with
`git config --list` for the hardening) before every call, and they parse the output into
GitStatusResult / GitDiffResult.

    python bench/bench_git.py [--quick] [--files N] [--modified M] [--reps R]

Writes bench/results/git.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _launch import MeithServer, serve  # bench/ is the script's directory: sys.path[0]

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "git.json"

TARGET_RATIO = 1.3


def git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "MEITH_"))}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1")
    return env


def make_repo(work: Path, files: int, modified: int) -> Path:
    home = work / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    repo = work / "repo"
    repo.mkdir()
    env = git_env(home)
    subprocess.run(["git", "init", "-q"], cwd=repo, env=env, check=True)
    per_dir = 100
    for i in range(files):
        d = repo / f"dir{i // per_dir:03d}"
        if i % per_dir == 0:
            d.mkdir()
        (d / f"file{i:05d}.txt").write_text("".join(f"line {j} of file {i}\n" for j in range(20)))
    subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "generated"], cwd=repo, env=env, check=True)
    step = files // modified
    for i in range(0, files, step)[:modified]:
        path = repo / f"dir{i // per_dir:03d}" / f"file{i:05d}.txt"
        path.write_text(path.read_text().replace("line 3 ", "line three ") + "appended\n")
    # Warm the index stat data the way a user's own `git status` would.
    subprocess.run(["git", "status", "-s"], cwd=repo, env=env, check=True, capture_output=True)
    return repo


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def start_server(work: Path, user_home: Path, pythonpath: str | None = None) -> MeithServer:
    """`meith serve` with only the git plugin, git's user config isolated in `user_home`
    (`pythonpath`: where to import meith_core from instead, for --before)."""
    env = {"HOME": str(user_home)} | ({"PYTHONPATH": pythonpath} if pythonpath else {})
    return serve(work, plugins="git", env=env, drop_env=("GIT_", "PYTHONPATH"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 files, 5 repetitions")
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--modified", type=int, default=2_000)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument(
        "--before",
        type=Path,
        metavar="SRC",
        help="also measure a runtime importing meith_core from SRC/meith_core/src (before/after)",
    )
    opts = parser.parse_args()
    if opts.quick:
        opts.files, opts.modified, opts.reps = 2_000, 200, 5

    from meith_core.client import Client

    work = Path(tempfile.mkdtemp(prefix="meith-bench-git-"))
    try:
        t0 = time.perf_counter()
        repo = make_repo(work, opts.files, opts.modified)
        print(
            f"generated {opts.files} files, {opts.modified} modified in {time.perf_counter() - t0:.1f}s"
        )
        env = git_env(work / "home")
        server = start_server(work, work / "home")
        client = Client(server.socket, cwd=str(repo))
        before = before_client = None
        if opts.before is not None:
            src = opts.before / "meith_core" / "src"
            before = start_server(work / "before", work / "home", pythonpath=str(src))
            before_client = Client(before.socket, cwd=str(repo))
        try:
            figures = asyncio.run(measure(repo, env, client, opts, before_client))
        finally:
            for c in (client, before_client):
                if c is not None:
                    c.close()
            for srv in (server, before):
                if srv is not None:
                    srv.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(figures, opts)


def raw_status(repo: Path, env: dict[str, str]) -> None:
    subprocess.run(
        ["git", "status", "--porcelain=v2", "--branch", "-z"],
        cwd=repo, env=env, check=True, capture_output=True,
    )  # fmt: skip


def raw_diff(repo: Path, env: dict[str, str]) -> None:
    subprocess.run(
        ["git", "diff", "--raw", "--numstat", "-z", "HEAD"],
        cwd=repo, env=env, check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "-z"],
        cwd=repo, env=env, check=True, capture_output=True,
    )  # fmt: skip


async def measure(
    repo: Path,
    env: dict[str, str],
    client: Any,
    opts: argparse.Namespace,
    before_client: Any = None,
) -> dict[str, Any]:
    from meith_core.base.home import MeithHome
    from meith_core.host.runtime import Runtime
    from meith_plugins_git.plugin import Plugin

    home = MeithHome(Path(tempfile.mkdtemp(prefix="meith-bench-home-"))).ensure()
    os.environ["HOME"] = env["HOME"]
    runtime = Runtime(home, load_plugins=False, cwd=str(repo))
    await runtime.start()
    runtime.load_plugin("git", Plugin)
    args = {"status": {"cwd": str(repo)}, "diff": {"cwd": str(repo), "includePatches": False}}
    tools = {"status": "git_status", "diff": "git_diff"}
    expected = {"status": opts.modified, "diff": opts.modified}

    def via_socket(kind: str, through: Any = client) -> None:
        res = through.call_raw(tools[kind], args[kind])
        assert res["ok"], res
        assert len(res["content"]["files"]) == expected[kind], len(res["content"]["files"])

    async def in_process(kind: str) -> float:
        t0 = time.perf_counter()
        res = await runtime.call(tools[kind], args[kind])
        elapsed = time.perf_counter() - t0
        assert res.ok, res.error
        assert len(res.content["files"]) == expected[kind]
        return elapsed

    # The pieces, for the breakdown: discovery alone, and git status run with exactly the
    # hardened argv and environment the tool uses (no runtime around it).
    from meith_core import CancelToken
    from meith_plugins_git.discovery import discover
    from meith_plugins_git.runner import READ_ONLY
    from meith_plugins_git.status import STATUS_OPTIONS

    git = runtime.plugins.records["git"].obj.tools.git

    class Ctx:  # what discovery reads from a ToolContext
        cwd = str(repo)
        grant_scope = None
        cancel_token = CancelToken()

        def held_grant(self, *capabilities: str, cwd: str) -> None:
            return None  # no starts-process grant: hooks stay off, as for a read-only caller

    found = await discover(git, Ctx(), str(repo))  # type: ignore[arg-type]
    assert found is not None
    hardened_argv = git.argv(["status"], STATUS_OPTIONS, profile=READ_ONLY, config=found.config)
    hardened_env = git.environment(READ_ONLY)

    def hardened_status() -> None:
        subprocess.run(hardened_argv, cwd=repo, env=hardened_env, check=True, capture_output=True)

    async def discovery() -> float:
        t0 = time.perf_counter()
        await discover(git, Ctx(), str(repo))  # type: ignore[arg-type]
        return time.perf_counter() - t0

    samples: dict[str, dict[str, list[float]]] = {
        k: {"raw": [], "socket": [], "inprocess": []} for k in tools
    }
    samples["status"]["hardened"] = []
    samples["status"]["discovery"] = []
    if before_client is not None:
        for kind in tools:
            samples[kind]["before"] = []
    raws = {"status": lambda: raw_status(repo, env), "diff": lambda: raw_diff(repo, env)}
    for kind in tools:  # warm-up: caches, first imports, the server's first call
        raws[kind]()
        via_socket(kind)
        if before_client is not None:
            via_socket(kind, before_client)
        await in_process(kind)
    for _ in range(opts.reps):
        for kind in tools:
            samples[kind]["raw"].append(timed(raws[kind]))
            samples[kind]["socket"].append(timed(lambda k=kind: via_socket(k)))
            samples[kind]["inprocess"].append(await in_process(kind))
            if before_client is not None:
                samples[kind]["before"].append(timed(lambda k=kind: via_socket(k, before_client)))
        samples["status"]["hardened"].append(timed(hardened_status))
        samples["status"]["discovery"].append(await discovery())
    await runtime.aclose()
    shutil.rmtree(home.root, ignore_errors=True)
    return {
        kind: {name: statistics.median(values) for name, values in by.items()} | {"samples": by}
        for kind, by in samples.items()
    }


def report(figures: dict[str, Any], opts: argparse.Namespace) -> None:
    rows = []
    print(f"\n{opts.files} files, {opts.modified} modified, median of {opts.reps} (ms)")
    print(f"{'tool':<28}{'raw git':>10}{'socket':>10}{'ratio':>8}{'in-proc':>10}{'ratio':>8}")
    out: dict[str, Any] = {
        "files": opts.files,
        "modified": opts.modified,
        "reps": opts.reps,
        "targetRatio": TARGET_RATIO,
        "results": {},
    }
    for kind, name in (("status", "git_status"), ("diff", "git_diff (no patches)")):
        f = figures[kind]
        socket_ratio = f["socket"] / f["raw"]
        inproc_ratio = f["inprocess"] / f["raw"]
        rows.append((name, f["raw"], f["socket"], socket_ratio, f["inprocess"], inproc_ratio))
        if "before" in f:
            print(
                f"{name + ' --before':<28}{'':>10}{f['before'] * 1000:>10.1f}"
                f"{f['before'] / f['raw']:>7.2f}x"
            )
        print(
            f"{name:<28}{f['raw'] * 1000:>10.1f}{f['socket'] * 1000:>10.1f}{socket_ratio:>7.2f}x"
            f"{f['inprocess'] * 1000:>10.1f}{inproc_ratio:>7.2f}x"
        )
        out["results"][kind] = {
            "rawMs": round(f["raw"] * 1000, 2),
            "socketMs": round(f["socket"] * 1000, 2),
            "socketRatio": round(socket_ratio, 3),
            "inProcessMs": round(f["inprocess"] * 1000, 2),
            "inProcessRatio": round(inproc_ratio, 3),
            "withinTarget": socket_ratio <= TARGET_RATIO,
        }
    status = figures["status"]
    print(
        f"\nbreakdown (git_status): hardened argv alone {status['hardened'] * 1000:.1f} ms "
        f"(raw {status['raw'] * 1000:.1f}), discovery {status['discovery'] * 1000:.1f} ms"
    )
    out["results"]["status"]["hardenedArgvMs"] = round(status["hardened"] * 1000, 2)
    out["results"]["status"]["discoveryMs"] = round(status["discovery"] * 1000, 2)
    out["loadAverage"] = os.getloadavg()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"\nwrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
