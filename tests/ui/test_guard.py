"""The console's door, over real HTTP against a real `meith ui`: the secret buys a cookie;
without the cookie, with a foreign Host or Origin, or a state-changing request without its
CSRF token, nothing is served or changed."""

from __future__ import annotations

import json

import pytest

from tests.ui.conftest import Console, login, request

pytestmark = pytest.mark.slow


def test_the_secret_buys_a_cookie_and_nothing_is_served_without_it(console: Console) -> None:
    for path in ("/", "/api/grants", "/static/console.js", "/api/events"):
        status, _, body = request(console, "GET", path)
        assert status == 401, path
        assert b"no console cookie" in body
    status, _, _ = request(console, "GET", "/?k=wrong-secret")
    assert status == 401
    cookie, _csrf = login(console)
    status, _, _ = request(console, "GET", "/api/grants", headers={"Cookie": cookie})
    assert status == 200
    status, _, _ = request(console, "GET", "/api/grants", headers={"Cookie": "meith_ui=forged"})
    assert status == 401


def test_a_foreign_host_or_origin_is_refused(console: Console) -> None:
    cookie, csrf = login(console)
    port = console.host.rsplit(":", 1)[1]
    # DNS rebinding: the attacker's name resolved to 127.0.0.1, the browser sends that name.
    for host in (f"evil.example:{port}", "127.0.0.1:1", "evil.example"):
        status, _, _ = request(console, "GET", "/", headers={"Host": host, "Cookie": cookie})
        assert status == 421, host
    # The secret is not accepted under a foreign Host either.
    status, _, _ = request(
        console, "GET", f"/?k={console.secret}", headers={"Host": f"evil.example:{port}"}
    )
    assert status == 421
    status, _, _ = request(
        console, "GET", "/api/grants", headers={"Cookie": cookie, "Origin": "http://evil.example"}
    )
    assert status == 403
    status, _, _ = request(
        console,
        "POST",
        "/api/grants",
        headers={"Cookie": cookie, "Origin": "http://evil.example", "X-Meith-CSRF": csrf},
        body={"caller": "agent", "capabilities": ["writes-files"]},
    )
    assert status == 403
    status, _, _ = request(
        console, "GET", "/api/grants", headers={"Cookie": cookie, "Sec-Fetch-Site": "cross-site"}
    )
    assert status == 403
    status, _, body = request(console, "GET", "/api/grants", headers={"Cookie": cookie})
    assert json.loads(body)["grants"] == []


def test_a_replayed_form_without_its_csrf_token_changes_nothing(console: Console) -> None:
    cookie, csrf = login(console)
    origin = f"http://{console.host}"
    form = {"caller": "agent", "capabilities": ["writes-files"], "tool": "probe_write"}
    for headers in (
        {"Cookie": cookie, "Origin": origin},
        {"Cookie": cookie, "Origin": origin, "X-Meith-CSRF": "guessed"},
        {"Cookie": cookie, "X-Meith-CSRF": csrf},  # no Origin: refused too
    ):
        status, _, body = request(console, "POST", "/api/grants", headers=headers, body=form)
        assert status == 403, (headers, body)
    status, _, body = request(console, "GET", "/api/grants", headers={"Cookie": cookie})
    assert json.loads(body)["grants"] == []
    headers = {"Cookie": cookie, "Origin": origin, "X-Meith-CSRF": csrf}
    status, _, body = request(console, "POST", "/api/grants", headers=headers, body=form)
    assert status == 200, body
    status, _, body = request(console, "GET", "/api/grants", headers={"Cookie": cookie})
    (grant,) = json.loads(body)["grants"]
    assert (grant["caller"], grant["tool"], grant["capabilities"]) == (
        "agent",
        "probe_write",
        ["writes-files"],
    )
