"""An agent reads another agent's browser tab (what is on the page, its URL's token)."""

from __future__ import annotations

import json
from urllib.parse import quote

from meith_core.doctor.agent import Agent
from meith_core.doctor.corpus import Entry, Needs, Seen
from meith_core.doctor.lab import Lab


def _opened(lab: Lab) -> tuple[Agent, str]:
    owner = lab.agent(lab.dir("tab-owner"), "controls-browser", confined=False)
    page = f"<title>account</title><p>{lab.secret}</p>"
    tab = owner.content("open_browser_tab", {"url": "data:text/html," + quote(page)})
    return owner, str(tab["id"])


def _user(lab: Lab) -> Seen:
    _owner, tab = _opened(lab)
    user = lab.agent(lab.dir("tab-user"), "controls-browser", caller="cli", confined=False)
    state = user.content("get_browser_state", {"tabId": tab})
    return Seen(lab.secret in json.dumps(state), "the local user reads the agent's tab")


def _stranger(lab: Lab) -> Seen:
    owner, tab = _opened(lab)
    stranger = lab.agent(lab.dir("tab-stranger"), "controls-browser", confined=False)
    said = []
    for tool in ("get_browser_state", "take_screenshot", "get_tabs"):
        args = {} if tool == "get_tabs" else {"tabId": tab}
        answer = json.dumps(stranger.call(tool, args).to_wire())
        if lab.secret in answer:
            return Seen(True, f"{tool} showed the page: {answer[:300]}")
        said.append(f"{tool}: {answer[:120]}")
    owner.call("close_browser_tab", {"tabId": tab})
    return Seen(False, " | ".join(said))


ENTRY = Entry(
    id="browser-other-agents-tab",
    wall="sessions",
    attack="Agent A opens a tab on a page holding a secret; agent B, also holding "
    "`controls-browser`, asks for that tab's state and screenshot, and lists the tabs.",
    assertion="B sees nothing of A's tab (the local user may look)",
    control=_user,
    trick=_stranger,
    needs=Needs(plugins=("browser",), browser=True),
)
