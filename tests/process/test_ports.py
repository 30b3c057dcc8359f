"""Which port a dev server serves on, from what it prints."""

from __future__ import annotations

from meith_plugins_process.ports import port_in_chunk, port_in_lines


def test_port_patterns_of_the_original() -> None:
    assert port_in_lines(["  ➜  Local:   http://localhost:5173/"]) == 5173
    assert port_in_lines(["Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ..."]) == 8000
    assert port_in_lines(["ready - started server on 0.0.0.0:3000, url: x"]) == 3000
    assert port_in_lines(["Listening on port 4000"]) == 4000
    assert port_in_lines(["http://[::1]:9999"]) == 9999
    assert port_in_lines(["compiled 42 modules in 1200ms", "no port here"]) is None
    assert port_in_lines(["port 99999"]) is None
    assert port_in_chunk(["nothing", "PORT: 8080"]) == 8080
    assert port_in_chunk([]) is None
