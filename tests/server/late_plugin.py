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
    from tests.harness import install_plugin_module

    source = "raise ImportError('needs a dependency')\n" if broken else PLUGIN
    install_plugin_module(site, name, textwrap.dedent(source), "Plugin", version="1.0")
