"""`meith call`, `meith tools`, `meith devlogs`: the commands that talk to a runtime.

Standard library + the blocking client only (start-up time matters here).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from meith_core.base.home import MeithHome
from meith_core.base.suggest import did_you_mean
from meith_core.cli.agent_view import agent_label, print_for_agent, render_for_agent
from meith_core.cli.args import UsageError, check_names, parse_call_line, parse_timeout, type_of
from meith_core.cli.output import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    EventPrinter,
    exit_code_for,
    fail,
    pretty,
    print_result,
)
from meith_core.client._core import ConnectError, Interrupted, TransportError
from meith_core.client.sync import Client


def _connect(
    socket_path: str | None,
    instance: str | None,
    cwd: str | None = None,
    *,
    agent: str | bool | None = False,
) -> Client:
    """The local user's connection; with `agent` (False: not; None or a name), an agent's, as
    the MCP bridge opens one: its workspace is `cwd` (here by default)."""
    if agent is False:
        return Client(socket_path, instance=instance, cwd=cwd)
    label = agent if isinstance(agent, str) else None
    return Client(socket_path, instance=instance, cwd=cwd, caller="agent", label=label)


def _transport_exit(exc: TransportError) -> int:
    code = EXIT_TIMEOUT if exc.code == "TIMEOUT" else EXIT_UNREACHABLE
    return fail(
        exc.message,
        code,
        socket_path=exc.socket_path if not isinstance(exc, ConnectError) else None,
    )


def run_call(tokens: list[str], ctx: Any) -> int | None:
    """Run `meith call`; None means "show typer's help instead" (only without a context)."""
    try:
        line = parse_call_line(tokens)
        opts = line.options
        if line.tool is None:
            if opts.get("help") or not tokens:
                if ctx is None:
                    return None
                if opts.get("help"):
                    sys.stdout.write(ctx.get_help() + "\n")
                    return EXIT_OK
                # `meith call` with nothing to call is a usage error, not a request for help.
                sys.stderr.write(ctx.get_help() + "\n\nerror: name the tool to call\n")
                return EXIT_USAGE
            raise UsageError(
                'Usage: meith call <toolName> [--key value ...]  (see "meith call --help")'
            )
        if line.positionals:
            raise UsageError(
                f"unexpected argument {line.positionals[0]!r}: pass tool arguments as --key value "
                f'(see "meith call {line.tool} --help")'
            )
        timeout = parse_timeout(opts["timeout"]) if "timeout" in opts else None
        cwd = opts.get("cwd")
        if cwd is not None:
            cwd = os.path.abspath(os.path.expanduser(str(cwd)))
            if not os.path.isdir(cwd):
                raise UsageError(f"--cwd {cwd}: no such directory")
        base = _read_stdin_object() if opts.get("stdin") and not opts.get("help") else {}
    except UsageError as exc:
        return fail(str(exc), EXIT_USAGE)
    as_agent = "as-agent" in opts
    if as_agent:
        try:
            import mcp_types  # noqa: F401 - the MCP bridge's rendering needs it
        except ImportError as exc:
            return fail(f"--as-agent needs meith-core[mcp] ({exc.name} is missing)", EXIT_USAGE)

    try:
        agent = agent_label(opts["as-agent"]) if as_agent else False
        client = _connect(opts.get("socket"), opts.get("instance"), cwd, agent=agent)
    except TransportError as exc:
        return _transport_exit(exc)
    with client:
        if opts.get("help"):
            return _tool_help(client, line.tool)
        try:
            # Flags are typed and checked by the tool's own schema (one small round trip); JSON
            # arguments are taken as they are, for the runtime to validate.
            descriptor = client.describe(line.tool) if line.flags else None
            schema = descriptor["inputSchema"] if descriptor else None
            check_names(line.tool, line.flags, schema)
            arguments = {**base, **line.resolve(schema)}
        except UsageError as exc:
            return fail(str(exc), EXIT_USAGE)
        except TransportError as exc:
            return _transport_exit(exc)
        printer = EventPrinter(
            verbose=bool(opts.get("verbose")),
            quiet=bool(opts.get("quiet")) or as_agent,
            as_json=bool(opts.get("json")),
        )
        artifacts: list[dict[str, Any]] = []

        def on_event(event: dict[str, Any]) -> None:
            if event.get("kind") == "artifact":
                artifacts.append(event)  # an agent receives them with the result
            printer(event)

        try:
            # An agent reads the text alone, as `meith mcp` asks for it.
            result = client.call_raw(
                line.tool, arguments, timeout_ms=timeout, on_event=on_event, text_only=as_agent
            )
        except Interrupted as exc:
            printer.close()
            if exc.result is not None:
                print_result(
                    exc.result, as_json=bool(opts.get("json")), quiet=bool(opts.get("quiet"))
                )
            else:
                sys.stderr.write("interrupted\n")
            return EXIT_INTERRUPTED
        except TransportError as exc:
            printer.close()
            return _transport_exit(exc)
        printer.close()
        if _error_code(result) == "UNKNOWN_TOOL":
            message = str(result["error"].get("message") or "").rstrip(".")
            result["error"]["message"] = message + "." + _suggestion(client, line.tool)
    if as_agent:
        plugin = descriptor.get("plugin") if descriptor else None
        sent = render_for_agent(
            result,
            artifacts,
            tool=line.tool,
            plugin=plugin,
            label=agent_label(opts["as-agent"]),
            home=MeithHome.from_env(),
        )
        print_for_agent(sent, as_json=bool(opts.get("json")))
        return exit_code_for(result)
    return print_result(
        result,
        as_json=bool(opts.get("json")),
        quiet=bool(opts.get("quiet")),
        verbose=bool(opts.get("verbose")),
    )


def _error_code(result: dict[str, Any]) -> str | None:
    error = result.get("error")
    return str(error.get("code")) if isinstance(error, dict) else None


def _suggestion(client: Client, name: str) -> str:
    """' Did you mean …?' for a misspelt tool name, and where to find the real ones."""
    try:
        names = [str(t.get("name")) for t in client.list_tools()]
    except TransportError:
        names = []
    return f'{did_you_mean(name, names)} List the tools with "meith tools".'


def _read_stdin_object() -> dict[str, Any]:
    try:
        data = json.load(sys.stdin)
    except ValueError as exc:
        raise UsageError(f"--stdin: invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError("--stdin must provide a JSON object of arguments")
    return data


def _tool_help(client: Client, name: str) -> int:
    try:
        tool = client.describe(name)
    except TransportError as exc:
        return _transport_exit(exc)
    if tool is None:
        return fail(f"Unknown tool: {name}.{_suggestion(client, name)}", EXIT_USAGE)
    out = sys.stdout
    out.write(f"meith call {name} — {tool.get('description', '').strip()}\n\n")
    out.write(f"Usage: meith call {name} [--key value ...] [--json] [--timeout MS] [--cwd DIR]\n")
    caps = ", ".join(tool.get("capabilities") or []) or "none"
    timeout = tool.get("timeoutMs")
    out.write(
        f"Plugin: {tool.get('plugin')}   Capabilities: {caps}   Timeout: {f'{timeout} ms' if timeout else 'none (runs until cancelled)'}\n"
    )
    schema = tool.get("inputSchema") or {}
    props: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    out.write("\nParameters:\n" if props else "\nParameters: none\n")
    for key, prop in props.items():
        flag = f"--{key}"
        kind = type_of(prop)
        if kind.endswith("[]") or kind in ("object", "json") or "object" in kind:
            flag += f" / --{key}-json"
        if key == "cwd":
            # The CLI always sends its working directory: the tool never sees it missing.
            extra = " (optional; default: the current directory)"
        elif key in required:
            extra = " (required)"
        else:
            extra = " (optional"
            given = prop.get("default") is not None
            extra += f"; default: {json.dumps(prop['default'])})" if given else ")"
        if key == "args" and kind.endswith("[]"):
            flag = "--args TOKEN ..."
        out.write(f"  {flag} <{kind}>{extra}\n")
        if prop.get("description"):
            out.write(f"      {prop['description']}\n")
        if key == "args" and kind.endswith("[]"):
            out.write(
                "      Give it once and last: every token after --args is taken literally,\n"
                "      dashes included (or put them after --).\n"
            )
    if "cwd" in props:
        out.write(
            "\n--cwd also sets the working directory the runtime sees; it defaults to here.\n"
        )
    return EXIT_OK


def run_tools_argv(argv: list[str]) -> int:
    """`meith tools [--json] [--long] [--socket PATH] [--instance PID|LABEL]` without typer."""
    opts: dict[str, Any] = {"json": False, "long": False, "socket": None, "instance": None}
    i = 0
    while i < len(argv):
        name, eq, inline = argv[i].partition("=")
        i += 1
        if name in ("--json", "--long") and not eq:
            opts[name[2:]] = True
        elif name in ("--socket", "--instance"):
            if not eq:
                if i >= len(argv):
                    return fail(f"{name} needs a value", EXIT_USAGE)
                inline, i = argv[i], i + 1
            opts[name[2:]] = inline
        else:
            return fail(
                f'unexpected argument {argv[i - 1]!r} (see "meith tools --help")', EXIT_USAGE
            )
    return run_tools(opts["json"], opts["socket"], opts["instance"], long=opts["long"])


def summarise(description: str, width: int) -> str:
    """The description's first paragraph on one line, cut to `width` at a sentence end or,
    failing that, a word boundary, with an ellipsis when anything was cut."""
    paragraph = " ".join(description.strip().split("\n\n", 1)[0].split())
    if len(paragraph) <= width:
        return paragraph
    head = paragraph[: width + 1]
    sentence = max(head.rfind(". "), head.rfind("; "))
    if sentence >= width // 2:
        return head[: sentence + 1] + " …"
    word = head[:width].rfind(" ")
    cut = head[: word if word > 0 else width - 1].rstrip(" ,;:")
    return cut + "…"


def run_tools(
    as_json: bool, socket_path: str | None, instance: str | None, *, long: bool = False
) -> int:
    import shutil
    import textwrap

    try:
        with _connect(socket_path, instance) as client:
            tools = client.list_tools()
    except TransportError as exc:
        return _transport_exit(exc)
    if as_json:
        sys.stdout.write(pretty(tools) + "\n")
        return EXIT_OK
    if not tools:
        sys.stdout.write("No tools registered.\n")
        return EXIT_OK
    columns = shutil.get_terminal_size((120, 24)).columns
    width = max(len(str(t.get("name"))) for t in tools)
    cap_width = max(len(", ".join(t.get("capabilities") or [])) for t in tools)
    room = max(40, columns - width - cap_width - 4)
    out = sys.stdout
    for t in tools:
        description = str(t.get("description") or "")
        caps = ", ".join(t.get("capabilities") or [])
        if long:
            out.write(f"{t.get('name')!s}  ({caps})\n")
            for paragraph in description.strip().split("\n\n"):
                text = " ".join(paragraph.split())
                out.write(textwrap.fill(text, max(40, columns - 4), initial_indent="    ",
                                        subsequent_indent="    ") + "\n")  # fmt: skip
            out.write("\n")
        else:
            summary = summarise(description, room)
            out.write(f"{t.get('name')!s:<{width}}  {caps:<{cap_width}}  {summary}\n")
    return EXIT_OK


def run_devlogs(
    dev_id: str | None,
    cwd: str | None,
    replay: bool,
    as_json: bool,
    quiet: bool,
    socket_path: str | None,
    instance: str | None,
) -> int:
    arguments: dict[str, Any] = {"replay": replay}
    if dev_id:
        arguments["devServerId"] = dev_id
        where = f"id {dev_id}"
    else:
        arguments["cwd"] = os.path.abspath(os.path.expanduser(cwd or os.getcwd()))
        where = f"cwd {arguments['cwd']}"
    try:
        client = _connect(socket_path, instance)
    except TransportError as exc:
        return _transport_exit(exc)
    out = sys.stdout
    if not quiet and not as_json:
        sys.stderr.write(f"attaching to dev server logs ({where})… Ctrl+C to stop\n")

    def on_event(event: dict[str, Any]) -> None:
        if as_json:
            out.write(json.dumps(event, ensure_ascii=False) + "\n")
        elif event.get("kind") == "log":
            out.write(f"{event.get('message', '')}\n")

    client.before_wait = out.flush  # live through pipes (`meith devlogs | grep`), cheaply
    with client:
        try:
            result = client.call_raw("attach_process_logs", arguments, on_event=on_event)
        except Interrupted:
            out.flush()
            return EXIT_OK  # Ctrl-C is how a log stream ends
        except TransportError as exc:
            return _transport_exit(exc)
    if not result.get("ok"):
        return print_result(result, as_json=as_json, quiet=quiet)
    return exit_code_for(result)
