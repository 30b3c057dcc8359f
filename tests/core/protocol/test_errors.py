"""The error codes of the protocol, and no others."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from meith_core import ErrorCode, ToolResult


def test_the_eight_error_codes() -> None:
    assert {c.value for c in ErrorCode} == {
        "UNKNOWN_TOOL",
        "VALIDATION_ERROR",
        "PERMISSION_DENIED",
        "TIMEOUT",
        "TOOL_FAILED",
        "RUNTIME_SHUTTING_DOWN",
        "CANCELLED",
        "PROTOCOL_ERROR",
    }


def test_an_unknown_error_code_is_rejected() -> None:
    with pytest.raises(ValidationError):
        ToolResult.model_validate({"ok": False, "error": {"code": "OOPS", "message": "m"}})
