"""Browser tools through `meith serve` against the same steps done directly with Playwright.

A local page served on 127.0.0.1. Measured in the same run, interleaved round by round,
medians of the repetitions:

- warm round trip, meith:  `open_browser_tab` (load) + `get_browser_state` + `click_element`
                           through a real `meith serve` (browser plugin only) over its Unix
                           socket with the async Python client, on a browser already running.
- warm round trip, direct: the same steps with Playwright's async API in this process, on the
                           same Chromium with the same switches: `new_page` + `goto`, the same
                           element extraction script, and a click on the element handle.
- cold start, meith:       the first `open_browser_tab` of a fresh `meith serve` (Playwright's
                           driver and Chromium start inside that call).
- cold start, direct:      in a fresh interpreter: import Playwright, start it, `launch`,
                           `new_context`, `new_page`, `goto` (the server's first call also
                           imports Playwright, lazily, so the runtime starts without it).
- one-shot CLI (info):     `meith call get_tabs --json` as a separate process, for scale.

Tab cleanup (`close_browser_tab` / `page.close()`) happens outside the timed section.

    python bench/bench_browser.py [--quick] [--reps R] [--cold C]

Writes bench/results/browser.json. Needs a Chromium (see meith_plugins_browser/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from _launch import MeithServer, serve  # bench/ is the script's directory: sys.path[0]

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "browser.json"

TARGET_RATIO = 1.5

PAGE = (
    b"""<!doctype html><html><head><title>Bench</title></head><body>
<nav>"""
    + b"".join(f'<a href="/page.html#{i}">Link {i}</a> '.encode() for i in range(30))
    + b"""</nav>
<form><label>Name <input name="name"></label><label>Mail <input name="mail"></label>
<select name="s"><option>a</option><option>b</option></select><textarea name="t"></textarea></form>
<button id="go" onclick="document.getElementById('out').textContent = 'clicked'">Go</button>
<p id="out"></p>
</body></html>
"""
)


class _Handler(SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        body = PAGE if self.path.startswith("/page.html") else b""
        self.send_response(200 if body else 204)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve_site() -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/page.html"


def start_server(work: Path) -> MeithServer:
    """`meith serve` with only the browser plugin, approved, and a standing cli grant."""
    return serve(work, plugins="browser", grant=("controls-browser",))


def content(result: Any) -> Any:
    if not result.ok:
        raise RuntimeError(f"tool failed: {result.to_wire()}")
    return result.content


async def meith_round(client: Any, url: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    tab = content(await client.call("open_browser_tab", {"url": url}))
    state = content(await client.call("get_browser_state", {"tabId": tab["id"]}))
    go = next(e["id"] for e in state["elements"] if e.get("name") == "Go")
    content(await client.call("click_element", {"tabId": tab["id"], "elementId": go}))
    return time.perf_counter() - t0, tab["id"]


async def direct_round(context: Any, url: str) -> tuple[float, Any]:
    from meith_plugins_browser.elements import MAX_ELEMENTS
    from meith_plugins_browser.scripts import EXTRACT_ELEMENTS

    t0 = time.perf_counter()
    page = await context.new_page()
    await page.goto(url)
    handle = await page.evaluate_handle(EXTRACT_ELEMENTS, {"start": 0, "limit": MAX_ELEMENTS})
    info = await handle.evaluate("(a) => a[0]")
    index = next(i for i, e in enumerate(info["elements"]) if e.get("name") == "Go")
    element = (await handle.evaluate_handle("(a, i) => a[i]", index + 1)).as_element()
    await element.click()
    return time.perf_counter() - t0, page


async def launch_direct(pw: Any, executable: str) -> Any:
    from meith_plugins_browser.executable import IGNORED_DEFAULT_ARGS, LAUNCH_ARGS

    return await pw.chromium.launch(
        executable_path=executable,
        headless=True,
        args=list(LAUNCH_ARGS),
        ignore_default_args=list(IGNORED_DEFAULT_ARGS),
    )


async def cold_meith(work: Path, url: str) -> float:
    from meith_core.client.aio import AsyncClient

    server = start_server(work)
    try:
        async with await AsyncClient.connect(server.socket) as client:
            content(await client.call("get_tabs"))  # the connection itself is warm
            t0 = time.perf_counter()
            content(await client.call("open_browser_tab", {"url": url}))
            return time.perf_counter() - t0
    finally:
        server.stop()


#: Run in a fresh interpreter, like the server's first call: the Playwright import counts.
COLD_DIRECT = """
import asyncio, sys, time
t0 = time.perf_counter()
from playwright.async_api import async_playwright
from meith_plugins_browser.executable import IGNORED_DEFAULT_ARGS, LAUNCH_ARGS

async def main():
    pw = await async_playwright().start()
    browser = await pw.chromium.launch(executable_path=sys.argv[1], headless=True,
        args=list(LAUNCH_ARGS), ignore_default_args=list(IGNORED_DEFAULT_ARGS))
    context = await browser.new_context(accept_downloads=False)
    page = await context.new_page()
    await page.goto(sys.argv[2])
    print(time.perf_counter() - t0)
    await browser.close()
    await pw.stop()

asyncio.run(main())
"""


async def cold_direct(executable: str, url: str) -> float:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", COLD_DIRECT, executable, url, stdout=subprocess.PIPE
    )
    out, _ = await proc.communicate()
    return float(out.decode().strip())


def cli_call(server: MeithServer) -> float:
    t0 = time.perf_counter()
    server.cli("call", "get_tabs", "--json")
    return time.perf_counter() - t0


def ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


async def run(reps: int, cold_reps: int, work: Path) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    from meith_core.client.aio import AsyncClient
    from meith_plugins_browser.executable import find_browser

    site, url = serve_site()
    pw = await async_playwright().start()
    executable = find_browser(playwright_path=pw.chromium.executable_path).path
    browser = await launch_direct(pw, executable)
    context = await browser.new_context(accept_downloads=False)
    server = start_server(work / "warm")
    results: dict[str, Any] = {"executable": executable, "browserVersion": browser.version}
    try:
        async with await AsyncClient.connect(server.socket) as client:
            meith_t: list[float] = []
            direct_t: list[float] = []
            for i in range(reps + 2):  # two warm-up rounds each, dropped
                elapsed, tab_id = await meith_round(client, url)
                content(await client.call("close_browser_tab", {"tabId": tab_id}))
                if i >= 2:
                    meith_t.append(elapsed)
                elapsed, page = await direct_round(context, url)
                await page.close()
                if i >= 2:
                    direct_t.append(elapsed)
            cli_t = [cli_call(server) for _ in range(max(3, reps // 3))]
        results["warm"] = {
            "meith_ms": ms(meith_t),
            "direct_ms": ms(direct_t),
            "ratio": round(statistics.median(meith_t) / statistics.median(direct_t), 2),
            "reps": reps,
        }
        results["cli_one_shot_ms"] = ms(cli_t)
    finally:
        server.stop()
        await browser.close()
        await pw.stop()
        site.shutdown()

    cold_m: list[float] = []
    cold_d: list[float] = []
    site, url = serve_site()
    try:
        for i in range(cold_reps):
            cold_m.append(await cold_meith(work / f"cold{i}", url))
            cold_d.append(await cold_direct(executable, url))
    finally:
        site.shutdown()
    results["cold"] = {
        "meith_ms": ms(cold_m),
        "direct_ms": ms(cold_d),
        "ratio": round(statistics.median(cold_m) / statistics.median(cold_d), 2),
        "reps": cold_reps,
    }
    return results


def no_browser() -> str | None:
    """Why this machine cannot run the benchmark (no Playwright, no Chromium), or None."""
    try:
        from playwright.sync_api import sync_playwright

        from meith_plugins_browser.executable import BrowserNotFoundError, find_browser
    except ImportError as exc:
        return f"cannot import {exc.name}"
    with sync_playwright() as pw:
        path = pw.chromium.executable_path
    try:
        find_browser(playwright_path=path)
    except BrowserNotFoundError as exc:
        return str(exc)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 warm and 1 cold repetitions")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--cold", type=int, default=3)
    args = parser.parse_args()
    reps, cold = (5, 1) if args.quick else (args.reps, args.cold)
    missing = no_browser()
    if missing:
        print(f"skipped: {missing}")
        # A smoke run proves the script still runs; a machine without Chromium cannot say more.
        sys.exit(0 if args.quick else 2)
    with tempfile.TemporaryDirectory(prefix="meith-bench-browser-") as tmp:
        results = asyncio.run(run(reps, cold, Path(tmp)))
    warm, cold_r = results["warm"], results["cold"]
    results["target_ratio"] = TARGET_RATIO
    results["meets_target"] = warm["ratio"] <= TARGET_RATIO
    rows = [
        ("warm open+state+click", warm["meith_ms"], warm["direct_ms"], warm["ratio"]),
        ("cold start (first open)", cold_r["meith_ms"], cold_r["direct_ms"], cold_r["ratio"]),
    ]
    print(f"Chromium {results['browserVersion']} at {results['executable']}")
    print(f"{'':26} {'meith ms':>10} {'direct ms':>10} {'ratio':>7}")
    for name, m, d, r in rows:
        print(f"{name:26} {m:>10} {d:>10} {r:>7}")
    print(f"one-shot `meith call get_tabs` process: {results['cli_one_shot_ms']} ms (info)")
    verdict = "meets" if results["meets_target"] else "MISSES"
    print(f"warm ratio {warm['ratio']} {verdict} the target of {TARGET_RATIO}x")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
