"""Redaction of audit summaries: secrets out first, then size limits.

What counts as a secret is the table in `rules`; this module applies it. Order matters: a
secret is recognised in full before truncation could cut it into pieces that no longer look
like one. Hostile values (deep, cyclic, huge, lone surrogates, objects
that raise) are bounded by the depth and size caps and never raise.
"""

from __future__ import annotations

import functools
import math
import re
import typing
from collections import Counter
from collections.abc import Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel

from meith_core.audit.plainjson import plain_json
from meith_core.audit.rules import (
    ANY_LITERAL,
    ENV_PARENT_KEY_RE,
    ENV_SECRET_KEY_RE,
    ENV_SHAPED_KEY_RE,
    FLAG_RE,
    GATE,
    GLUED_PASSWORD_RE,
    LARGE_TEXT_KEY_RE,
    PROGRAM_OPTIONS,
    REDACTED,
    RULES_OF,
    SECRET_KEY_RE,
    SECRET_PATTERNS,
    SENSITIVE_MARKER,
    USER_FLAG_RE,
)

if TYPE_CHECKING:
    from meith_core.audit.call_view import AuditedDefinition

MAX_STRING_CHARS: Final = 240
MAX_ARRAY_ITEMS: Final = 50
MAX_OBJECT_KEYS: Final = 100
MAX_DEPTH: Final = 6
MAX_SUMMARY_CHARS: Final = 2000
#: Secret argument values shorter than this are not searched for in results (a one-letter
#: keystroke would blank out every such letter).
MIN_KNOWN_CHARS: Final = 4
MAX_KNOWN: Final = 20

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
    # Three character classes are needed (below): a string without upper case (most paths
    # and names) or without lower case is out at once, in C, before any counting.
    if text.islower() or text.isupper():
        return False
    if not (any(c.isdigit() for c in text) and any(c.isalpha() for c in text)):
        return False
    counts = Counter(text)
    if len(counts) < 12:
        return False
    n = len(text)
    entropy = -sum(k / n * math.log2(k / n) for k in counts.values())
    # All three classes are present by now: a letter, neither all lower nor all upper case
    # (token characters are ASCII), and a digit.
    return entropy >= 4.0 and _looks_random(text)


def _token_or_keep(match: re.Match[str]) -> str:
    return REDACTED if _looks_like_token(match.group()) else match.group()


@functools.lru_cache(maxsize=4096)
def key_kind(key: str, in_env: bool = False) -> int:
    """0 an ordinary key, 1 a secret key, 2 a large-text key (keys repeat a lot: a cache beats
    several regex searches per key)."""
    if SECRET_KEY_RE.search(key):
        return 1
    if (in_env or ENV_SHAPED_KEY_RE.match(key)) and ENV_SECRET_KEY_RE.search(key):
        return 1
    return 2 if LARGE_TEXT_KEY_RE.match(key) else 0


@functools.lru_cache(maxsize=1024)
def names_environment(key: str) -> bool:
    """A key whose value is an environment map (`env`, `envVars`...)."""
    return ENV_PARENT_KEY_RE.match(key) is not None


@functools.lru_cache(maxsize=1024)
def sensitive_fields(*models: type[BaseModel] | None) -> frozenset[str]:
    """Names (and aliases) of the fields a tool's models mark `sensitive`, at any depth (a
    marked field of a model inside a list of edits counts too): redacted as text wherever a
    key of that name appears."""
    names: set[str] = set()
    seen: set[type[BaseModel]] = set()
    todo = [m for m in models if m is not None]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            extra = info.json_schema_extra
            if isinstance(extra, dict) and extra.get(SENSITIVE_MARKER):
                names.add(name)
                if info.alias:
                    names.add(info.alias)
            todo.extend(_models_in(info.annotation))
    return frozenset(names)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (`Edit`, `list[Edit]`, `Edit | None`, ...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def sensitive_fields_of(tool: AuditedDefinition) -> frozenset[str]:
    return sensitive_fields(tool.input_model, tool.output_model)


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
    if key and key_kind(key) == 2:
        return f"[REDACTED_TEXT {len(text)} chars]"
    if len(text) > 64 * 1024:
        # Never run patterns over megabytes; nothing this long is shown whole anyway.
        return f"[REDACTED_TEXT {len(text)} chars]"
    low = text.lower()
    if ANY_LITERAL.search(low):  # one fast scan; most strings stop here
        rules = {i for m in GATE.finditer(low) for i in RULES_OF[m.group(1)]}
        for i in sorted(rules):
            _, pattern, replacement = SECRET_PATTERNS[i]
            text = pattern.sub(replacement, text)
    if len(text) >= 32:
        # Whole string or embedded (a command line, a header value): each long run of token
        # characters is judged on its own.
        text = _TOKEN_CHARS.sub(_token_or_keep, text)
    text = _clean(text)
    if len(text) > MAX_STRING_CHARS:
        return f"{text[:MAX_STRING_CHARS]}...[truncated {len(text)} chars]"
    return text


def redact_argv(items: list[Any], program: str | None = None) -> list[Any]:
    """An argument vector: the value after `--password`, `-u` and the like is a secret too, and
    so is `-pSECRET` or `-p SECRET` after a `-u` (mysql and friends), and the password option
    of a program of `PROGRAM_SECRET_OPTIONS` (`program`: the one `args` belong to, when the
    vector does not name it)."""
    if not any(type(item) is str and item[:1] == "-" for item in items):
        return items  # no option at all (every pattern starts with "-"): nothing to look at
    out = list(items)
    user = False
    options = PROGRAM_OPTIONS.get(program or "", ())
    for i, item in enumerate(items):
        if not isinstance(item, str):
            continue
        if item[:1] != "-":  # every rule is about an option; a program name sets the rules
            options = PROGRAM_OPTIONS.get(item.rpartition("/")[2], options)
            continue
        nxt = items[i + 1] if i + 1 < len(items) else None
        if options and _program_option(out, i, item, nxt, options):
            continue
        if user and GLUED_PASSWORD_RE.match(item):
            out[i] = "-p" + REDACTED
            continue
        if user and item == "-p" and isinstance(nxt, str) and nxt[:1] != "-":
            out[i + 1] = REDACTED
            continue
        if USER_FLAG_RE.match(item):
            user = user or (isinstance(nxt, str) and nxt[:1] != "-")  # `-u NAME`, not `add -u`
        elif item.startswith(("-u", "--user=")):
            user = True
        if not isinstance(nxt, str):
            continue
        if FLAG_RE.match(item):
            out[i + 1] = REDACTED
        elif USER_FLAG_RE.match(item) and ":" in nxt:
            out[i + 1] = nxt.split(":", 1)[0] + ":" + REDACTED
    return out


def _program_option(
    out: list[Any], i: int, item: str, nxt: Any, options: tuple[tuple[str, str], ...]
) -> bool:
    """Redact a program's password option at `i` (see `PROGRAM_SECRET_OPTIONS`); whether it was
    one."""
    for option, how in options:
        if how == "user%pw":
            if item == option and isinstance(nxt, str) and "%" in nxt:
                out[i + 1] = nxt.split("%", 1)[0] + "%" + REDACTED
                return True
            if item.startswith(option) and "%" in item:
                out[i] = item.split("%", 1)[0] + "%" + REDACTED
                return True
        elif item == option:
            if how == "next" and isinstance(nxt, str):
                out[i + 1] = REDACTED
                return True
        elif item.startswith(option) and item[len(option) :][:1] not in ("", "-"):
            out[i] = option + REDACTED
            return True
    return False


def redact(
    value: Any, key: str = "", depth: int = 0, sensitive: frozenset[str] = frozenset()
) -> Any:
    """A JSON-safe copy of `value` with secrets removed and sizes bounded."""
    return _Redactor(sensitive).run(value, key, depth, False)


class _Redactor:
    __slots__ = ("budget", "known", "limit", "program", "secrets", "sensitive", "spent")

    def __init__(
        self, sensitive: frozenset[str], known: tuple[str, ...] = (), *, cut: bool = False
    ) -> None:
        self.budget = MAX_NODES
        #: A lower bound of the JSON characters produced so far, in the order they will be
        #: serialised; past `limit` the rest is beyond the summary's cut and is not walked
        #: (`cut`: for a summary, whose first MAX_SUMMARY_CHARS are then exactly the same).
        self.spent = 0
        self.limit = MAX_SUMMARY_CHARS + 1 if cut else None
        self.sensitive = sensitive
        #: Secret values taken out of this call's arguments (`secrets`), and removed wherever
        #: they reappear in its result (`known`): an error message quoting the typed text.
        self.secrets: list[str] = []
        self.known = known
        #: The program the `args` being walked belong to (`{command: "sshpass", args: [...]}`).
        self.program: str | None = None

    def _keep_secret(self, value: Any) -> None:
        values = value if isinstance(value, list | tuple) else (value,)
        for v in values[:MAX_ARRAY_ITEMS]:
            if (
                isinstance(v, str)
                and MIN_KNOWN_CHARS <= len(v) <= 64 * 1024
                and len(self.secrets) < MAX_KNOWN
            ):
                self.secrets.append(v)

    def run(self, value: Any, key: str, depth: int, in_env: bool) -> Any:
        self.budget -= 1
        if self.budget < 0:
            return "[...]"
        limit = self.limit
        if limit is not None and self.spent > limit:
            return "[...]"  # beyond the summary's cut: never shown
        self.spent += 1
        if key:
            kind = key_kind(key, in_env)
            if kind == 1:
                self._keep_secret(value)
                return REDACTED
            if kind == 2 or key in self.sensitive:
                self._keep_secret(value)
                if key in self.sensitive and isinstance(value, str):
                    return f"[REDACTED_TEXT {len(value)} chars]"
        # Exact JSON types first (arguments from the wire and tool results are plain dicts,
        # lists and strings); subclasses and other objects take the general path below.
        kind_of = type(value)
        if kind_of is str:
            out = self._string(value, key)
            self.spent += len(out) + 1
            return out
        if kind_of is dict and depth < MAX_DEPTH:
            return self._mapping(value, key, depth)
        if kind_of is list and depth < MAX_DEPTH:
            return self._sequence(value, key, depth, in_env)
        if value is None or kind_of is bool:
            return value
        if isinstance(value, str):
            return self._string(value, key)
        if isinstance(value, int):
            # Beyond this, int -> str is refused by Python (and nobody reads such a number).
            return value if abs(value) < 10**300 else f"[integer of {value.bit_length()} bits]"
        if isinstance(value, float):
            return value if math.isfinite(value) else str(value)
        if isinstance(value, bytes | bytearray | memoryview):
            return f"[{len(value)} bytes]"
        if depth >= MAX_DEPTH:
            return "[REDACTED_DEEP_OBJECT]"
        if isinstance(value, Mapping):
            return self._mapping(value, key, depth)
        if isinstance(value, list | tuple | set | frozenset):
            return self._sequence(value, key, depth, in_env)
        dump = getattr(value, "model_dump", None)
        if callable(dump):
            try:
                return self.run(dump(mode="json"), key, depth, in_env)
            except Exception:
                return "[UNSERIALIZABLE]"
        try:
            return redact_string(repr(value)[: MAX_STRING_CHARS + 1], key)
        except Exception:
            return "[UNSERIALIZABLE]"

    def _string(self, value: str, key: str) -> str:
        if self.known:
            for secret in self.known:
                if secret in value:
                    value = value.replace(secret, REDACTED)
        return redact_string(value, key)

    def _sequence(self, value: Any, key: str, depth: int, in_env: bool) -> Any:
        try:
            seq = list(islice(value, MAX_ARRAY_ITEMS + 1))
        except Exception:
            return "[UNSERIALIZABLE]"
        program, self.program = self.program, None
        redacted = redact_argv(seq, program)
        if redacted is not seq:
            # What an argument vector hid is removed from the result too (a message quoting it).
            self._keep_secret([a for a, b in zip(seq, redacted, strict=True) if a != b])
            seq = redacted
        # Items inherit the parent key, so `tokens: [...]` items are redacted too.
        run = self.run
        red = [run(v, key, depth + 1, in_env) for v in seq[:MAX_ARRAY_ITEMS]]
        if len(seq) > MAX_ARRAY_ITEMS:
            red.append(f"[{len(value) - MAX_ARRAY_ITEMS} more items]")
        return red

    def _mapping(self, value: Mapping[Any, Any], key: str, depth: int) -> Any:
        out: dict[str, Any] = {}
        try:
            items = list(islice(value.items(), MAX_OBJECT_KEYS + 1))
        except Exception:
            return "[UNSERIALIZABLE]"
        env = bool(key) and names_environment(key)
        run = self.run
        command = value.get("command") if type(value) is dict else None
        program = command.rsplit("/", 1)[-1] if type(command) is str else None
        for k, v in items[:MAX_OBJECT_KEYS]:
            if type(k) is str and len(k) <= MAX_STRING_CHARS and k.isascii():
                name = k  # what _clean and the cut below would give, without the calls
            else:
                name = _clean(str(k))[:MAX_STRING_CHARS]
            self.spent += len(name) + 3
            if program is not None and name == "args" and type(v) is list:
                self.program = program
            out[name] = run(v, name, depth + 1, env)
        if len(items) > MAX_OBJECT_KEYS:
            out["[more keys]"] = f"{len(value) - MAX_OBJECT_KEYS} more"
        return out


def summarize(value: Any, sensitive: frozenset[str] = frozenset()) -> str:
    """`redact` then serialise, capped at MAX_SUMMARY_CHARS. Never raises."""
    return _serialise(_Redactor(sensitive, cut=True), value)


def summarize_call(
    arguments: Any, result: Any, sensitive: frozenset[str] = frozenset()
) -> tuple[str, str]:
    """Summaries of a call's arguments and result; secret values of the arguments are also
    removed from the result (an error message that quotes what was typed)."""
    # The arguments are walked whole: every secret value in them is to be removed from the
    # result, even one past the arguments' own cut.
    args = _Redactor(sensitive)
    args_summary = _serialise(args, arguments)
    known = tuple(sorted(set(args.secrets), key=len, reverse=True))
    return args_summary, _serialise(_Redactor(sensitive, known, cut=True), result)


def _serialise(redactor: _Redactor, value: Any) -> str:
    try:
        # Lone surrogates were cleaned by the redactor.
        text = plain_json(redactor.run(value, "", 0, False)).decode("utf-8")
    except Exception:
        return '"[UNSERIALIZABLE]"'
    if len(text) > MAX_SUMMARY_CHARS:
        return text[:MAX_SUMMARY_CHARS] + "...[truncated]"
    return text
