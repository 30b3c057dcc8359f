"""pydantic models for every client and server message of the protocol.

The server validates peer frames with these; clients may use them to validate what the server
sends. (The CLI does not import this module: model building costs start-up time.)
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from meith_core.protocol.capabilities import Capability
from meith_core.protocol.constants import MAX_TIMEOUT_MS
from meith_core.protocol.errors import ErrorCode
from meith_core.protocol.events import ToolEvent
from meith_core.protocol.results import ToolResult

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
    #: An agent's self-reported name; the server keeps at most 128 printable characters.
    label: _Hint | None = None
    #: This connection answers `approval_request` frames.
    approvals: bool = False
    #: With `approvals`: the local user's consoles and the `serve` prompt are asked too, and
    #: the first answer wins (an MCP task's approval may be answered anywhere).
    approvalsShared: bool = False
    #: The local user's console (`meith ui`): answers approval requests for every session.
    #: Honoured only for a `cli` connection the runtime did not start and that has no token.
    console: bool = False
    #: Where that console answers (its address, never its secret): a call waiting for it
    #: tells its caller where to go.
    consoleUrl: _Hint | None = None
    cwd: _Hint | None = None
    sessionId: _Hint | None = None
    spaceId: _Hint | None = None
    tabId: _Hint | None = None
    #: A child's token (`MEITH_SESSION_TOKEN`): the connection calls as the session that
    #: started the process, whatever `caller` says.
    sessionToken: Annotated[str, Field(max_length=200)] | None = None


class ListTools(_Message):
    type: Literal["list_tools"]
    clientInfo: ClientInfo = Field(default_factory=ClientInfo)
    #: meith extension: only these tools (a client that needs one schema need not fetch all).
    names: list[Annotated[str, Field(max_length=200)]] | None = Field(default=None, max_length=200)
    #: Also send `tools_changed` whenever the catalogue or the plugin approvals change.
    watch: bool = False


class Hello(_Message):
    """Optional first frame: fixes who this connection is and asks for a `welcome`."""

    type: Literal["hello"]
    clientInfo: ClientInfo = Field(default_factory=ClientInfo)
    #: Keep this session when the connection closes without `end_session`, for a while: the
    #: `welcome` then carries a `resumeToken` that brings it back on another connection.
    resumable: bool = False
    #: Resume the detached session this token (from an earlier `welcome`) names, instead of
    #: starting a new one.
    resumeToken: Annotated[str, Field(max_length=200)] | None = None


class EndSession(_Message):
    """The client is done: the session ends with the connection (never kept for a resume)."""

    type: Literal["end_session"]


class ListSessions(_Message):
    type: Literal["list_sessions"]


class Ping(_Message):
    """A keepalive: answered with `pong`; like any frame it resets the idle timeout."""

    type: Literal["ping"]


class RevokeSessionMessage(_Message):
    """The console ends a session's grants at once (its later privileged calls are denied)."""

    type: Literal["revoke_session"]
    sessionId: _Id


class ApprovalResponse(_Message):
    type: Literal["approval_response"]
    approvalId: _Id
    decision: Literal["allow_once", "allow_session", "deny"]
    answeredBy: Annotated[str, Field(max_length=4096)] = ""


#: A W3C `traceparent`: version, trace id, parent span id, flags.
TRACEPARENT = r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$"
TRACESTATE_MAX = 512


class TraceContext(BaseModel):
    """The W3C trace context of the caller's own trace (an MCP request's `_meta`): the call's
    span is its child."""

    model_config = ConfigDict(extra="ignore")

    traceparent: Annotated[str, Field(pattern=TRACEPARENT)]
    tracestate: Annotated[str, Field(max_length=TRACESTATE_MAX)] | None = None


class ToolCall(_Message):
    type: Literal["tool_call"]
    requestId: _Id
    toolName: Annotated[str, Field(min_length=1, max_length=200)]
    arguments: dict[str, Any] = Field(default_factory=dict)
    clientInfo: ClientInfo = Field(default_factory=ClientInfo)
    timeoutMs: Annotated[int, Field(gt=0, le=MAX_TIMEOUT_MS)] | None = None
    #: Send the result's `text` (the tool's rendering for a model) beside its `content`. Off by
    #: default: a program reads `content`, and a large result's text would double it.
    withText: bool = False
    #: The caller reads only the text (an agent does): a tool that renders its result answers
    #: with `text` and without `content`, which is then never encoded or sent. Implies
    #: `withText`; a tool without a renderer answers with its `content` as before.
    textOnly: bool = False
    traceContext: TraceContext | None = None


class CancelToolCall(_Message):
    type: Literal["cancel_tool_call"]
    requestId: _Id


AnyClientMessage = (
    ListTools
    | ToolCall
    | CancelToolCall
    | Hello
    | ListSessions
    | Ping
    | ApprovalResponse
    | EndSession
    | RevokeSessionMessage
)
ClientMessage = Annotated[AnyClientMessage, Field(discriminator="type")]
client_message_adapter: TypeAdapter[AnyClientMessage] = TypeAdapter(ClientMessage)


class ToolDescriptor(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    description: str
    inputSchema: dict[str, Any]
    capabilities: list[Capability] = Field(default_factory=list)
    plugin: str | None = None
    timeoutMs: int | None = None
    outputSchema: dict[str, Any] | None = None
    idempotent: bool = False
    #: What the tool does at worst (`protocol.capabilities.Effect`); absent: undeclared.
    effect: str | None = None
    #: Privileged tools: whether their plugin's approval covers them now. Read-only: true.
    approved: bool = True


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


class Welcome(_Message):
    type: Literal["welcome"]
    sessionId: str
    caller: str
    label: str | None = None
    serverVersion: str
    #: Seconds of silence after which the runtime closes the connection (None: never); a
    #: client that waits longer sends `ping` more often than this.
    idleTimeoutS: float | None = None
    #: Asked for with `hello.resumable`: the secret that resumes this session on another
    #: connection (a new one at each resume).
    resumeToken: str | None = None
    #: This connection took over a detached session (`hello.resumeToken`).
    resumed: bool = False


class GrantSummary(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    capabilities: list[str]
    tool: str | None = None
    cwd: str | None = None
    uses: int | None = None
    #: ISO-8601 UTC, or None for no expiry.
    expires: str | None = None
    source: str


class SessionSummary(BaseModel):
    model_config = ConfigDict(extra="ignore")

    sessionId: str
    caller: str
    label: str | None = None
    since: str
    calls: int
    grants: list[GrantSummary] = Field(default_factory=list)
    #: `attached` (a connection holds it) or `detached` (waiting to be resumed).
    state: str = "attached"
    #: While detached: seconds until it ends unless resumed.
    endsInS: int | None = None
    #: What the session started and still owns, as the plugins report it.
    owns: list[dict[str, Any]] = Field(default_factory=list)


class SessionsList(_Message):
    type: Literal["sessions_list"]
    sessions: list[SessionSummary]


class ToolsChanged(_Message):
    type: Literal["tools_changed"]


class Pong(_Message):
    type: Literal["pong"]


class ApprovalRequestMessage(_Message):
    type: Literal["approval_request"]
    approvalId: str
    requestId: str
    toolName: str
    plugin: str
    capabilities: list[str]
    cwd: str
    #: Where the call acts, in the words the person is shown.
    runs: str | None = None
    #: The command line the call runs, and every argument (`shown`, text; `arguments`, JSON
    #: values) whole, only secret values masked: the core's one rendering for approvers.
    command: str | None = None
    shown: str | None = None
    arguments: Any
    caller: str
    label: str | None = None
    #: The session whose call waits (a console is asked about every session's calls).
    sessionId: str | None = None
    timeoutMs: int
    #: When the runtime asked (epoch ms): the request waits until `askedAt + timeoutMs`.
    askedAt: int | None = None


class ApprovalClosed(_Message):
    """Sent to a console: an approval request it was shown no longer waits for its answer."""

    type: Literal["approval_closed"]
    approvalId: str
    requestId: str
    reason: str


AnyServerMessage = (
    ToolsList
    | ToolEventMessage
    | ToolResultMessage
    | ErrorMessage
    | Welcome
    | SessionsList
    | ToolsChanged
    | Pong
    | ApprovalRequestMessage
    | ApprovalClosed
)
ServerMessage = Annotated[AnyServerMessage, Field(discriminator="type")]
server_message_adapter: TypeAdapter[AnyServerMessage] = TypeAdapter(ServerMessage)
