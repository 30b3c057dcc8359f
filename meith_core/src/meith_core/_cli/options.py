"""The options several `meith` commands share, declared once."""

from typing import Annotated

import typer

SocketOpt = Annotated[
    str | None, typer.Option("--socket", help="Talk to the runtime at this socket path.")
]
InstanceOpt = Annotated[
    str | None, typer.Option("--instance", help="Talk to the live runtime with this PID or label.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
