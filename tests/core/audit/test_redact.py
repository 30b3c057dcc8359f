"""Redaction of audit summaries: every secret family out, ordinary values kept, limits applied
after redaction, and hostile values never crash it."""

from __future__ import annotations

import json
import random
import string
from typing import Any

import pytest

from meith_core.audit.redact import (
    MAX_ARRAY_ITEMS,
    MAX_DEPTH,
    MAX_STRING_CHARS,
    MAX_SUMMARY_CHARS,
    REDACTED,
    redact,
    redact_string,
    summarize,
)

# -- secret-looking keys ----------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "token", "accessToken", "refresh_token", "GITHUB_TOKEN", "password", "passwd",
        "db_password", "secret", "clientSecret", "api_key", "apiKey", "api-key", "X-API-KEY",
        "authorization", "Authorization", "credential", "credentials", "private_key",
        "privateKey", "access_key", "aws_access_key_id", "cookie",
    ],
)  # fmt: skip
@pytest.mark.parametrize("value", ["hunter2", 12345, ["a", "b"], {"nested": "x"}, None])
def test_values_under_secret_looking_keys_are_redacted_whatever_their_type(
    key: str, value: Any
) -> None:
    assert redact({key: value}) == {key: REDACTED}


def test_secret_keys_are_redacted_at_any_depth_and_inside_lists() -> None:
    value = {"a": {"b": [{"token": "t1"}, {"password": "p"}]}, "tokens": ["x", "y"]}
    assert redact(value) == {
        "a": {"b": [{"token": REDACTED}, {"password": REDACTED}]},
        "tokens": REDACTED,
    }


# -- large text keys --------------------------------------------------------------------


@pytest.mark.parametrize("key", ["content", "data", "body", "source", "newText", "text", "TEXT"])
def test_large_text_keys_are_replaced_by_their_length(key: str) -> None:
    text = "line one\nline two" * 3
    assert redact({key: text}) == {key: f"[REDACTED_TEXT {len(text)} chars]"}


def test_large_text_keys_are_exact_names_only() -> None:
    assert redact({"contentType": "text/plain", "textual": "kept"}) == {
        "contentType": "text/plain",
        "textual": "kept",
    }


def test_list_items_under_a_large_text_key_are_replaced_too() -> None:
    assert redact({"content": ["abc", "de"]}) == {
        "content": ["[REDACTED_TEXT 3 chars]", "[REDACTED_TEXT 2 chars]"]
    }


# -- token-shaped strings ----------------------------------------------------------------

_AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
_GHP = "ghp_" + "R8xq2LmZ0vT4nB7kW1pY3cH6sD9fJ5gQ2aEo"
_GH_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ"
_GLPAT = "glpat-" + "xYz12AbC-dEf34GhI56jK"
_SLACK = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
_JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
_PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAuYh5e3Jq2Vq0Zp6rX8m\n"
    "QWxlbGxvd29ybGQxMjM0NTY3ODkw\n-----END RSA PRIVATE KEY-----"
)
_OPENSSH = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
_HIGH_ENTROPY = "Zx8Qp3Lm9Vt2Rk7Wn4Bc6Hy1Jd5Fg0TsUe"
_AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYz8Kq2Lm"


@pytest.mark.parametrize(
    ("secret", "context"),
    [
        ("abcdefghijklmnopqrstuvwxyz123456", "Authorization: Bearer {}"),
        ("dXNlcjpwYXNzd29yZA==", "Authorization: Basic {}"),
        ("dXNlcjpwYXNzd29yZA==", "basic {}"),
        (_PEM.split("\n")[1], "key:\n" + _PEM + "\ntrailing"),
        (_OPENSSH.split("\n")[1], _OPENSSH),
        (_AWS_KEY, "aws configure set key {} --profile x"),
        (_GHP, "git push https://github.com/x/y.git with {}"),
        (_GH_PAT, "{}"),
        (_GLPAT, "GITLAB={}"),
        (_SLACK, "slack {}"),
        ("xoxp-1234567890-abcdefghij", "{}"),
        (_JWT, "cookie value {} end"),
        ("hunter2", "postgres://admin:{}@db.internal:5432/app"),
        ("hunter2pass", "redis://:{}@localhost:6379/0"),
        ("s3cret", "https://user:{}@example.com/repo.git"),
        (_HIGH_ENTROPY, "{}"),
        (_HIGH_ENTROPY, "curl -H 'X-Custom: {}' https://example.com"),
        (_AWS_SECRET, "{}"),
        ("sk-proj-abcdefghijklmnopqrstuvwx", "OPENAI_API_KEY={}"),
    ],
)
def test_token_shaped_strings_are_redacted_wherever_they_stand(secret: str, context: str) -> None:
    text = context.format(secret) if "{}" in context else context
    out = summarize({"note": text})
    assert secret not in out
    assert "REDACTED" in out


def test_a_pem_key_without_its_end_line_is_still_redacted() -> None:
    text = _PEM.split("-----END")[0]
    assert "MIIEow" not in summarize({"note": text})


def test_the_readable_rest_of_a_string_is_kept() -> None:
    out = redact_string("clone https://bob:hunter2@example.com/x.git into /tmp/x")
    assert out == "clone https://bob:[REDACTED]@example.com/x.git into /tmp/x"
    assert redact_string(f"Authorization: Bearer {_HIGH_ENTROPY}") == (
        "Authorization: Bearer [REDACTED]"
    )


@pytest.mark.parametrize(
    "ordinary",
    [
        "/home/alice/Projects/MyApp2024/src/components/UserProfile.tsx",
        "/tmp/pytest-of-root/pytest-12/test_Something0/repo/file.txt",
        "/work/main/meith_core/src/meith_core/audit/redact.py",
        "C:/Users/Bob/Documents/Report_Q3_2024_Final.docx",
        "/var/lib/docker/overlay2/4f8a9c2b1e7d3f6a0b5c8e2d1f4a7b9c3e6d0f2a/merged/usr/bin",
        "node_modules/.pnpm/@babel+core@7.23.2/node_modules/@babel/core/lib/index.js",
        "/opt/homebrew/Cellar/python@3.11/3.11.7/Frameworks/Python.framework/Versions/3.11",
        "https://github.com/Anthropic/SomeRepo2/pull/1234/files",
        "s3://My-Bucket-2024/Exports/2024-01-05/Report_Final_V2.csv",
        "feature/JIRA-1234-add-UserProfile-page-v2",
        "refs/meith/checkpoints/ckpt_a1b2c3d4e5f6",
        "com.example.MyApplication2.ui.MainActivityViewModel3",
        "2024-01-05T12:34:56.789Z_BuildLog_Run42.txt",
        "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3",  # a git SHA-1
        "A94A8FE5CCB19BA61C4C0873D391E987982FBBD3",
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",  # SHA-256
        "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3..2fd4e1c67a2d28fced849ee1bb76e7391b93eb12",
        "550e8400-e29b-41d4-a716-446655440000",
        "cli:550e8400-e29b-41d4-a716-446655440000",
        "req_a1b2c3d4e5f6",
        "git commit -m 'Fix UserProfile2 rendering' -- src/components/UserProfile.tsx",
        "npm run dev -- --port 3000 --host 127.0.0.1",
        "https://example.com/search?q=meith+tool+host&page=2",
        "ssh://git@github.com:22/owner/repo.git",
        "http://localhost:3000/api/v1/users",
    ],
)
def test_ordinary_paths_shas_ids_and_commands_are_not_redacted(ordinary: str) -> None:
    assert redact_string(ordinary) == ordinary
    assert redact({"path": ordinary}) == {"path": ordinary}


def test_random_tokens_are_redacted() -> None:
    rng = random.Random(20240601)
    alphabet = string.ascii_letters + string.digits
    for _ in range(300):
        token = "".join(rng.choice(alphabet) for _ in range(64))
        assert redact_string(token) == REDACTED, token


# -- limits, after redaction ---------------------------------------------------------------


def test_long_strings_are_cut_at_240_chars_with_their_length() -> None:
    text = "word " * 100
    out = redact_string(text)
    assert out == text[:MAX_STRING_CHARS] + f"...[truncated {len(text)} chars]"
    assert MAX_STRING_CHARS == 240


def test_a_secret_straddling_the_cut_is_redacted_before_truncation() -> None:
    text = "x " * 115 + f"Bearer {_HIGH_ENTROPY}" + " tail" * 20
    assert len(text[:MAX_STRING_CHARS]) == MAX_STRING_CHARS
    out = redact_string(text)
    # Cut after redacting: the first characters of the token (before the cut) are not shown.
    assert text[:MAX_STRING_CHARS].endswith("Bearer " + _HIGH_ENTROPY[:3])
    assert _HIGH_ENTROPY[:3] not in out
    assert out.startswith("x " * 115 + "Bearer [RE")


def test_arrays_are_cut_at_50_items() -> None:
    out = redact({"items": list(range(120))})
    assert MAX_ARRAY_ITEMS == 50
    assert out["items"] == [*range(50), "[70 more items]"]


def test_nesting_is_cut_at_depth_6() -> None:
    value: Any = "bottom"
    for _ in range(10):
        value = {"k": value}
    out = redact(value)
    assert MAX_DEPTH == 6
    depth = 0
    while isinstance(out, dict):
        out = out["k"]
        depth += 1
    assert depth == MAX_DEPTH
    assert out == "[REDACTED_DEEP_OBJECT]"


def test_each_summary_is_cut_at_2000_chars() -> None:
    out = summarize({f"k{i}": "v" * 200 for i in range(50)})
    assert MAX_SUMMARY_CHARS == 2000
    assert len(out) == MAX_SUMMARY_CHARS + len("...[truncated]")
    assert out.endswith("...[truncated]")


def test_a_short_summary_is_plain_json() -> None:
    assert json.loads(summarize({"a": [1, 2.5, None, True, "x"]})) == {
        "a": [1, 2.5, None, True, "x"]
    }


# -- hostile input ----------------------------------------------------------------------


def _deep(n: int) -> Any:
    value: Any = []
    for _ in range(n):
        value = [value, {"k": value}] if n < 30 else [value]
    return value


class Exploding:
    def __repr__(self) -> str:
        raise RuntimeError("repr bomb")


class BadMapping(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise RuntimeError("items bomb")


class BadKey:
    def __str__(self) -> str:
        raise RuntimeError("str bomb")


def _cyclic_dict() -> Any:
    a: dict[str, Any] = {"name": "a"}
    a["self"] = a
    a["list"] = [a, a]
    return a


def _cyclic_list() -> Any:
    a: list[Any] = []
    a.append(a)
    return a


def _shared_fanout() -> Any:
    leaf = {f"k{i}": "v" for i in range(100)}
    node: Any = leaf
    for _ in range(7):
        node = {f"k{i}": node for i in range(100)}  # 100**7 paths, one object per level
    return node


HOSTILE: dict[str, Any] = {
    "deep_10000": lambda: _deep(10_000),
    "cyclic_dict": _cyclic_dict,
    "cyclic_list": _cyclic_list,
    "shared_fanout": _shared_fanout,
    "lone_surrogates": lambda: {"path": "bad\udcff\ud800name", "\udcffkey": "v"},
    "nul_bytes": lambda: {"a\x00b": "c\x00d", "list": ["\x00" * 10]},
    "bytes": lambda: {"raw": b"\x00\xff" * 10, "buf": bytearray(3), "mv": memoryview(b"ab")},
    "floats": lambda: {"nan": float("nan"), "inf": float("inf"), "ninf": float("-inf")},
    "huge_int": lambda: {"n": 10**5000},
    "objects": lambda: {"o": object(), "e": Exploding(), "s": {1, 2}, "t": (1, "x")},
    "bad_mapping": lambda: {"m": BadMapping(a=1)},
    "bad_key": lambda: {BadKey(): 1},
    "non_str_keys": lambda: {1: "a", None: "b", (1, 2): "c", 2.5: "d"},
    "huge_string": lambda: {"note": "x" * 5_000_000},
    "many_keys": lambda: {f"k{i}": i for i in range(10_000)},
    "huge_list": lambda: list(range(1_000_000)),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_values_never_crash_and_give_a_valid_bounded_summary(kind: str) -> None:
    out = summarize(HOSTILE[kind]())
    assert isinstance(out, str)
    assert len(out) <= MAX_SUMMARY_CHARS + len("...[truncated]")
    out.encode("utf-8")  # no lone surrogates left
    if not out.endswith("...[truncated]"):
        json.loads(out)


def test_sensitive_marks_of_nested_models_are_collected() -> None:
    from pydantic import BaseModel, Field

    from meith_core.audit.redact import sensitive_fields, summarize

    class Edit(BaseModel):
        oldText: str = Field(json_schema_extra={"sensitive": True})
        line: int = 0

    class Args(BaseModel):
        path: str
        edits: list[Edit]
        first: Edit | None = None

    names = sensitive_fields(Args, None)
    assert names == {"oldText"}
    summary = summarize({"path": "a", "edits": [{"oldText": "SECRET-OLD", "line": 2}]}, names)
    assert "SECRET-OLD" not in summary
    assert '"line":2' in summary


@pytest.mark.parametrize("seed", range(40))
def test_a_summary_cut_short_is_the_same_as_the_whole_one_cut(seed: int) -> None:
    """Past the summary's cut nothing is walked; what is shown does not change."""
    from meith_core.audit import redact as r

    rng = random.Random(seed)

    def value(depth: int) -> Any:
        pick = rng.random()
        if depth > 3 or pick < 0.4:
            return rng.choice(
                [
                    "".join(rng.choices(string.ascii_letters + ' "\\\n', k=rng.randint(0, 300))),
                    rng.randint(-(10**6), 10**6),
                    None,
                    True,
                    "Bearer " + "x" * 40,
                ]
            )
        if pick < 0.7:
            return [value(depth + 1) for _ in range(rng.randint(0, 8 if depth else 60))]
        keys = ["path", "token", "text", "status", "password", "env", "cwd", "name"]
        return {
            f"{rng.choice(keys)}{i}" if rng.random() < 0.5 else rng.choice(keys): value(depth + 1)
            for i in range(rng.randint(0, 6))
        }

    data = {"files": [value(1) for _ in range(rng.randint(1, 80))]}
    whole = r._serialise(r._Redactor(frozenset()), data)
    cut = r._serialise(r._Redactor(frozenset(), cut=True), data)
    assert cut == whole
