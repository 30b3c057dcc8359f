"""The options several `meith` commands share, declared once, and their epilog of examples."""

from typing import Annotated

import typer

SocketOpt = Annotated[
    str | None, typer.Option("--socket", help="Talk to the runtime at this socket path.")
]
InstanceOpt = Annotated[
    str | None, typer.Option("--instance", help="Talk to the live runtime with this PID or label.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def examples(*lines: str) -> str:
    """An epilog of examples; click's \\b keeps the lines as written."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)
