"""The one access rule, without a browser: who may read or control a tab, claim and release it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from meith_core import CallerInfo, CallerKind, ErrorCode, ToolError
from meith_plugins_browser.ownership import Access, Controller, check_access, check_release, claim
from tests.browser.support import owned


@dataclass
class FakeTab:
    id: str = "btab_1"
    owner_id: str | None = None


def test_owner_identity_comes_from_the_trusted_session() -> None:
    agent = CallerInfo(caller=CallerKind.AGENT, session_id="agent:1")
    assert Controller.of(agent) == Controller(
        "agent:1", require_claim=True, may_force=False, may_watch=False, principal="agent:1"
    )
    plugin = CallerInfo.for_plugin("probe")
    assert Controller.of(plugin).owner_id == Controller.of(plugin).principal == "plugin:probe"
    assert Controller.of(plugin).require_claim
    assert not Controller.of(plugin).may_watch
    internal = CallerInfo(caller=CallerKind.INTERNAL)
    assert Controller.of(internal) == Controller(
        "internal", require_claim=False, may_force=True, may_watch=True, principal="internal"
    )
    cli = CallerInfo(caller=CallerKind.CLI, session_id="socket:abc")
    assert not Controller.of(cli).require_claim
    # A claim is the connection's; element ids and CDP state are the local user's.
    assert (Controller.of(cli).owner_id, Controller.of(cli).principal) == ("socket:abc", "cli")
    assert Controller.of(cli).may_watch


def test_a_claimed_tab_is_readable_by_its_owner_and_the_local_user_only() -> None:
    tab = FakeTab()
    owner = Controller.of(CallerInfo(caller=CallerKind.AGENT, session_id="agent:1"))
    stranger = Controller.of(CallerInfo(caller=CallerKind.AGENT, session_id="agent:2"))
    peer = Controller.of(CallerInfo(caller=CallerKind.PLUGIN, session_id="socket:p"))
    user = Controller.of(CallerInfo(caller=CallerKind.CLI, session_id="socket:u"))
    for ctl in (owner, stranger, peer, user):  # an unclaimed tab is open to read
        check_access(tab, ctl, Access.READ)
    claim(tab, owner)
    for ctl in (owner, user):
        check_access(tab, ctl, Access.READ)
    for ctl in (stranger, peer):
        with pytest.raises(ToolError) as err:
            check_access(tab, ctl, Access.READ)
        assert err.value.code is ErrorCode.PERMISSION_DENIED
        assert owned(err.value.details) == {"tabId": "btab_1", "ownerId": "agent:1"}
    with pytest.raises(ToolError):
        check_access(tab, user, Access.CONTROL)  # watching is not controlling


def test_claim_control_release_rules() -> None:
    a = Controller("a", require_claim=True, may_force=False)
    b = Controller("b", require_claim=True, may_force=False)
    root = Controller("internal", require_claim=False, may_force=True)
    tab = FakeTab()
    with pytest.raises(ToolError) as err:
        check_access(tab, a, Access.CONTROL)
    assert err.value.details == {"tabId": "btab_1", "reason": "claim_required", "gate": "claim"}
    check_access(tab, root, Access.CONTROL)
    claim(tab, a)
    claim(tab, a)
    assert tab.owner_id == "a"
    check_access(tab, a, Access.CONTROL)
    for action in (lambda: check_access(tab, b, Access.CONTROL), lambda: claim(tab, b)):
        with pytest.raises(ToolError) as err:
            action()
        assert err.value.code is ErrorCode.PERMISSION_DENIED
        assert owned(err.value.details) == {"tabId": "btab_1", "ownerId": "a"}
    with pytest.raises(ToolError):
        check_release(tab, b, force=True)  # force is for internal callers only
    check_release(tab, root, force=True)
    tab.owner_id = None
    check_release(tab, b)  # releasing an unclaimed tab is fine
