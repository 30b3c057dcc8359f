"""The eight error codes of the protocol and the exception tools raise to choose one."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    TIMEOUT = "TIMEOUT"
    TOOL_FAILED = "TOOL_FAILED"
    RUNTIME_SHUTTING_DOWN = "RUNTIME_SHUTTING_DOWN"
    CANCELLED = "CANCELLED"
    PROTOCOL_ERROR = "PROTOCOL_ERROR"


class ToolError(Exception):
    """Raised by a tool to fail with a specific error code, message and JSON-safe details."""

    def __init__(self, code: ErrorCode | str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.details = details

    def __repr__(self) -> str:
        return f"ToolError({self.code.value}, {self.message!r})"
