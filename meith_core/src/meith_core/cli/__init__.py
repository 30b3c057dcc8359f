"""The `meith` command line. `run()` is the console-script entry point.

`meith call TOOL ...` and `meith tools` are dispatched here before typer is imported: they are
the commands scripts and agents run in loops, their arguments are parsed by `cli.args` anyway
(a tool's flags cannot be declared to click), and typer coerces declared parameters through
pydantic, which costs more start-up time than the whole call. Everything else, and all help,
goes through the typer app in `cli.main`.
"""

from __future__ import annotations

import os
import sys

_HELP = frozenset({"--help", "-h"})


def run() -> None:
    try:
        _dispatch(sys.argv[1:])
    except BrokenPipeError:
        # `meith tools | head`: the reader left. Say nothing (like other Unix tools) and keep
        # Python from complaining again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)  # 128 + SIGPIPE, what a shell reports for a command killed by it


def _dispatch(argv: list[str]) -> None:
    if len(argv) >= 2 and argv[0] == "call" and argv[1] not in _HELP:
        from meith_core.cli.call import run_call

        code = run_call(argv[1:], None)
        if code is not None:
            sys.exit(code)
    elif argv[:1] == ["tools"] and not _HELP & set(argv):
        from meith_core.cli.call import run_tools_argv

        sys.exit(run_tools_argv(argv[1:]))
    from meith_core.cli.main import app

    app()
