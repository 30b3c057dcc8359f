"""What a person approving a call is shown (`ApprovalView`): the one renderer for the `serve`
prompt, MCP elicitations and the console.

The audit's summaries are redacted and cut for storage; an approver must see what will run.
So every argument is shown whole, and of the redaction table (`rules`) only the secret values
themselves are masked — a value the table would hide that holds shell syntax (`$(`, a
backtick, `;`, `|`, `&`, `>`, `<`, a line break) is shown, because it runs. Control and
invisible formatting characters (a carriage return that overwrites a line, terminal escapes,
bidirectional overrides) are escaped so the text shows what the bytes are. Long random
strings are not masked here as they are in the audit: an encoded payload must be seen.
"""

from __future__ import annotations

import json
import re
import shlex
import unicodedata
from collections.abc import Callable
from typing import Any, Final

from meith_core.audit.redact import key_kind, names_environment, redact_argv
from meith_core.audit.rules import ANY_LITERAL, GATE, REDACTED, RULES_OF, SECRET_PATTERNS
from meith_core.protocol.call_approval import ApprovalView

#: Text that makes a value run something when a shell reads it.
SHELL_SYNTAX: Final = ("$(", "${", "`", ";", "|", "&", ">", "<")
#: Arguments that are the command a call runs (shown first, as one command line).
_COMMAND_KEYS: Final = ("shell", "command", "args")
_MAX_DEPTH: Final = 64
_INVISIBLE: Final = frozenset({"Cc", "Cf", "Zl", "Zp"})


def approval_view(arguments: dict[str, Any]) -> ApprovalView:
    """The view of one call's (validated) arguments."""
    command = arguments.get("command")
    program = command.rpartition("/")[2] if isinstance(command, str) else None
    masked = {
        key: _masked(value, key, False, 1, program if key == "args" else None)
        for key, value in arguments.items()
    }
    shown = _command_line(masked)
    lines: list[str] = []
    for key, value in masked.items():
        if shown is not None and key in _COMMAND_KEYS:
            continue
        if isinstance(value, str) and "\n" in value:
            body = value.split("\n")
            lines.append(f"{key}: ({len(body)} lines, {len(value)} characters)")
            lines.extend("    " + line for line in body)
        elif isinstance(value, str):
            lines.append(f"{key}: {value}")
        else:
            lines.append(f"{key}: {json.dumps(value, ensure_ascii=False, indent=1)}")
    return ApprovalView(
        visible("\n".join(lines)),
        None if shown is None else visible(shown),
        masked,
    )


def visible(text: str) -> str:
    """Control and invisible formatting characters escaped (line breaks and tabs kept)."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        _escaped(ch) if ch not in "\n\t" and unicodedata.category(ch) in _INVISIBLE else ch
        for ch in text
    )


def mask(text: str) -> str:
    """`text` with the secret values the redaction table finds masked, unless they run."""
    low = text.lower()
    if not ANY_LITERAL.search(low):
        return text
    for i in sorted({i for m in GATE.finditer(low) for i in RULES_OF[m.group(1)]}):
        _, pattern, replacement = SECRET_PATTERNS[i]
        text = pattern.sub(_guarded(replacement), text)
    return text


def runs_something(value: str) -> bool:
    return any(syntax in value for syntax in SHELL_SYNTAX)


def _guarded(
    replacement: str | Callable[[re.Match[str]], str],
) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        original = match.group(0)
        masked = replacement(match) if callable(replacement) else match.expand(replacement)
        hidden = _hidden_part(original, masked)
        private_key = hidden.lstrip().startswith("-----BEGIN")
        if runs_something(hidden) or ("\n" in hidden and not private_key):
            return original
        return masked

    return replace


def _hidden_part(original: str, masked: str) -> str:
    """What a rule's replacement took out of `original`."""
    prefix = 0
    limit = min(len(original), len(masked))
    while prefix < limit and original[prefix] == masked[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and original[-1 - suffix] == masked[-1 - suffix]:
        suffix += 1
    return original[prefix : len(original) - suffix]


def _masked(value: Any, key: str, in_env: bool, depth: int, program: str | None = None) -> Any:
    if depth > _MAX_DEPTH:
        return "[nested deeper than shown]"
    if key and key_kind(key, in_env) == 1:
        if isinstance(value, str) and runs_something(value):
            return mask(value)
        return REDACTED if value not in (None, "") else value
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        env = bool(key) and names_environment(key)
        return {str(k): _masked(v, str(k), env, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = list(value)
        hidden = redact_argv(items, program)
        kept = [
            original if isinstance(original, str) and runs_something(original) else shown
            for original, shown in zip(items, hidden, strict=True)
        ]
        return [_masked(v, key, in_env, depth + 1) for v in kept]
    return value


def _command_line(masked: dict[str, Any]) -> str | None:
    shell, command, args = (masked.get(k) for k in _COMMAND_KEYS)
    if isinstance(shell, str):
        return shell
    argv = _strings(command)
    if argv is not None:
        return shlex.join(argv)
    if isinstance(command, str):
        rest = _strings(args)
        return command if rest is None else shlex.join([command, *rest])
    return None


def _strings(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [str(v) for v in value]
    return None


def _escaped(ch: str) -> str:
    special = {"\r": "\\r", "\x1b": "\\e", "\x00": "\\0", "\x08": "\\b"}
    if ch in special:
        return special[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


__all__ = ["SHELL_SYNTAX", "approval_view", "mask", "runs_something", "visible"]
