"""The secret paths: what no confined process may read and meith's read tools refuse to agents.

One list, one check. The list is a policy setting in the trust root (`confinement.secretPaths`
in `settings.json`, changed only by the local user: `meith settings set confinement.secretPaths
'[...]'`); its default names the usual credential stores and browser profiles. Every meith home
of the user (`base.home_registry`) is always secret, whatever the setting says.

- `secret_paths(settings)` — the list, expanded and resolved (`~` is the user's home);
- `is_secret_path(path, settings)` — whether `path` is one of them or lies beneath one: the
  check a read tool makes before opening anything (the files plugin uses this very function);

A confined process gets each existing secret path covered in its mount namespace (an empty
read-only directory, or /dev/null for a file): see `confine.plan`.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from meith_core.base.home import read_json
from meith_core.base.home_registry import known_homes, registry_dir, user_tmp_dir
from meith_core.base.paths import resolved_within

#: The settings section and keys (policy: only the local user changes them).
SECTION: Final = "confinement"
KEY: Final = "secretPaths"
PATTERNS_KEY: Final = "secretPatterns"

#: Names of files that hold secrets wherever they are, inside an allowed directory too
#: (shell-style patterns on the name; `!pattern` keeps a name that another pattern names).
#: ssh keys by their usual names rather than `id_*`, which would hide `id_map.py`; the env
#: files' committed examples stay readable.
DEFAULT_SECRET_PATTERNS: Final[tuple[str, ...]] = (
    ".env",
    ".env.*",
    "!.env.example",
    "!.env.sample",
    "!.env.template",
    "*.pem",
    "*.key",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "id_ecdsa_sk",
    "id_ed25519_sk",
)

#: The default secret paths (`~` is the user's home directory).
DEFAULT_SECRET_PATHS: Final[tuple[str, ...]] = (
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/gh",
    "~/.config/hub",
    "~/.password-store",
    "~/.local/share/keyrings",
    # Package registries' and cloud tools' tokens (a grant for `npm install` must not carry an
    # `npm publish` of the user's package).
    "~/.npmrc",
    "~/.yarnrc.yml",
    "~/.pypirc",
    "~/.config/pip",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.gem/credentials",
    "~/.m2/settings.xml",
    "~/.gradle/gradle.properties",
    "~/.config/containers/auth.json",
    "~/.terraform.d/credentials.tfrc.json",
    "~/.vault-token",
    # Shell and REPL histories: tokens typed on command lines.
    "~/.bash_history",
    "~/.zsh_history",
    "~/.histfile",
    "~/.sh_history",
    "~/.local/share/fish/fish_history",
    "~/.python_history",
    "~/.psql_history",
    "~/.mysql_history",
    "~/.sqlite_history",
    "~/.node_repl_history",
    "~/.irb_history",
    "~/.rediscli_history",
    "~/.lesshst",
    # Browser profiles: cookies, saved passwords, session tokens.
    "~/.mozilla",
    "~/.config/google-chrome",
    "~/.config/chromium",
    "~/.config/BraveSoftware",
    "~/.config/microsoft-edge",
    "~/.config/vivaldi",
    "~/.config/opera",
    "~/snap/firefox",
    "~/snap/chromium",
    "~/.var/app/org.mozilla.firefox",
    "~/.var/app/com.google.Chrome",
    "~/Library/Application Support/Google/Chrome",
    "~/Library/Application Support/Firefox",
    "~/Library/Keychains",
)


def _expand(path: str, existing: bool = False) -> str | None:
    if not path or "\0" in path:
        return None
    expanded = os.path.expanduser(path)
    if not os.path.isabs(expanded):
        return None
    if existing and not os.path.lexists(expanded):
        # Not there (the kernel resolves a path as `realpath` does): nothing to resolve.
        return None
    return os.path.realpath(expanded)


def configured_secret_paths(settings: Mapping[str, Any] | None) -> list[str]:
    """The `confinement.secretPaths` of `settings` (a settings.json object), as written, or the
    default when unset or invalid."""
    section = settings.get(SECTION) if isinstance(settings, Mapping) else None
    value = section.get(KEY) if isinstance(section, Mapping) else None
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    return list(DEFAULT_SECRET_PATHS)


def configured_secret_patterns(settings: Mapping[str, Any] | None) -> list[str]:
    """The `confinement.secretPatterns` of `settings`, or the default when unset or invalid."""
    section = settings.get(SECTION) if isinstance(settings, Mapping) else None
    value = section.get(PATTERNS_KEY) if isinstance(section, Mapping) else None
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    return list(DEFAULT_SECRET_PATTERNS)


def secret_patterns(
    settings: Mapping[str, Any] | None = None, *, home: str | os.PathLike[str] | None = None
) -> tuple[str, ...]:
    """The secret file-name patterns (from `settings`, else `home`'s settings.json, else the
    default)."""
    if settings is None and home is not None:
        data = read_json(Path(home) / "settings.json")
        settings = data if isinstance(data, dict) else None
    return tuple(configured_secret_patterns(settings))


def matches_secret_pattern(name: str, patterns: Iterable[str]) -> bool:
    """Whether the file name `name` is secret by `patterns`: one pattern names it and no
    `!pattern` keeps it (case-sensitive, as the file system is)."""
    named = False
    for pattern in patterns:
        if pattern.startswith("!"):
            if fnmatch.fnmatchcase(name, pattern[1:]):
                return False
        elif not named and fnmatch.fnmatchcase(name, pattern):
            named = True
    return named


def secret_paths(
    settings: Mapping[str, Any] | None = None,
    *,
    home: str | os.PathLike[str] | None = None,
    extra: Iterable[str] = (),
    existing: bool = False,
) -> tuple[str, ...]:
    """Every secret path, absolute and resolved: the setting's (from `settings`, else read from
    `home`'s settings.json, else the default), every meith home, the registry of homes, the
    per-user socket directory in /tmp, and `extra`. `existing`: only those there now (what a
    confinement plan covers; most of the default list is absent on any one machine)."""
    if settings is None and home is not None:
        data = read_json(Path(home) / "settings.json")
        settings = data if isinstance(data, dict) else None
    listed = [*configured_secret_paths(settings), *extra, str(registry_dir()), str(user_tmp_dir())]
    if home is not None:
        listed.append(os.fspath(home))
    out = [p for p in (_expand(x, existing) for x in listed) if p is not None]
    homes = known_homes()  # resolved already
    if existing:
        homes = [h for h in homes if os.path.lexists(h)]
    return tuple(dict.fromkeys([*out, *homes]))


def is_secret_path(
    path: str | os.PathLike[str],
    settings: Mapping[str, Any] | None = None,
    *,
    home: str | os.PathLike[str] | None = None,
    secrets: Iterable[str] | None = None,
    patterns: Iterable[str] | None = None,
) -> bool:
    """Whether `path` (resolved, symbolic links followed) is a secret path or lies beneath one,
    or its name is secret by the patterns (`secret_patterns`). Pass `secrets` (from
    `secret_paths`) and `patterns` to check many paths against one list."""
    real = os.path.realpath(os.fspath(path))
    names = patterns if patterns is not None else secret_patterns(settings, home=home)
    if matches_secret_pattern(os.path.basename(real), names):
        return True
    if secrets is None:
        listed: Iterable[str] = secret_paths(settings, home=home)  # resolved, each once
    else:
        listed = [p for p in (_expand(s) for s in secrets) if p is not None]
    return any(resolved_within(real, secret) for secret in listed)


__all__ = [
    "DEFAULT_SECRET_PATHS",
    "DEFAULT_SECRET_PATTERNS",
    "configured_secret_paths",
    "configured_secret_patterns",
    "is_secret_path",
    "matches_secret_pattern",
    "secret_paths",
    "secret_patterns",
]
