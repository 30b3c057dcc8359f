"""`meith doctor --walls`: the card as JSON valid against its schema, as text and Markdown,
the exit code, and a hardened host (no user namespaces) whose card names each missing wall
with its fix and skips the entries that need it."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import jsonschema
import pytest

from meith_core.confine.status import NO_NAMESPACES_ENV, landlock_status
from meith_core.doctor import card
from meith_core.doctor.corpus import Entry, Seen, entries
from meith_core.doctor.runner import Result
from meith_core.doctor.schema import CARD_SCHEMA
from tests.harness import MEITH, base_env

#: Cheap entries: one held on any host with Landlock, two that need what a hardened host lacks.
NEEDS_NAMESPACES = ("network-udp-no-grant", "planted-git-existing-repo")
CHOSEN = ("write-outside-directory", *NEEDS_NAMESPACES)


def _doctor(
    tmp_path: Any, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "user-meith-home"
    return subprocess.run(
        [MEITH, "doctor", *args],
        env=base_env(home, env),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _synthetic(verdicts: tuple[str, ...]) -> dict[str, Any]:
    def trick(_lab: object) -> Seen:
        return Seen(False, "")

    results = [
        Result(Entry(f"made-up-{i}", "writes", "an attack", "held", trick, trick), v, "why", 0.1)  # type: ignore[arg-type]
        for i, v in enumerate(verdicts)
    ]
    status = landlock_status().to_dict()
    return card.document(results, status, ["process"], 1.0)


def test_a_card_is_valid_against_its_schema_and_renders() -> None:
    doc = _synthetic(("held", "breached", "skipped"))
    jsonschema.validate(doc, CARD_SCHEMA)
    assert doc["summary"] == {"held": 1, "breached": 1, "skipped": 1}
    assert card.exit_code(doc) == 1
    assert card.exit_code(_synthetic(("held", "skipped"))) == 0
    text = card.text(doc)
    assert "BREACHED" in text
    assert "made-up-1" in text
    assert "made-up-0" not in text  # held entries only with --verbose
    assert "made-up-0" in card.text(doc, verbose=True)
    page = card.markdown(doc)
    assert all(f"`made-up-{i}`" in page for i in range(3))


@pytest.mark.slow
@pytest.mark.skipif(not landlock_status().available, reason="this kernel has no Landlock")
def test_the_walls_card_as_json_is_valid_and_the_run_says_its_progress(tmp_path: Any) -> None:
    args = ["--walls", "--json", *(f"--only={e}" for e in CHOSEN)]
    done = _doctor(tmp_path, *args)
    doc = json.loads(done.stdout)
    jsonschema.validate(doc, CARD_SCHEMA)
    assert [e["id"] for e in doc["entries"]] == [e.id for e in entries() if e.id in CHOSEN]
    assert done.returncode == card.exit_code(doc)
    # Not a terminal: one plain line per entry on stderr, nothing on stdout but the JSON.
    assert f"[{len(CHOSEN)}/{len(CHOSEN)}]" in done.stderr, done.stderr
    assert "\r" not in done.stderr
    held = {e["id"]: e for e in doc["entries"]}["write-outside-directory"]
    assert held["result"] == "held", held


@pytest.mark.slow
@pytest.mark.skipif(not landlock_status().available, reason="this kernel has no Landlock")
def test_a_hardened_host_s_card_names_the_missing_walls_and_their_fixes(tmp_path: Any) -> None:
    args = ["--walls", "--json", *(f"--only={e}" for e in CHOSEN)]
    done = _doctor(tmp_path, *args, env={NO_NAMESPACES_ENV: "1"})
    doc = json.loads(done.stdout)
    jsonschema.validate(doc, CARD_SCHEMA)
    missing = {w["wall"]: w["fix"] for w in card.missing_walls(doc)}
    assert {"homes-and-sockets-hidden", "git-metadata", "udp"} <= set(missing)
    assert all("sysctl" in fix for fix in missing.values()), missing
    got = {e["id"]: e for e in doc["entries"]}
    for entry_id, wall in zip(NEEDS_NAMESPACES, ("udp", "git-metadata"), strict=True):
        assert got[entry_id]["result"] == "skipped", got[entry_id]
        assert f"the {wall} wall is not built on this host" in got[entry_id]["why"]
        assert "apparmor_restrict_unprivileged_userns=0" in got[entry_id]["why"]
    # Landlock's walls still stand.
    assert got["write-outside-directory"]["result"] == "held", got
    text = card.text(doc)
    for wall in ("homes-and-sockets-hidden", "git-metadata", "udp"):
        assert f"  - {wall}: fix: " in text, text
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow  # three CLI runs
def test_listing_and_the_schema_run_nothing(tmp_path: Any) -> None:
    listed = _doctor(tmp_path, "--list", "--json", "--only", "ports")
    assert listed.returncode == 0, listed.stderr
    assert {e["wall"] for e in json.loads(listed.stdout)} == {"ports"}
    schema = _doctor(tmp_path, "--schema")
    assert json.loads(schema.stdout) == json.loads(json.dumps(CARD_SCHEMA))
    unknown = _doctor(tmp_path, "--walls", "--only", "no-such-entry")
    assert unknown.returncode != 0
    assert "no entry or wall named no-such-entry" in unknown.stderr
    assert not os.path.exists(tmp_path / "user-meith-home" / "audit.jsonl")
