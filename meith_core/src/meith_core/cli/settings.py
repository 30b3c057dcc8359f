"""`meith settings`: read and change $MEITH_HOME/settings.json; sections a plugin owns are
validated by the model it declares.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from meith_core.base.home import MeithHome
from meith_core.cli.options import examples
from meith_core.cli.output import EXIT_OK, EXIT_TOOL_FAILED, EXIT_USAGE, fail, pretty

settings_app = typer.Typer(
    help="Read and change $MEITH_HOME/settings.json.", no_args_is_help=False, rich_markup_mode=None
)


@settings_app.callback(invoke_without_command=True)
def settings_default(ctx: typer.Context) -> None:
    """Read and change settings (without a subcommand: print them all)."""
    if ctx.invoked_subcommand is None:
        raise typer.Exit(run_settings_get(None))


@settings_app.command("get", epilog=examples("meith settings get git.activeIdentityProfileId"))
def settings_get(
    key: Annotated[
        str | None, typer.Argument(help="A dotted key; all settings when omitted.")
    ] = None,
) -> None:
    """Print settings, or one (dotted) key."""
    raise typer.Exit(run_settings_get(key))


@settings_app.command(
    "set",
    epilog=examples(
        "meith settings set browser.headless false",
        "meith settings set git '{\"activeIdentityProfileId\": null}'",
    ),
)
def settings_set(
    key: Annotated[str, typer.Argument(help="A dotted key, e.g. git.activeIdentityProfileId.")],
    value: Annotated[
        str, typer.Argument(help="A JSON value (plain text is taken as a string; null removes).")
    ],
) -> None:
    """Set one (dotted) key; sections owned by a plugin are validated."""
    raise typer.Exit(run_settings_set(key, value))


# -- implementation ---------------------------------------------------------------------------


def run_settings_get(key: str | None) -> int:
    from meith_core.host.plugins.listing import loaded_runtime
    from meith_core.host.settings import SettingsStore

    store = SettingsStore(MeithHome.from_env().ensure().settings_path)
    value: Any = store.load()
    if key:
        try:
            value = store.get(key)
        except KeyError:
            try:  # not set: the default documented by the plugin that owns the section
                value = loaded_runtime().settings.get(key)
            except KeyError:
                return fail(f"No setting {key!r}.", EXIT_TOOL_FAILED)
    sys.stdout.write((value if isinstance(value, str) else pretty(value)) + "\n")
    return EXIT_OK


def run_settings_set(key: str, raw: str) -> int:
    from meith_core.host.plugins.listing import loaded_runtime
    from meith_core.host.settings import SettingsError

    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    runtime = loaded_runtime()  # plugins declare the models of their sections
    section, _, rest = key.partition(".")
    if rest:
        current = runtime.settings.load().get(section) or {}
        if not isinstance(current, dict):
            return fail(f"Setting {section!r} is not an object; set it whole.", EXIT_USAGE)
        node = current
        parts = rest.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                return fail(f"Setting {key!r}: {part!r} is not an object.", EXIT_USAGE)
        if value is None:
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = value
        value = current
    try:
        runtime.settings.merge({section: value})
    except SettingsError as exc:
        return fail(str(exc), EXIT_USAGE)
    sys.stdout.write(f"Set {key}.\n")
    return EXIT_OK
