"""`meith plugins new` and `meith plugins check`: the plugin author's commands."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from meith_core._cli.output import EXIT_OK, EXIT_TOOL_FAILED, EXIT_USAGE, fail


def run_plugins_new(name: str, directory: str | None) -> int:
    from meith_core._plugins.scaffold import ScaffoldError, scaffold

    try:
        names, target, files = scaffold(name, Path(directory) if directory else None)
    except ScaffoldError as exc:
        return fail(str(exc), EXIT_USAGE)
    shown = os.path.relpath(target) if not os.path.isabs(directory or "") else str(target)
    sys.stdout.write(
        f"Created plugin {names.id!r} (distribution {names.distribution}) in {shown}: "
        f"{len(files)} files.\n\nNext:\n"
        f"  cd {shown}\n"
        "  pip install -e '.[test]' && pytest     # the generated tests pass as they are\n"
        "  meith plugins check .                  # what to fix before publishing\n"
        f"  pip install . && meith plugins         # {names.id} is listed; then\n"
        f"  meith plugins approve {names.id} && meith call {names.id}_count_lines --path README.md\n"
    )
    return EXIT_OK


def run_plugins_check(target: str | None, as_json: bool) -> int:
    import logging

    import structlog

    from meith_core._plugins.check import check_installed, check_project

    # Load failures are reported below, with their reason; the log would only repeat them.
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
    )
    if target is not None and (os.sep in target or target.startswith(".") or Path(target).is_dir()):
        if not Path(target).is_dir():
            return fail(f"{target} is not a directory", EXIT_USAGE)
        reports = check_project(Path(target))
    else:
        reports = check_installed(None if target is None else [target])
    if as_json:
        sys.stdout.write(json.dumps([r.as_json() for r in reports], indent=2) + "\n")
    else:
        for report in reports:
            dist = f"{report.distribution} {report.version}" if report.distribution else "?"
            timing = f", import {report.import_ms:.0f} ms" if report.import_ms is not None else ""
            verdict = "ok" if report.ok else "FAILED"
            sys.stdout.write(
                f"{report.plugin} ({dist}): {verdict} - {len(report.tools)} tools{timing}\n"
            )
            for level, message in report.problems:
                sys.stdout.write(f"  {level}: {message}\n")
        errors = sum(1 for r in reports for lv, _ in r.problems if lv == "error")
        warnings = sum(1 for r in reports for lv, _ in r.problems if lv == "warning")
        sys.stdout.write(
            f"checked {len(reports)} plugin{'s' if len(reports) != 1 else ''}: "
            f"{errors} error{'s' if errors != 1 else ''}, "
            f"{warnings} warning{'s' if warnings != 1 else ''}\n"
        )
    return EXIT_OK if reports and all(r.ok for r in reports) else EXIT_TOOL_FAILED
