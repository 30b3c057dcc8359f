"""The git plugin's hardening reads the core's one table of risky keys (`GIT_RISKY_KEYS`)."""

from __future__ import annotations

from meith_core import GIT_RISKY_KEYS, git_key_risk
from meith_plugins_git.repoconfig import ConfigEntry, neutralising_overrides
from meith_plugins_git.runner import BASE_CONFIG


def test_what_every_command_sets_agrees_with_the_table() -> None:
    for key, value in BASE_CONFIG:
        risky = git_key_risk(key, "always" if key.startswith("protocol.") else "x")
        if risky is not None and risky.neutral is not None:
            assert value == risky.neutral, key
    assert ("protocol.allow", "never") in BASE_CONFIG


def test_transport_keys_of_every_scope_are_forced_to_the_tables_value() -> None:
    entries = [
        ConfigEntry("global", "protocol.ext.allow", "always"),
        ConfigEntry("local", "protocol.file.allow", "always"),
        ConfigEntry("local", "core.sshCommand", "evil"),
        ConfigEntry("local", "remote.origin.url", "ext::sh -c evil"),
    ]
    overrides = neutralising_overrides(entries, forced=(k for k, _ in BASE_CONFIG))
    assert ("protocol.ext.allow", "never") in overrides
    assert ("protocol.file.allow", "never") in overrides
    assert ("core.sshCommand", "") in overrides
    # An `ext::` URL needs no override: every transport is refused by protocol.allow=never.
    assert not [k for k, _ in overrides if k.startswith("remote.")]


def test_every_table_entry_with_a_neutral_value_is_a_program_or_a_transport() -> None:
    assert {k.kind for k in GIT_RISKY_KEYS if k.neutral is not None} == {"program", "transport"}
