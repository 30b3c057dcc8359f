"""The four event kinds a tool streams while it runs.

On the hot path events are plain dicts (a chatty log stream must not build a pydantic model per
line); these models describe and validate the same shapes at the edges.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

LogLevel = Literal["debug", "info", "warn", "error"]
LOG_LEVELS: frozenset[str] = frozenset({"debug", "info", "warn", "error"})


class EventKind(StrEnum):
    PROGRESS = "progress"
    LOG = "log"
    PARTIAL_TEXT = "partial_text"
    ARTIFACT = "artifact"


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProgressEvent(_Event):
    kind: Literal["progress"] = "progress"
    message: str | None = None
    fraction: float | None = Field(default=None, ge=0.0, le=1.0)
    #: The call waits for a person's approval before it runs; the message says where to answer
    #: and how long it waits.
    awaiting: Literal["approval"] | None = None


class LogEvent(_Event):
    kind: Literal["log"] = "log"
    level: LogLevel = "info"
    message: str


class PartialTextEvent(_Event):
    kind: Literal["partial_text"] = "partial_text"
    text: str


class ArtifactEvent(_Event):
    kind: Literal["artifact"] = "artifact"
    mimeType: str
    name: str | None = None
    dataBase64: str | None = None
    path: str | None = None


ToolEvent = Annotated[
    ProgressEvent | LogEvent | PartialTextEvent | ArtifactEvent, Field(discriminator="kind")
]

#: An event as it travels inside the runtime: the wire dict.
EventDict = dict[str, Any]
