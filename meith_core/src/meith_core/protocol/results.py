"""The ToolResult envelope every call resolves to, and its helpers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from meith_core.protocol.errors import ErrorCode


class Diagnostic(BaseModel):
    model_config = ConfigDict(extra="forbid")

    level: Literal["info", "warn", "error"]
    message: str


class ErrorInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: ErrorCode
    message: str
    details: Any = None


class ToolResult(BaseModel):
    """`{ok, content?, text?, meta?, diagnostics?, error?}`: success and failure share one shape.

    `content` is the machine form; `text`, when the tool renders one, is the same result
    written for a model to read (what the MCP bridge sends as text content)."""

    model_config = ConfigDict(extra="ignore")

    ok: bool
    content: Any = None
    text: str | None = None
    meta: dict[str, Any] | None = None
    diagnostics: list[Diagnostic] | None = Field(default=None)
    error: ErrorInfo | None = None
    #: The wire JSON of this result, set by the pipeline once it checked the result is JSON,
    #: so the server does not serialise large results twice.
    _encoded: bytes | None = PrivateAttr(default=None)

    # Read and set through `__pydantic_private__` directly: pydantic's attribute hooks for
    # private attributes cost a microsecond or two each, twice per call.
    # (`_encoded` is declared, so pydantic gives every instance its private dict.)
    @property
    def encoded(self) -> bytes | None:
        """The wire JSON recorded by `set_encoded`, else None."""
        encoded: bytes | None = self.__pydantic_private__["_encoded"]  # type: ignore[index]
        return encoded

    def set_encoded(self, data: bytes) -> None:
        self.__pydantic_private__["_encoded"] = data  # type: ignore[index]

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict, without absent fields."""
        out: dict[str, Any] = {"ok": self.ok}
        if self.content is not None:
            out["content"] = self.content
        if self.text is not None:
            out["text"] = self.text
        if self.meta:
            out["meta"] = self.meta
        if self.diagnostics:
            out["diagnostics"] = [d.model_dump() for d in self.diagnostics]
        if self.error is not None:
            err: dict[str, Any] = {"code": self.error.code.value, "message": self.error.message}
            if self.error.details is not None:
                err["details"] = self.error.details
            out["error"] = err
        return out

    @property
    def error_code(self) -> ErrorCode | None:
        return self.error.code if self.error is not None else None


def ok_result(
    content: Any = None,
    *,
    text: str | None = None,
    meta: dict[str, Any] | None = None,
    diagnostics: list[Diagnostic | dict[str, str]] | None = None,
) -> ToolResult:
    return ToolResult(
        ok=True,
        content=content,
        text=text,
        meta=meta,
        diagnostics=[Diagnostic.model_validate(d) for d in diagnostics] if diagnostics else None,
    )


def error_result(code: ErrorCode | str, message: str, details: Any = None) -> ToolResult:
    return ToolResult(
        ok=False, error=ErrorInfo(code=ErrorCode(code), message=message, details=details)
    )
