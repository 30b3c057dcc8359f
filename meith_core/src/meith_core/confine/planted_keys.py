"""The one table of git config keys whose value makes git run a program (or read another
config file): what the planted-git scan removes and the git plugin's hardening neutralises."""

from __future__ import annotations

import fnmatch
import re
from typing import Final

#: Program-valued config keys (lower-case; `*` a driver or subsection name) and a neutral value
#: (what the git plugin sets with `-c` when the repository names one). The one table: the git
#: plugin's own hardening reads it too.
GIT_PROGRAM_KEYS: Final[tuple[tuple[str, str], ...]] = (
    ("core.fsmonitor", "false"),
    # Hooks are programs too; where a command may run them, they come from the repository's
    # own hooks directory (discovery passes it), never from a directory its config names.
    ("core.hookspath", "/dev/null"),
    ("core.sshcommand", ""),
    ("core.gitproxy", ""),
    ("core.askpass", ""),
    ("core.editor", ""),
    ("core.pager", "cat"),
    ("core.alternaterefscommand", ""),
    ("sequence.editor", ""),
    ("diff.external", ""),
    ("diff.*.command", ""),
    ("diff.*.textconv", ""),
    ("filter.*.clean", ""),
    ("filter.*.smudge", ""),
    ("filter.*.process", ""),
    ("filter.*.required", "false"),
    ("merge.*.driver", ""),
    ("gpg.program", "gpg"),
    ("gpg.openpgp.program", "gpg"),
    ("gpg.x509.program", "gpgsm"),
    ("gpg.ssh.program", "ssh-keygen"),
    ("gpg.ssh.defaultkeycommand", ""),
    ("credential.helper", ""),
    ("credential.*.helper", ""),
    ("pager.*", "cat"),
    ("remote.*.uploadpack", ""),
    ("remote.*.receivepack", ""),
    ("uploadpack.packobjectshook", ""),
    ("difftool.*.cmd", ""),
    ("difftool.*.path", ""),
    ("mergetool.*.cmd", ""),
    ("mergetool.*.path", ""),
    ("interactive.difffilter", ""),
    ("man.*.cmd", ""),
    ("man.*.path", ""),
    ("browser.*.cmd", ""),
    ("browser.*.path", ""),
    ("web.browser", ""),
    ("trailer.*.command", ""),
    ("trailer.*.cmd", ""),
    ("sendemail.tocmd", ""),
    ("sendemail.cccmd", ""),
    ("sendemail.*.tocmd", ""),
    ("sendemail.*.cccmd", ""),
    ("sendemail.smtpserver", ""),
    ("sendemail.*.smtpserver", ""),
    ("imap.tunnel", ""),
    ("instaweb.httpd", ""),
    ("guitool.*.cmd", ""),
    ("hook.*.command", ""),
    ("lfs.customtransfer.*.path", ""),
    ("lfs.extension.*.clean", ""),
    ("lfs.extension.*.smudge", ""),
)

_PROGRAM_PATTERNS: Final = tuple(re.compile(fnmatch.translate(p)) for p, _ in GIT_PROGRAM_KEYS)
#: Keys that pull other files into a config: in planted metadata, always removed.
_INCLUDE: Final = re.compile(r"^(?:include|includeif\..*)\.path$", re.DOTALL)
#: Keys whose value is a shell command when it starts with `!`.
_BANG: Final = re.compile(r"^(?:alias\..*|submodule\..*\.update)$", re.DOTALL)


def is_program_valued(key: str, value: str | None) -> bool:
    """Whether a config entry would make git run a program (or read another config file)."""
    lower = key.lower()
    if _INCLUDE.match(lower):
        return True
    if _BANG.match(lower):
        return value is not None and value.lstrip().startswith("!")
    return any(p.match(lower) for p in _PROGRAM_PATTERNS)


__all__ = ["GIT_PROGRAM_KEYS", "is_program_valued"]
