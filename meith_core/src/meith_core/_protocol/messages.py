"""pydantic models for every client and server message of the protocol.

The server validates peer frames with these; clients may use them to validate what the server
sends. (The CLI does not import this module: model building costs start-up time.)
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from meith_core._capabilities import Capability
from meith_core._errors import ErrorCode
from meith_core._events import ToolEvent
from meith_core._protocol.constants import MAX_TIMEOUT_MS
from meith_core._results import ToolResult

_Id = Annotated[str, Field(min_length=1, max_length=200)]
_Hint = Annotated[str, Field(max_length=4096)]


class _Message(BaseModel):
    # Unknown envelope fields are ignored for forward compatibility; tool arguments are
    # validated strictly by each tool's own model.
    model_config = ConfigDict(extra="ignore")

    protocol: int | None = None


class ClientInfo(BaseModel):
    """What the peer says about itself. Only a hint: the host decides who the caller is."""

    model_config = ConfigDict(extra="ignore")

    caller: Annotated[str, Field(max_length=64)] = "cli"
    cwd: _Hint | None = None
    sessionId: _Hint | None = None
    spaceId: _Hint | None = None
    tabId: _Hint | None = None


class ListTools(_Message):
    type: Literal["list_tools"]
    clientInfo: ClientInfo = Field(default_factory=ClientInfo)
    #: meith extension: only these tools (a client that needs one schema need not fetch all).
    names: list[Annotated[str, Field(max_length=200)]] | None = Field(default=None, max_length=200)


class ToolCall(_Message):
    type: Literal["tool_call"]
    requestId: _Id
    toolName: Annotated[str, Field(min_length=1, max_length=200)]
    arguments: dict[str, Any] = Field(default_factory=dict)
    clientInfo: ClientInfo = Field(default_factory=ClientInfo)
    timeoutMs: Annotated[int, Field(gt=0, le=MAX_TIMEOUT_MS)] | None = None


class CancelToolCall(_Message):
    type: Literal["cancel_tool_call"]
    requestId: _Id


ClientMessage = Annotated[ListTools | ToolCall | CancelToolCall, Field(discriminator="type")]
client_message_adapter: TypeAdapter[ListTools | ToolCall | CancelToolCall] = TypeAdapter(
    ClientMessage
)


class ToolDescriptor(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    description: str
    inputSchema: dict[str, Any]
    capabilities: list[Capability] = Field(default_factory=list)
    plugin: str | None = None
    timeoutMs: int | None = None
    outputSchema: dict[str, Any] | None = None


class ToolsList(_Message):
    type: Literal["tools_list"]
    tools: list[ToolDescriptor]


class ToolEventMessage(_Message):
    type: Literal["tool_event"]
    requestId: str
    event: ToolEvent


class ToolResultMessage(_Message):
    type: Literal["tool_result"]
    requestId: str
    result: ToolResult


class ErrorMessage(_Message):
    type: Literal["error"]
    requestId: str | None = None
    code: ErrorCode = ErrorCode.PROTOCOL_ERROR
    message: str


ServerMessage = Annotated[
    ToolsList | ToolEventMessage | ToolResultMessage | ErrorMessage, Field(discriminator="type")
]
server_message_adapter: TypeAdapter[
    ToolsList | ToolEventMessage | ToolResultMessage | ErrorMessage
] = TypeAdapter(ServerMessage)
