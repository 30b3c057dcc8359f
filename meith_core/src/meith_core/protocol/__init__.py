"""The wire protocol: constants and framing (stdlib only) and message models (pydantic).

Import `meith_core.protocol.messages` explicitly for the models; this package module stays
cheap so the CLI can use the framer without pydantic.
"""

from meith_core.protocol.constants import (
    DEFAULT_TOOL_TIMEOUT_MS,
    MAX_FRAME_BYTES,
    MAX_JSON_DEPTH,
    MAX_TIMEOUT_MS,
    PROTOCOL_VERSION,
)
from meith_core.protocol.framing import (
    Frame,
    FrameError,
    NdjsonFramer,
    decode_frame,
    dumps_bytes,
    encode_frame,
)

__all__ = [
    "DEFAULT_TOOL_TIMEOUT_MS",
    "MAX_FRAME_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_TIMEOUT_MS",
    "PROTOCOL_VERSION",
    "Frame",
    "FrameError",
    "NdjsonFramer",
    "decode_frame",
    "dumps_bytes",
    "encode_frame",
]
