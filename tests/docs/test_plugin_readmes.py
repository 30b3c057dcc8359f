"""The plugins' READMEs are pages of the documentation site too: what their blocks show that is
not a tour of commands (marked illustrative) is checked here."""

from __future__ import annotations

import json

from meith_plugins_git.identity import GitSettings
from tests.readme import doc_block


def test_the_git_settings_example_is_valid_git_settings() -> None:
    example = json.loads(
        doc_block("meith_plugins_git/README.md", '"identityProfiles"', "json").text
    )
    settings = GitSettings.model_validate(example["git"])
    assert settings.activeIdentityProfileId == "gitacct_work"
    assert [p.id for p in settings.identityProfiles] == ["gitacct_work"]
