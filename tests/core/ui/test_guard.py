"""The console's door: the names it answers to, its secret, cookie and CSRF token."""

from __future__ import annotations

from meith_core.ui.guard import Door


def test_the_door_answers_to_its_own_names_only() -> None:
    door = Door.for_address("192.0.2.7", 8443, extra_hosts=("console.example",), tls=True)
    assert "console.example:8443" in door.hosts
    assert "https://console.example:8443" in door.origins
    assert "evil.example:8443" not in door.hosts
    assert "Secure" in door.set_cookie_header().decode()
    assert door.secret != door.cookie_value != door.csrf
