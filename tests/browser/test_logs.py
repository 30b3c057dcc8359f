"""Per-tab console and network entries in bounded buffers."""

from __future__ import annotations

from meith_plugins_browser.logs import ConsoleLog, NetworkLog, console_level


def test_console_levels_follow_the_original_mapping() -> None:
    mapping = {
        "error": "error",
        "assert": "error",
        "warning": "warn",
        "warn": "warn",
        "debug": "debug",
        "verbose": "debug",
        "info": "info",
        "log": "log",
        "table": "log",
        "trace": "log",
    }
    assert {k: console_level(k) for k in mapping} == mapping


def test_ring_buffers_keep_the_last_thousand() -> None:
    console = ConsoleLog()
    for i in range(1500):
        console.add("log", f"line {i}")
    assert len(console) == 1000
    assert console.recent()[0]["text"] == "line 500"
    assert [e["text"] for e in console.recent(2)] == ["line 1498", "line 1499"]
    network = NetworkLog()
    for i in range(1200):
        network.started(i, "GET", f"http://x/{i}", "fetch")
        network.responded(i, 200)
        network.finished(i)
    entries = network.recent()
    assert len(entries) == 1000
    assert entries[0]["id"] == "net-201"
    assert entries[-1]["status"] == 200
    assert entries[-1]["failed"] is False


def test_network_entries_record_failures_and_stay_bounded_for_endless_requests() -> None:
    network = NetworkLog()
    network.started("a", "POST", "http://x/a", None)
    network.finished("a", "net::ERR_CONNECTION_REFUSED")
    (entry,) = network.recent()
    assert entry["failed"] is True
    assert entry["errorText"] == "net::ERR_CONNECTION_REFUSED"
    assert "resourceType" not in entry
    assert entry["durationMs"] >= 0
    for i in range(2500):
        network.started(("open", i), "GET", "http://x/poll", "xhr")
    assert len(network._open) <= 1000
