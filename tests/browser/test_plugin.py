"""What the plugin declares: the twenty tools in the original order, with their capabilities."""

from __future__ import annotations

from meith_plugins_browser.plugin import Plugin


def test_the_twenty_tools_in_the_original_order_with_their_capabilities() -> None:
    tools = Plugin().meith_tools()
    caps = {t.name: sorted(c.value for c in t.capabilities) for t in tools}
    assert [t.name for t in tools] == [
        "get_tabs", "get_active_tab", "open_browser_tab", "navigate", "go_back", "go_forward",
        "refresh", "focus_browser_tab", "close_browser_tab", "browser_use_start",
        "browser_use_end", "take_screenshot", "get_browser_state", "click_element", "type_text",
        "scroll_page", "send_keys", "cdp_command", "get_console_logs", "get_network_logs",
    ]  # fmt: skip
    control = ["controls-browser"]
    assert caps["get_tabs"] == caps["get_active_tab"] == caps["get_console_logs"] == ["read-only"]
    for name in (
        "open_browser_tab", "navigate", "go_back", "go_forward", "refresh", "focus_browser_tab",
        "close_browser_tab", "browser_use_start", "browser_use_end", "click_element",
        "type_text", "scroll_page", "send_keys",
    ):  # fmt: skip
        assert caps[name] == control, name
    assert caps["take_screenshot"] == caps["get_browser_state"] == ["controls-browser", "read-only"]
    assert caps["cdp_command"] == ["accesses-network", "controls-browser"]
    assert caps["get_network_logs"] == ["accesses-network", "read-only"]
    for t in tools:
        assert t.description
        assert t.input_schema["additionalProperties"] is False
