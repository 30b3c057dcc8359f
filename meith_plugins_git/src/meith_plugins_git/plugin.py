"""The `git` plugin (entry point `git` in `meith.plugins`)."""

from __future__ import annotations

from pydantic import BaseModel

from meith_core import ToolDefinition, hookimpl
from meith_plugins_git.identity import SETTINGS_SECTION, GitSettings
from meith_plugins_git.runner import Git
from meith_plugins_git.tools import GitTools

#: The meith plugin API this plugin is built for.
MEITH_PLUGIN_API = ">=1,<2"


class Plugin:
    """One instance per runtime: the resolved git and the per-repository write locks."""

    def __init__(self) -> None:
        self.tools: GitTools | None = None

    @hookimpl
    def meith_tools(self) -> list[ToolDefinition]:
        # Raises GitUnavailable when git is missing or older than 2.24: the plugin is then
        # reported failed with the reason instead of running git unhardened.
        self.tools = GitTools(Git.locate())
        return self.tools.definitions()

    @hookimpl
    def meith_settings(self) -> dict[str, type[BaseModel]]:
        return {SETTINGS_SECTION: GitSettings}
