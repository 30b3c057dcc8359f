"""What the audit trail reads of a call: the fields it records, as protocols.

The call layer's `CallRecord` (with its `RegisteredTool`, `ToolDefinition` and policy
`Decision`) satisfies them structurally, so the trail sits below the call layer and imports
nothing of it.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel

from meith_core.protocol.caller import CallerInfo
from meith_core.protocol.capabilities import Capability


class AuditedDefinition(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def capabilities(self) -> tuple[Capability, ...]: ...
    @property
    def input_model(self) -> type[BaseModel]: ...
    @property
    def output_model(self) -> type[BaseModel] | None: ...


class AuditedTool(Protocol):
    @property
    def definition(self) -> AuditedDefinition: ...
    @property
    def plugin_id(self) -> str: ...


class AuditedDecision(Protocol):
    @property
    def reason(self) -> str: ...


class AuditedCall(Protocol):
    @property
    def request_id(self) -> str: ...
    @property
    def caller(self) -> CallerInfo: ...
    @property
    def name(self) -> Any: ...
    @property
    def arguments(self) -> Any: ...
    @property
    def cwd(self) -> str: ...
    @property
    def tool(self) -> AuditedTool | None: ...
    @property
    def decision(self) -> AuditedDecision | None: ...
    @property
    def trace(self) -> dict[str, str] | None: ...
