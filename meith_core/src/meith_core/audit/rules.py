"""The table of the audit redactor: what it recognises as a secret.

Three tables: keys whose value is a secret, keys whose value is typed or shown text, and
patterns for secrets inside any string, each with the literals that gate it. `redact` is the
one engine that applies them to every record.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

REDACTED: Final = "[REDACTED]"

# Keys whose value is a secret (any type, at any depth; list items inherit their key).
SECRET_KEY_RE: Final = re.compile(
    r"token|passw(?:or)?d|passphrase|secret|api[_-]?key|authori[sz]ation|credential"
    r"|private[_-]?key|access[_-]?key|cookie|session[_-]?(?:key|token|secret|cookie)"
    r"|^(?:pass|pwd|pw|auth|pin|otp)$",
    re.IGNORECASE,
)
# Keys of environment maps: any key under a key naming an environment (`env`, `envVars`...),
# and any key shaped like an environment variable anywhere.
ENV_SECRET_KEY_RE: Final = re.compile(
    r"PASS|PWD|AUTH|TOKEN|SECRET|KEY|CREDENTIAL|COOKIE|SESSION", re.IGNORECASE
)
ENV_PARENT_KEY_RE: Final = re.compile(
    r"^(?:env|environ|environment|env[_-]?vars|extra[_-]?env)$", re.I
)
ENV_SHAPED_KEY_RE: Final = re.compile(r"^[A-Z][A-Z0-9_]*$")
# Keys whose value is text typed or shown (keystrokes sent to pages or terminals, terminal and
# page snapshots, file contents): replaced by their length. A tool marks other fields so with
# `Field(json_schema_extra={"sensitive": True})`.
LARGE_TEXT_KEY_RE: Final = re.compile(
    r"^(?:content|data|body|source|newtext|text|keys|value|buffer|snapshot|screen|output"
    r"|stdout|stderr|lines|html|markdown)$",
    re.IGNORECASE,
)
SENSITIVE_MARKER: Final = "sensitive"

# Names that make a command-line option, a URL query parameter or an assignment a secret.
SECRET_NAME: Final = (
    r"(?:pass(?:word|wd|phrase)?|pwd|token|secret|api[_-]?key|auth(?!or)|credential|cookie"  # noqa: S105
    r"|private[_-]?key|access[_-]?key)"
)
QUERY_SECRET_NAME: Final = SECRET_NAME[:-1] + r"|key|sig|signature|session|sid|code)"
FLAG_RE: Final = re.compile(rf"^--?[A-Za-z0-9_-]*{SECRET_NAME}[A-Za-z0-9_-]*$", re.IGNORECASE)
USER_FLAG_RE: Final = re.compile(r"^(?:-u|--user|--proxy-user)$")
#: `-pSECRET` in an argument vector after a `-u` (mysql, mysqldump, mariadb...).
GLUED_PASSWORD_RE: Final = re.compile(r"^-p[^\s]+$")

_LDAP: Final = tuple(
    f"ldap{n}"
    for n in ("search", "modify", "add", "delete", "compare", "modrdn", "passwd", "whoami", "exop")
)
_SAMBA: Final = ("smbclient", "rpcclient", "smbcacls", "smbcquotas", "smbget", "smbtree")
#: Programs that take a password as an option's value, and how: `next` (the next argument,
#: or glued: `-pX`), `glued` (glued only; a bare option asks for it), `user%pw` (`-U user%pw`:
#: what follows the `%`). The argument-vector and the command-line rules are both made from it.
PROGRAM_SECRET_OPTIONS: Final[tuple[tuple[tuple[str, ...], str, str], ...]] = (
    (("sshpass",), "-p", "next"),
    (("redis-cli", "valkey-cli", "keydb-cli"), "-a", "next"),
    (_LDAP, "-w", "next"),
    (("zip", "zipcloak"), "-P", "next"),
    (("7z", "7za", "7zr"), "-p", "glued"),
    (_SAMBA, "-U", "user%pw"),
    (_SAMBA, "--user", "user%pw"),
)
#: Program name (as it stands, or the last part of a path) -> its `(option, how)` pairs.
PROGRAM_OPTIONS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    name: tuple((opt, how) for progs, opt, how in PROGRAM_SECRET_OPTIONS if name in progs)
    for progs, _, _ in PROGRAM_SECRET_OPTIONS
    for name in progs
}
#: The literals that let a program's rule run (few and specific: every literal costs every
#: string a little, and one found costs that string the gate).
_TRIGGERS: Final[dict[tuple[str, ...], tuple[str, ...]]] = {
    ("sshpass",): ("sshpass",),
    ("redis-cli", "valkey-cli", "keydb-cli"): ("redis-cli", "valkey-cli", "keydb-cli"),
    _LDAP: ("ldap",),
    ("zip", "zipcloak"): ("zip ", "zipcloak"),
    ("7z", "7za", "7zr"): ("7z",),
    _SAMBA: ("smb", "rpcclient"),
}
_VALUE: Final = r"(\"[^\"]*\"|'[^']*'|[^\s\"'|;&]+)"


def _program_rule(
    programs: tuple[str, ...], option: str, how: str
) -> tuple[tuple[str, ...], re.Pattern[str], str]:
    """The command-line rule of one `PROGRAM_SECRET_OPTIONS` entry: the option's value after
    the program (through its other arguments, up to a `|`, `;` or `&`)."""
    names = "|".join(re.escape(p) for p in programs)
    head = rf"((?<![\w.-])(?:{names})(?![\w.-])(?:[ \t]+[^\s|;&]+)*?[ \t]+{re.escape(option)}"
    if how == "glued":
        pattern = head + r")(?=[^\s])" + _VALUE
    elif how == "user%pw":
        pattern = head + r"(?:=|[ \t]+)?[\"']?[^\s%\"'|;&]*%)[^\s\"'|;&]+"
    else:
        pattern = head + r"(?:=|[ \t]+(?!-)|(?=[^\s])))" + _VALUE
    return _TRIGGERS[programs], re.compile(pattern), r"\1[REDACTED]"


# Trigger literals of the rules below (lower case).
_T_PEM: Final = ("private key",)
_T_HEADER: Final = ("authorization", "cookie", "api-key", "auth-token", "private-token")
_T_SCHEME: Final = ("bearer", "basic", "token")
_T_NAMES: Final = ("pass", "pwd", "token", "secret", "key", "auth", "credential", "cookie")
_T_USER: Final = ("-u",)
_T_FREE: Final = ("pass", "pwd", "pw", "secret", "token")
_T_ENV_NAMES: Final = (*_T_NAMES, "session")
_T_QUERY: Final = (*_T_ENV_NAMES, "sig", "sid", "code")
_T_QUOTED_KEY: Final = ('":', '" :', "':", "' :", '"=', "'=")
_T_QUOTED_LIST: Final = ('",', '" ,', "',", "' ,")

# Secrets recognised inside any string (arguments, results, error messages); each is replaced
# where it stands so the rest of the string (a command line, a URL) stays readable.
SECRET_PATTERNS: Final[
    tuple[tuple[tuple[str, ...], re.Pattern[str], str | Callable[[re.Match[str]], str]], ...]
] = (
    (
        _T_PEM,
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
        "[REDACTED_PRIVATE_KEY]",
    ),
    # Headers: `Authorization: Basic ...`, `Cookie: a=b`, `X-Api-Key: ...` (to the line end;
    # the scheme word stays readable).
    (
        _T_HEADER,
        re.compile(
            r"((?:proxy-)?authorization|(?:set-)?cookie|x-api-key|api-key|x-auth-token"
            r"|private-token)(\s*:\s*)((?:bearer|basic|token|digest|negotiate)\s+)?"
            r"(?:(?!\\[rn])[^\r\n])+",  # to the line end (or an escaped one, in a repr)
            re.IGNORECASE,
        ),
        lambda m: f"{m[1]}{m[2]}{m[3] or ''}{REDACTED}",
    ),
    (
        _T_SCHEME,
        re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE),
        r"\1 [REDACTED]",
    ),
    # Options: `--password X`, `--password=X`, `--api-key=X`, `--db-pass 'a b'`.
    (
        _T_NAMES,
        re.compile(
            rf"(?<![\w-])(--?[A-Za-z0-9_-]*{SECRET_NAME}[A-Za-z0-9_-]*)(=|[ \t]+)"
            r"(\"[^\"]*\"|'[^']*'|[^\s\"']+)",
            re.IGNORECASE,
        ),
        r"\1\2[REDACTED]",
    ),
    # `-u user:pass`, `-uuser:pass`, `--user=user:pass` (curl and friends).
    (
        _T_USER,
        re.compile(r"(?<![\w-])(-u[ \t]*|--(?:proxy-)?user[= \t]+)([\"']?[^\s:\"'@/]*):[^\s\"']+"),
        r"\1\2:[REDACTED]",
    ),
    # `mysql -u root -pSECRET`, `mysqldump --user=root -pSECRET db`: the password glued to
    # `-p` after a `-u`.
    (
        _T_USER,
        re.compile(
            r"((?<![\w-])(?:-u|--user)(?:[ \t]*|=)(?!-)[^\s]+(?:[ \t]+[^\s]+)*?[ \t]+-p"
            r"(?:[ \t]+(?!-))?)(?=[^\s])(\"[^\"]*\"|'[^']*'|[^\s\"']+)"
        ),
        r"\1[REDACTED]",
    ),
    # Passwords as options of the programs of `PROGRAM_SECRET_OPTIONS`.
    *(_program_rule(*entry) for entry in PROGRAM_SECRET_OPTIONS),
    # `echo X | sudo -S ...`: the password fed to sudo's standard input.
    (
        ("sudo",),
        re.compile(
            r"(\b(?:echo|printf)(?:[ \t]+-[neE]+)*[ \t]+)((?:\"[^\"]*\"|'[^']*'|[^\s|;&]+)"
            r"(?:[ \t]+(?:\"[^\"]*\"|'[^']*'|[^\s|;&]+))*?)([ \t]*\|[ \t]*(?:[^\s|;&]*/)?sudo"
            r"(?:[ \t]+-[^\s|;&]+)*?[ \t]+-[A-Za-z]*S\b)"
        ),
        r"\1[REDACTED]\3",
    ),
    # Webhook URLs carry their token in the path (Slack, Discord, Teams, and any
    # `/webhook(s)/` or `/hooks/` path).
    (
        ("://",),
        re.compile(
            r"([Hh][Tt][Tt][Pp][Ss]?://(?:hooks\.slack\.com/(?:services|workflows|triggers)/"
            r"|[^\s/\"'<>]+/(?:[^\s?#\"'<>]*/)?(?:[Ww]eb)?[Hh]ooks?(?:b2)?/))"
            r"[^\s\"'<>]+"
        ),
        r"\1[REDACTED]",
    ),
    # The same in a quoted argument vector inside text: `'-u', 'root', '-pX'`.
    (
        _T_USER,
        re.compile(
            r"""(([\"'])(?:-u|--user)[^\"']*\2(?:\s*,\s*([\"'])[^\"']*\3)*?\s*,\s*([\"'])-p)"""
            r"""([^\"']+)(\4)"""
        ),
        r"\1[REDACTED]\6",
    ),
    # Free text: `password: x`, `Password = x`, `the password is x`, `pw: x`, `secret: x`.
    (
        _T_FREE,
        re.compile(
            r"\b(pass(?:word|wd|phrase)?|pwd|pw|secret|token)(\s*[:=]\s*|\s+is\s+)"
            r"(?![\[\s])(\"[^\"]*\"|'[^']*'|[^\s\"']+)",
            re.IGNORECASE,
        ),
        r"\1\2[REDACTED]",
    ),
    # Assignments of secret-named variables: `export DB_PASSWORD=x`, `GITHUB_TOKEN=x cmd`,
    # `password=x` in a connection string.
    (
        _T_ENV_NAMES,
        re.compile(
            r"\b([A-Z_][A-Z0-9_]*(?:PASS|PWD|AUTH|TOKEN|SECRET|KEY|CREDENTIAL|COOKIE|SESSION)"
            r"[A-Z0-9_]*)=(\"[^\"]*\"|'[^']*'|[^\s&;\"']+)"
        ),
        r"\1=[REDACTED]",
    ),
    (
        _T_NAMES,
        re.compile(
            rf"(?<![\w.-])([A-Za-z0-9_.-]*{SECRET_NAME}[A-Za-z0-9_.-]*)=(\"[^\"]*\"|'[^']*'|[^\s&;\"']+)",
            re.IGNORECASE,
        ),
        r"\1=[REDACTED]",
    ),
    # Quoted keys inside text (a JSON body or a repr in an error message): the value of a
    # secret or large-text key, a string or a list of strings.
    (
        _T_QUOTED_KEY,
        re.compile(
            rf"([\"'])([A-Za-z0-9_.-]*{SECRET_NAME}[A-Za-z0-9_.-]*|pass|pwd|pw|auth"
            r"|[A-Z0-9_]*(?:PASS|PWD|AUTH|TOKEN|SECRET|KEY|CREDENTIAL|COOKIE|SESSION)[A-Z0-9_]*"
            r"|content|data|body|source|newtext|text|keys|value|buffer|snapshot|screen|output"
            r"|stdout|stderr|lines|html|markdown)"
            r"\1(\s*[:=]\s*)(\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'"
            r"|\[(?:[^\]\"']|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*')*\])",
            re.IGNORECASE,
        ),
        r"\1\2\1\3[REDACTED]",
    ),
    # A quoted argument vector inside text: `'--password', 'X'`, `"-u", "bob:X"`.
    (
        _T_QUOTED_LIST,
        re.compile(
            rf"([\"'])(--?[A-Za-z0-9_-]*{SECRET_NAME}[A-Za-z0-9_-]*|-u|--user)\1(\s*,\s*)"
            r"(\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*')",
            re.IGNORECASE,
        ),
        r"\1\2\1\3[REDACTED]",
    ),
    # URL query parameters with credential-like names.
    (
        _T_QUERY,
        re.compile(
            rf"([?&;][A-Za-z0-9_.-]*{QUERY_SECRET_NAME}[A-Za-z0-9_.-]*=)[^&#\s\"'<>]+",
            re.IGNORECASE,
        ),
        r"\1[REDACTED]",
    ),
    (
        ("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa"),
        re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"),
        REDACTED,
    ),
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
        REDACTED,
    ),
    (("glpat-",), re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), REDACTED),
    (("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), REDACTED),
    (("sk-",), re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"), REDACTED),
    (
        ("eyj",),
        re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),
        REDACTED,
    ),
    # `scheme://user:pass@` and `scheme://:pass@` (redis URLs have no user).
    (
        ("://",),
        re.compile(r"\b([a-z][a-z0-9+.-]*://[^/\s:@]*):[^\s@]+@", re.IGNORECASE),
        r"\1:[REDACTED]@",
    ),
)


def _trie(words: list[str]) -> str:
    """An alternation of `words` as a trie (`a(?:b|c)`): one branch per distinct character at
    each step instead of one per word, and the longest word first where one extends another."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + build(node[ch]) for ch in sorted(k for k in node if k)]
        if not alts:
            return ""
        inner = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{inner})?" if "" in node else inner

    return build(root)


# Which rules may apply is decided in one scan of the lower-cased text for the literals the
# rules need (each rule lists the literals at least one of which it cannot match without);
# ordinary strings match none and skip the table. Literals are tried longest first, and the
# rules of a literal include those of every literal it starts with.
LITERALS: Final = sorted({t for rule in SECRET_PATTERNS for t in rule[0]}, key=len, reverse=True)
ANY_LITERAL: Final = re.compile(_trie(LITERALS))
GATE: Final = re.compile("(?=(" + _trie(LITERALS) + "))")
RULES_OF: Final = {
    lit: tuple(
        i for i, rule in enumerate(SECRET_PATTERNS) if any(lit.startswith(t) for t in rule[0])
    )
    for lit in LITERALS
}
