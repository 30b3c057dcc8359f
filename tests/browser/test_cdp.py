"""The allow-list of raw DevTools Protocol methods, and local files only inside the grant's
scope."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meith_core import ErrorCode, ToolError
from meith_plugins_browser.cdp import CdpScope, check_cdp


def test_cdp_policy_is_an_allow_list() -> None:
    none = CdpScope()
    assert check_cdp("Runtime.evaluate", {"expression": "1"}, none) == {"expression": "1"}
    assert check_cdp("Page.navigate", {"url": " http://x/ "}, none) == {"url": "http://x/"}
    refused = (
        "Browser.close",
        "Target.attachToTarget",
        "Page.setDownloadBehavior",
        # reach past the tab without being in any deny-list: the shared cookie jar and
        # storage, local files, streams, the renderer process
        "Network.getAllCookies",
        "Network.getCookies",
        "Network.setCookie",
        "Storage.getCookies",
        "DOMStorage.getDOMStorageItems",
        "IndexedDB.requestData",
        "DOM.getFileInfo",
        "Page.handleFileChooser",
        "Page.crash",
        "IO.read",
        "Input.setIgnoreInputEvents",
        "Tracing.start",
        "Nonexistent.method",
        "runtime.evaluate",
    )
    for method in refused:
        with pytest.raises(ToolError) as err:
            check_cdp(method, {}, none)
        assert err.value.code is ErrorCode.VALIDATION_ERROR, method
        assert "cdpUnrestricted" in err.value.message
    with pytest.raises(ToolError):
        check_cdp("Page.navigate", {"url": "file:///etc/passwd"}, none)
    with pytest.raises(ToolError):
        check_cdp("Page.navigate", {}, none)


def test_cdp_local_files_only_inside_the_grant_scope(tmp_path: Path) -> None:
    scope, outside = tmp_path / "scope", tmp_path / "outside"
    scope.mkdir()
    outside.mkdir()
    (scope / "ok.txt").write_text("ok")
    (outside / "secret").write_text("secret")
    (scope / "link").symlink_to(outside / "secret")
    (scope / "sub").mkdir()
    confined = CdpScope(file_root=str(scope))

    def drag(files: Any) -> dict[str, Any]:
        return {"type": "drop", "x": 1, "y": 1, "data": {"items": [], "files": files}}

    sent = check_cdp("Input.dispatchDragEvent", drag(["ok.txt"]), confined)
    assert sent["data"]["files"] == [str((scope / "ok.txt").resolve())]
    sent = check_cdp("DOM.setFileInputFiles", {"files": [str(scope / "ok.txt")]}, confined)
    assert sent["files"] == [str((scope / "ok.txt").resolve())]
    assert check_cdp("Input.dispatchDragEvent", {"type": "dragEnter"}, confined) == {
        "type": "dragEnter"
    }
    for method, params in (
        ("Input.dispatchDragEvent", drag([str(outside / "secret")])),
        ("Input.dispatchDragEvent", drag(["../outside/secret"])),
        ("Input.dispatchDragEvent", drag(["link"])),
        ("DOM.setFileInputFiles", {"files": ["ok.txt", str(outside / "secret")]}),
    ):
        with pytest.raises(ToolError) as err:
            check_cdp(method, params, confined)
        assert err.value.code is ErrorCode.PERMISSION_DENIED
        assert err.value.details["reason"] == "outside grant scope"
    uri = {"mimeType": "text/uri-list", "data": "# links\nhttp://x/\nfile:///etc/passwd"}
    with pytest.raises(ToolError) as err:
        check_cdp("Input.dispatchDragEvent", {"type": "drop", "data": {"items": [uri]}}, confined)
    assert err.value.code is ErrorCode.VALIDATION_ERROR
    uri["data"] = "http://x/"
    assert check_cdp(
        "Input.dispatchDragEvent", {"type": "drop", "data": {"items": [uri]}}, confined
    )
    for files in (["sub"], "ok.txt", [1]):  # a directory would hand over its whole tree
        with pytest.raises(ToolError) as err:
            check_cdp("DOM.setFileInputFiles", {"files": files}, confined)
        assert err.value.code is ErrorCode.VALIDATION_ERROR
    # No directory-confined grant: no local files at all.
    with pytest.raises(ToolError) as err:
        check_cdp("DOM.setFileInputFiles", {"files": [str(scope / "ok.txt")]}, CdpScope())
    assert err.value.code is ErrorCode.PERMISSION_DENIED
    assert err.value.details["reason"] == "no grant scope"
