"""Which URLs the navigation tools may open."""

from __future__ import annotations

import pytest

from meith_core import ErrorCode, ToolError
from meith_plugins_browser.urls import check_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:3000/x", "http://127.0.0.1:3000/x"),
        ("HTTPS://example.com", "HTTPS://example.com"),
        ("  http://example.com/\n", "http://example.com/"),
        ("about:blank", "about:blank"),
        ("about:blank#top", "about:blank#top"),
        ("data:text/html,<p>hi", "data:text/html,<p>hi"),
    ],
)
def test_allowed_urls_come_back_cleaned(url: str, expected: str) -> None:
    assert check_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "view-source:http://x/",
        "chrome://settings",
        "javascript:alert(1)",
        " \x00javascript:alert(1)",
        "jav\nascript:alert(1)",
        "about:version",
        "blob:http://x/y",
        "ws://x/",
        "localhost:3000",
        "example.com",
        "http://",
        "http:///path",
        "http://[::1",
    ],
)
def test_other_urls_are_validation_errors(url: str) -> None:
    with pytest.raises(ToolError) as err:
        check_url(url)
    assert err.value.code is ErrorCode.VALIDATION_ERROR


def test_extra_schemes_widen_the_policy() -> None:
    assert check_url("file:///tmp/x.html", ["file"]) == "file:///tmp/x.html"
    assert check_url("about:version", ["about"]) == "about:version"
    with pytest.raises(ToolError):
        check_url("chrome://settings", ["file"])
