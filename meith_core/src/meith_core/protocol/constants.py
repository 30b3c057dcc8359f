"""Protocol constants. Standard library only: the CLI imports this."""

from typing import Final

#: Bump when the wire format changes incompatibly.
PROTOCOL_VERSION: Final = 1
#: Guards against unbounded buffering from a peer that never sends a newline.
MAX_FRAME_BYTES: Final = 8 * 1024 * 1024
#: A frame nested deeper than this is refused (hostile input, and recursion limits).
MAX_JSON_DEPTH: Final = 64
DEFAULT_TOOL_TIMEOUT_MS: Final = 30_000
#: Largest per-call timeout a client may ask for (fits a signed 32-bit int, so any client's integer type holds it).
MAX_TIMEOUT_MS: Final = 2_147_483_647
