"""`meith ui`: the local web console (`meith_core.ui`), served until interrupted."""

from __future__ import annotations

import asyncio
import sys

from meith_core.cli.output import EXIT_OK, EXIT_USAGE, fail


def run_ui(
    *,
    host: str,
    port: int,
    no_browser: bool,
    socket_path: str | None,
    allow_remote: bool,
    tls_cert: str | None,
    tls_key: str | None,
    public_names: tuple[str, ...] = (),
) -> int:
    try:
        from meith_core.ui.serve import UsageError, serve_console
    except ImportError as exc:  # Starlette and uvicorn come with the mcp extra
        return fail(f"meith ui needs meith-core[mcp] ({exc.name} is missing)", EXIT_USAGE)
    try:
        asyncio.run(
            serve_console(
                host=host,
                port=port,
                open_browser=not no_browser,
                socket_path=socket_path,
                certfile=tls_cert,
                keyfile=tls_key,
                allow_remote=allow_remote,
                public_names=public_names,
                out=sys.stdout,
            )
        )
    except UsageError as exc:
        return fail(str(exc), EXIT_USAGE)
    except OSError as exc:  # the port is taken, the address is not ours
        return fail(f"meith ui cannot listen on {host}:{port}: {exc.strerror or exc}", EXIT_USAGE)
    except KeyboardInterrupt:
        pass
    return EXIT_OK
