"""`late`: a plugin "installed" while a runtime runs, as pip would install it — the module and a
`.dist-info` with its entry point, written into a directory on the runtime's import path. Its
`meith_startup` writes `started` into $LATE_MARKERS."""

from __future__ import annotations

import textwrap
from pathlib import Path

PLUGIN = '''
import os
from pathlib import Path
from pydantic import BaseModel, ConfigDict
from meith_core import hookimpl, tool


class HelloArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Plugin:
    started = False

    @hookimpl
    def meith_startup(self):
        self.started = True
        Path(os.environ["LATE_MARKERS"], "started").write_text("yes")

    @hookimpl
    def meith_tools(self):
        return [tool(self.late_hello, capabilities=["read-only"], input=HelloArgs)]

    async def late_hello(self, ctx, args: HelloArgs) -> dict:
        """Say hello from a plugin installed while the runtime ran."""
        return {"hello": "late", "started": self.started}
'''


def install_late(site: Path, name: str = "late", *, broken: bool = False) -> None:
    module = f"meith_{name}_plugin"
    source = "raise ImportError('needs a dependency')\n" if broken else PLUGIN
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    dist = site / f"meith_{name}_plugin-1.0.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: meith-{name}-plugin\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(f"[meith.plugins]\n{name} = {module}:Plugin\n")
