"""Redaction of audit summaries: secrets out first, then size limits.

Order matters: a secret is recognised in full before truncation could cut it into pieces
that no longer look like one. Hostile values (deep, cyclic, huge, lone surrogates, objects
that raise) are bounded by the depth and size caps and never raise.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Mapping
from itertools import islice
from typing import Any, Final

from meith_core._protocol.framing import dumps

MAX_STRING_CHARS: Final = 240
MAX_ARRAY_ITEMS: Final = 50
MAX_OBJECT_KEYS: Final = 100
MAX_DEPTH: Final = 6
MAX_SUMMARY_CHARS: Final = 2000

REDACTED: Final = "[REDACTED]"

SECRET_KEY_RE: Final = re.compile(
    r"token|passw(?:or)?d|secret|api[_-]?key|authori[sz]ation|credential|private[_-]?key"
    r"|access[_-]?key|cookie",
    re.IGNORECASE,
)
LARGE_TEXT_KEY_RE: Final = re.compile(r"^(?:content|data|body|source|newtext|text)$", re.IGNORECASE)

# Secrets recognised inside any string; each is replaced where it stands so the rest of the
# string (a command line, a URL) stays readable.
_SECRET_PATTERNS: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
        "[REDACTED_PRIVATE_KEY]",
    ),
    (
        re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE),
        r"\1 [REDACTED]",
    ),
    (re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"), REDACTED),
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), REDACTED),
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), REDACTED),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), REDACTED),
    (re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"), REDACTED),
    # `scheme://user:pass@` and `scheme://:pass@` (redis URLs have no user).
    (re.compile(r"\b([a-z][a-z0-9+.-]*://[^/\s:@]*):[^/\s@]+@", re.IGNORECASE), r"\1:[REDACTED]@"),
)
# A quick gate so ordinary strings skip the pattern list entirely.
_MAYBE_SECRET: Final = re.compile(
    r"PRIVATE KEY|bearer|basic|token|AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|gh[pousr]_|github_pat_"
    r"|glpat-|xox|sk-|eyJ|://",
    re.IGNORECASE,
)
_TOKEN_CHARS: Final = re.compile(r"[A-Za-z0-9+/=_.~:-]{32,}")
#: Bounds the work on one summary: a value shared many times (a DAG, or a cycle) would
#: otherwise be expanded up to MAX_OBJECT_KEYS ** MAX_DEPTH times. Far more than 2000
#: characters of summary can show.
MAX_NODES: Final = 2000


def _char_class(c: str) -> int:
    if "a" <= c <= "z":
        return 0
    if "A" <= c <= "Z":
        return 1
    if "0" <= c <= "9":
        return 2
    return -1


def _looks_random(text: str) -> bool:
    """Random base62/base64 switches between lower case, upper case and digits at about 60%
    of adjacent pairs, and only about a quarter of its letter pairs are two lower-case
    letters; names of things (paths, URLs, branches, CamelCase identifiers, timestamps) are
    runs of words: few switches, mostly lower-case letter pairs."""
    pairs = switches = letter_pairs = lower_pairs = 0
    prev = -1
    for c in text:
        cls = _char_class(c)
        if cls >= 0 and prev >= 0:
            pairs += 1
            switches += cls != prev
            letter_pairs += cls < 2 and prev < 2
            lower_pairs += cls == prev == 0
        prev = cls
    return pairs > 0 and switches >= 0.3 * pairs and lower_pairs <= 0.6 * letter_pairs


def _looks_like_token(text: str) -> bool:
    """A long, high-entropy, space-free string: an API key or password we have no pattern for.

    Entropy and three character classes keep hex digests (git SHAs, UUIDs) out; the
    randomness test keeps paths and other names of things out.
    """
    if len(text) < 32 or not _TOKEN_CHARS.fullmatch(text):
        return False
    if not (any(c.isdigit() for c in text) and any(c.isalpha() for c in text)):
        return False
    counts = Counter(text)
    if len(counts) < 12:
        return False
    n = len(text)
    entropy = -sum(k / n * math.log2(k / n) for k in counts.values())
    classes = sum(
        (
            any(c.islower() for c in text),
            any(c.isupper() for c in text),
            any(c.isdigit() for c in text),
        )
    )
    return entropy >= 4.0 and classes >= 3 and _looks_random(text)


def _token_or_keep(match: re.Match[str]) -> str:
    return REDACTED if _looks_like_token(match.group()) else match.group()


@functools.lru_cache(maxsize=4096)
def _key_kind(key: str) -> int:
    """0 an ordinary key, 1 a secret-looking key, 2 a large-text key (keys repeat a lot:
    a cache beats two regex searches per key)."""
    if SECRET_KEY_RE.search(key):
        return 1
    return 2 if LARGE_TEXT_KEY_RE.match(key) else 0


def _clean(text: str) -> str:
    # Lone surrogates (from undecodable bytes) would make the audit line invalid UTF-8.
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def redact_string(text: str, key: str = "") -> str:
    if key and _key_kind(key) == 2:
        return f"[REDACTED_TEXT {len(text)} chars]"
    if len(text) > 64 * 1024:
        # Never run patterns over megabytes; nothing this long is shown whole anyway.
        return f"[REDACTED_TEXT {len(text)} chars]"
    if _MAYBE_SECRET.search(text):
        for pattern, replacement in _SECRET_PATTERNS:
            text = pattern.sub(replacement, text)
    if len(text) >= 32:
        # Whole string or embedded (a command line, a header value): each long run of token
        # characters is judged on its own.
        text = _TOKEN_CHARS.sub(_token_or_keep, text)
    text = _clean(text)
    if len(text) > MAX_STRING_CHARS:
        return f"{text[:MAX_STRING_CHARS]}...[truncated {len(text)} chars]"
    return text


def redact(value: Any, key: str = "", depth: int = 0) -> Any:
    """A JSON-safe copy of `value` with secrets removed and sizes bounded."""
    return _redact(value, key, depth, [MAX_NODES])


def _redact(value: Any, key: str, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        return "[...]"
    if key and _key_kind(key) == 1:
        return REDACTED
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        # Beyond this, int -> str is refused by Python (and nobody reads such a number).
        return value if abs(value) < 10**300 else f"[integer of {value.bit_length()} bits]"
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return redact_string(value, key)
    if isinstance(value, bytes | bytearray | memoryview):
        return f"[{len(value)} bytes]"
    if depth >= MAX_DEPTH:
        return "[REDACTED_DEEP_OBJECT]"
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        try:
            items = list(islice(value.items(), MAX_OBJECT_KEYS + 1))
        except Exception:
            return "[UNSERIALIZABLE]"
        for k, v in items[:MAX_OBJECT_KEYS]:
            name = _clean(str(k))[:MAX_STRING_CHARS]
            out[name] = _redact(v, name, depth + 1, budget)
        if len(items) > MAX_OBJECT_KEYS:
            out["[more keys]"] = f"{len(value) - MAX_OBJECT_KEYS} more"
        return out
    if isinstance(value, list | tuple | set | frozenset):
        try:
            seq = list(islice(value, MAX_ARRAY_ITEMS + 1))
        except Exception:
            return "[UNSERIALIZABLE]"
        # Items inherit the parent key, so `tokens: [...]` items are redacted too.
        red = [_redact(v, key, depth + 1, budget) for v in seq[:MAX_ARRAY_ITEMS]]
        if len(seq) > MAX_ARRAY_ITEMS:
            red.append(f"[{len(value) - MAX_ARRAY_ITEMS} more items]")
        return red
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return _redact(dump(mode="json"), key, depth, budget)
        except Exception:
            return "[UNSERIALIZABLE]"
    try:
        return redact_string(repr(value)[: MAX_STRING_CHARS + 1], key)
    except Exception:
        return "[UNSERIALIZABLE]"


def summarize(value: Any) -> str:
    """`redact` then serialise, capped at MAX_SUMMARY_CHARS. Never raises."""
    try:
        text = dumps(redact(value))  # strings were cleaned of lone surrogates by redact
    except Exception:
        return '"[UNSERIALIZABLE]"'
    if len(text) > MAX_SUMMARY_CHARS:
        return text[:MAX_SUMMARY_CHARS] + "...[truncated]"
    return text
