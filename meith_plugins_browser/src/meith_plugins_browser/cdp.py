"""Which raw DevTools Protocol methods `cdp_command` runs: an allow-list.

A tab's CDP session can reach far past the tab: other targets, the browser process, the
machine's files, downloads, the cookie jar and storage every tab shares. Only methods that act
on the tab's own documents are listed here; a method missing from the list (including one a
newer Chromium adds) is refused. A few listed methods carry a check of their parameters: a URL
goes through the navigation policy, and local files handed to the page must be regular files
inside the directory the caller's grant is confined to. The `browser.cdpUnrestricted` setting
lifts all of this.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from meith_core import ErrorCode, PathEscapeError, ToolError, resolve_within
from meith_plugins_browser.urls import check_url


@dataclass(frozen=True, slots=True)
class CdpScope:
    """What a caller's parameters may reach."""

    extra_schemes: tuple[str, ...] = ()
    #: The directory the caller's grant is confined to: local files must lie inside it (no
    #: such directory, no local files).
    file_root: str | None = None


ParamCheck = Callable[[str, dict[str, Any], CdpScope], dict[str, Any]]


def _bad(method: str, message: str) -> ToolError:
    return ToolError(ErrorCode.VALIDATION_ERROR, f"{method}: {message}", {"method": method})


def _local_files(method: str, paths: Any, scope: CdpScope) -> list[str]:
    """The resolved paths to hand to Chromium (so a symlink cannot be swapped in afterwards)."""
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise _bad(method, "files must be a list of paths")
    out = []
    for path in paths:
        if scope.file_root is None:
            raise ToolError(
                ErrorCode.PERMISSION_DENIED,
                f"{method} may hand a page local files only from the directory a grant is "
                f"confined to (meith grants add --cwd DIR); this call's grant is not: {path}",
                {"method": method, "path": path, "reason": "no grant scope"},
            )
        try:
            real = str(resolve_within(scope.file_root, path))
        except PathEscapeError:
            raise ToolError(
                ErrorCode.PERMISSION_DENIED,
                f"{path} is outside the directory this grant is limited to ({scope.file_root})",
                {
                    "method": method,
                    "path": path,
                    "reason": "outside grant scope",
                    "grantScope": scope.file_root,
                },
            ) from None
        # A directory would let the page walk its tree, symlinks out of the scope included.
        if not os.path.isfile(real):
            raise _bad(method, f"{path} is not a regular file")
        out.append(real)
    return out


def _navigate(method: str, params: dict[str, Any], scope: CdpScope) -> dict[str, Any]:
    url = params.get("url")
    if not isinstance(url, str):
        raise _bad(method, "needs a string url")
    return {**params, "url": check_url(url, scope.extra_schemes)}


def _file_input(method: str, params: dict[str, Any], scope: CdpScope) -> dict[str, Any]:
    return {**params, "files": _local_files(method, params.get("files"), scope)}


def _drag(method: str, params: dict[str, Any], scope: CdpScope) -> dict[str, Any]:
    data = params.get("data")
    if not isinstance(data, dict):
        return params
    # A dropped link is a navigation in a headed browser: it meets the URL policy too.
    for item in data.get("items") or []:
        if isinstance(item, dict) and str(item.get("mimeType", "")).lower() == "text/uri-list":
            for line in str(item.get("data", "")).splitlines():
                if line.strip() and not line.startswith("#"):
                    check_url(line, scope.extra_schemes)
    if "files" not in data:
        return params
    return {**params, "data": {**data, "files": _local_files(method, data["files"], scope)}}


def _methods(domain: str, names: str, check: ParamCheck | None = None) -> dict[str, Any]:
    return {f"{domain}.{name}": check for name in names.split()}


#: Method -> parameter check (None: its parameters cannot reach past the tab).
ALLOWED: Final[Mapping[str, ParamCheck | None]] = {
    **_methods(
        "Runtime",
        "enable disable evaluate callFunctionOn getProperties releaseObject releaseObjectGroup "
        "awaitPromise addBinding removeBinding compileScript runScript globalLexicalScopeNames "
        "queryObjects getHeapUsage discardConsoleEntries getExceptionDetails terminateExecution",
    ),
    **_methods(
        "Page",
        "enable disable reload stopLoading getNavigationHistory navigateToHistoryEntry "
        "resetNavigationHistory captureScreenshot printToPDF getLayoutMetrics getFrameTree "
        "getResourceTree getResourceContent searchInResource addScriptToEvaluateOnNewDocument "
        "removeScriptToEvaluateOnNewDocument createIsolatedWorld setDocumentContent "
        "setBypassCSP setLifecycleEventsEnabled handleJavaScriptDialog bringToFront "
        "startScreencast stopScreencast screencastFrameAck setInterceptFileChooserDialog",
    ),
    "Page.navigate": _navigate,
    **_methods(
        "DOM",
        "enable disable getDocument querySelector querySelectorAll describeNode resolveNode "
        "requestNode requestChildNodes getOuterHTML setOuterHTML getAttributes setAttributeValue "
        "setAttributesAsText removeAttribute removeNode setNodeValue setNodeName getBoxModel "
        "getContentQuads getNodeForLocation scrollIntoViewIfNeeded focus performSearch "
        "getSearchResults discardSearchResults pushNodesByBackendIdsToFrontend "
        "pushNodeByPathToFrontend moveTo copyTo markUndoableState undo redo getFrameOwner "
        "getTopLayerElements collectClassNamesFromSubtree setInspectedNode",
    ),
    "DOM.setFileInputFiles": _file_input,
    "DOMDebugger.getEventListeners": None,
    **_methods(
        "CSS",
        "enable disable getComputedStyleForNode getMatchedStylesForNode getInlineStylesForNode "
        "getStyleSheetText setStyleSheetText setStyleTexts addRule createStyleSheet "
        "forcePseudoState getPlatformFontsForNode getBackgroundColors collectClassNames "
        "getMediaQueries",
    ),
    **_methods(
        "Input",
        "dispatchKeyEvent dispatchMouseEvent dispatchTouchEvent insertText imeSetComposition "
        "setInterceptDrags cancelDragging emulateTouchFromMouseEvent synthesizePinchGesture "
        "synthesizeScrollGesture synthesizeTapGesture",
    ),
    "Input.dispatchDragEvent": _drag,
    **_methods(
        "Emulation",
        "canEmulate setDeviceMetricsOverride clearDeviceMetricsOverride setUserAgentOverride "
        "setGeolocationOverride clearGeolocationOverride setTimezoneOverride setLocaleOverride "
        "setEmulatedMedia setEmulatedVisionDeficiency setTouchEmulationEnabled "
        "setEmitTouchEventsForMouse setCPUThrottlingRate setScrollbarsHidden "
        "setDefaultBackgroundColorOverride setFocusEmulationEnabled setIdleOverride "
        "clearIdleOverride setScriptExecutionDisabled setAutoDarkModeOverride "
        "setDocumentCookieDisabled setHardwareConcurrencyOverride setPageScaleFactor "
        "resetPageScaleFactor",
    ),
    **_methods(
        "Network",
        "enable disable setExtraHTTPHeaders setUserAgentOverride setCacheDisabled "
        "setBypassServiceWorker emulateNetworkConditions setBlockedURLs getResponseBody "
        "getRequestPostData searchInResponseBody",
    ),
    **_methods("Log", "enable disable clear startViolationsReport stopViolationsReport"),
    **_methods("Console", "enable disable clearMessages"),
    **_methods(
        "Accessibility",
        "enable disable getFullAXTree getPartialAXTree queryAXTree getChildAXNodes "
        "getRootAXNode getAXNodeAndAncestors",
    ),
    **_methods("DOMSnapshot", "enable disable captureSnapshot"),
    **_methods("Performance", "enable disable getMetrics"),
    **_methods("Overlay", "enable disable highlightNode highlightRect hideHighlight"),
}


def check_cdp(method: str, params: dict[str, Any], scope: CdpScope) -> dict[str, Any]:
    """The params to send, or an error for a method or parameter the policy refuses."""
    if method not in ALLOWED:
        raise ToolError(
            ErrorCode.VALIDATION_ERROR,
            f"CDP method {method} is not allowed through cdp_command: only methods that act "
            "on the tab's own documents are (see the browser plugin's README). The "
            "browser.cdpUnrestricted setting lifts this restriction.",
            {"method": method, "reason": "not on the allow-list"},
        )
    check = ALLOWED[method]
    return check(method, params, scope) if check is not None else params
