"""The one table of risky git config keys: what makes git run a program, reach a transport that
runs one, read another config file, or check files out elsewhere. The planted-git scan removes
them from planted metadata; the git plugin's hardening reads the same table."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal

from meith_core.base.paths import is_within

#: `(key as written, value) -> True` when that value is the risky one.
ValueTest = Callable[[str, str | None], bool]
Kind = Literal["program", "transport", "include", "command", "worktree"]


@dataclass(frozen=True, slots=True)
class GitKey:
    """One entry of the table."""

    #: Lower-case; `*` a driver or subsection name.
    pattern: str
    kind: Kind
    #: What the git plugin sets with `-c` instead of a repository's value; None: the plugin
    #: has no override to make (its `protocol.allow=never` stops every transport, it runs no
    #: aliases or submodule updates, reads includes as the repository's own scope, and
    #: refuses a layout whose `core.worktree` points away from the work tree).
    neutral: str | None = None
    #: Risky only for some values; None: whatever the value.
    risky: ValueTest | None = None
    _re: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_re", re.compile(fnmatch.translate(self.pattern)))

    def matches(self, lower_key: str) -> bool:
        return self._re.match(lower_key) is not None


def _helper_url(text: str | None) -> bool:
    # `ext::CMD` runs CMD; `fd::` speaks over descriptors git inherited. Other `<vcs>::`
    # helpers are programs git finds on PATH by name, not named by the config.
    return text is not None and text.lstrip().lower().startswith(("ext::", "fd::"))


def _url_value(key: str, value: str | None) -> bool:
    return _helper_url(value)


def _rewrite_base(key: str, value: str | None) -> bool:
    # `url.<base>.insteadOf = <prefix>`: URLs starting with the value become the base.
    base = key.split(".", 1)[1].rsplit(".", 1)[0] if key.count(".") >= 2 else ""
    return _helper_url(base) or _helper_url(value)


def _not_never(key: str, value: str | None) -> bool:
    return value is None or value.strip().lower() != "never"


def _bang(key: str, value: str | None) -> bool:
    return value is not None and value.lstrip().startswith("!")


def _program(pattern: str, neutral: str = "") -> GitKey:
    return GitKey(pattern, "program", neutral)


#: The table (see `GitKey`).
GIT_RISKY_KEYS: Final[tuple[GitKey, ...]] = (
    _program("core.fsmonitor", "false"),
    # Hooks are programs too; where a command may run them, they come from the repository's
    # own hooks directory (discovery passes it), never from a directory its config names.
    _program("core.hookspath", "/dev/null"),
    _program("core.sshcommand"),
    _program("core.gitproxy"),
    _program("core.askpass"),
    _program("core.editor"),
    _program("core.pager", "cat"),
    _program("core.alternaterefscommand"),
    _program("sequence.editor"),
    _program("diff.external"),
    _program("diff.*.command"),
    _program("diff.*.textconv"),
    _program("filter.*.clean"),
    _program("filter.*.smudge"),
    _program("filter.*.process"),
    _program("filter.*.required", "false"),
    _program("merge.*.driver"),
    _program("gpg.program", "gpg"),
    _program("gpg.openpgp.program", "gpg"),
    _program("gpg.x509.program", "gpgsm"),
    _program("gpg.ssh.program", "ssh-keygen"),
    _program("gpg.ssh.defaultkeycommand"),
    _program("credential.helper"),
    _program("credential.*.helper"),
    _program("pager.*", "cat"),
    _program("remote.*.uploadpack"),
    _program("remote.*.receivepack"),
    _program("uploadpack.packobjectshook"),
    _program("difftool.*.cmd"),
    _program("difftool.*.path"),
    _program("mergetool.*.cmd"),
    _program("mergetool.*.path"),
    _program("interactive.difffilter"),
    _program("man.*.cmd"),
    _program("man.*.path"),
    _program("browser.*.cmd"),
    _program("browser.*.path"),
    _program("web.browser"),
    _program("trailer.*.command"),
    _program("trailer.*.cmd"),
    _program("sendemail.tocmd"),
    _program("sendemail.cccmd"),
    _program("sendemail.*.tocmd"),
    _program("sendemail.*.cccmd"),
    _program("sendemail.smtpserver"),
    _program("sendemail.*.smtpserver"),
    _program("imap.tunnel"),
    _program("instaweb.httpd"),
    _program("guitool.*.cmd"),
    _program("hook.*.command"),
    _program("lfs.customtransfer.*.path"),
    _program("lfs.extension.*.clean"),
    _program("lfs.extension.*.smudge"),
    # Transports: `protocol.allow=always` lets an `ext::` URL run its command at the next
    # fetch, push or submodule update. Every scope's `protocol.<name>.allow` is forced to
    # never by the git plugin (it beats the `protocol.allow=never` of every command).
    GitKey("protocol.allow", "transport", "never", _not_never),
    GitKey("protocol.*.allow", "transport", "never", _not_never),
    GitKey("remote.*.url", "transport", None, _url_value),
    GitKey("remote.*.pushurl", "transport", None, _url_value),
    GitKey("url.*.insteadof", "transport", None, _rewrite_base),
    GitKey("url.*.pushinsteadof", "transport", None, _rewrite_base),
    GitKey("submodule.*.url", "transport", None, _url_value),
    # A planted config has no business pulling in another file.
    GitKey("include.path", "include"),
    GitKey("includeif.*.path", "include"),
    # Shell commands when they start with `!`.
    GitKey("alias.*", "command", None, _bang),
    GitKey("submodule.*.update", "command", None, _bang),
    # Where the user's checkout, reset or stash writes: risky outside the walls (judged by
    # `git_key_risk` where the gitdir and the walls are known).
    GitKey("core.worktree", "worktree"),
)


def git_key_risk(
    key: str,
    value: str | None,
    *,
    gitdir: str | None = None,
    inside: tuple[str, ...] = (),
) -> GitKey | None:
    """The table's entry that makes this config entry risky, or None.

    `core.worktree` is judged only with `gitdir` (the gitdir the config belongs to, against
    which a relative value resolves) and `inside` (the directories the work tree may lie in):
    risky when the work tree lies outside all of them.
    """
    lower = key.lower()
    for entry in GIT_RISKY_KEYS:
        if not entry.matches(lower):
            continue
        if entry.kind == "worktree":
            return entry if gitdir is not None and _outside(value, gitdir, inside) else None
        if entry.risky is None or entry.risky(key, value):
            return entry
        return None
    return None


def _outside(value: str | None, gitdir: str, inside: tuple[str, ...]) -> bool:
    if not value:
        return False
    tree = os.path.realpath(os.path.join(gitdir, os.path.expanduser(value)))
    return not any(is_within(tree, root) for root in inside)


__all__ = ["GIT_RISKY_KEYS", "GitKey", "git_key_risk"]
