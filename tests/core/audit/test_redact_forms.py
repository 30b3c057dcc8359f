"""The audit never holds in clear a secret carried by one of the known forms — env maps, command
lines, argument vectors, URL query parameters, nested settings keys, keystrokes, terminal and
page buffers, fields a tool marks sensitive — whatever the secret is (property-tested), and
wherever it travels: arguments, results, error messages and denied calls."""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, create_model

from meith_core import ErrorCode, Runtime, ToolContext, ToolError, tool
from meith_core.audit.redact import summarize

Form = Callable[[str], Any]

ENV_NAMES = ["PASS", "PWD", "AUTH", "TOKEN", "SECRET", "KEY", "CREDENTIAL", "COOKIE", "SESSION"]


def _env(key: str) -> Form:
    return lambda s: {"env": {key: s}}


# name -> how the form carries a secret. Values are JSON objects (tool arguments).
FORMS: dict[str, Form] = {
    **{f"env {n}": _env(f"MY_{n}_VALUE") for n in ENV_NAMES},
    **{f"env lower {n}": _env(f"my_{n.lower()}") for n in ENV_NAMES},
    "env-shaped key anywhere": lambda s: {"vars": {"AWS_SECRET_ACCESS_KEY": s}},
    "environment map": lambda s: {"environment": {"GITHUB_TOKEN": s}},
    "--password X": lambda s: {"command": f"mysql --password {s} -h db"},
    "--password=X": lambda s: {"command": f"mysql --password={s} -h db"},
    "--api-key=X": lambda s: {"command": f"tool --api-key={s} run"},
    "--db-pass 'X'": lambda s: {"command": f"tool --db-pass '{s}' run"},
    "-u user:pass": lambda s: {"command": f"curl -u bob:{s} https://example.com"},
    "mysql -u root -pX": lambda s: {"command": f"mysql -u root -p{s} -h db app"},
    "mysqldump --user=root -pX": lambda s: {"command": f"mysqldump --user=root -p{s} app"},
    "argv -u root -pX": lambda s: {"args": ["mysql", "-u", "root", f"-p{s}", "app"]},
    "argv -uroot -pX": lambda s: {"args": ["mysql", "-uroot", f"-p{s}"]},
    "free text password: X": lambda s: {"message": f"login with password: {s} please"},
    "free text Password=X": lambda s: {"note": f"Password={s}"},
    "free text password is X": lambda s: {"note": f"the wifi password is {s} today"},
    "free text pw: X": lambda s: {"note": f"pw: {s}"},
    "-uuser:pass": lambda s: {"command": f"curl -ubob:{s} https://example.com"},
    "--user=user:pass": lambda s: {"command": f"curl --user=bob:{s} https://example.com"},
    "Authorization header": lambda s: {"command": f"curl -H 'Authorization: {s}' https://x.test"},
    "Authorization Basic header": lambda s: {"headers": [f"Authorization: Basic {s}"]},
    "Cookie header": lambda s: {"request": f"GET / HTTP/1.1\r\nCookie: sid={s}\r\n\r\n"},
    "X-Api-Key header": lambda s: {"header": f"X-Api-Key: {s}"},
    "PASSWORD=X assignment": lambda s: {"line": f"export DB_PASSWORD={s}; ./run"},
    "password=X in a DSN": lambda s: {"dsn": f"host=db user=app password={s} dbname=x"},
    "argv --password X": lambda s: {"args": ["mysql", "--password", s]},
    "argv --api-key X": lambda s: {"args": ["--api-key", s, "run"]},
    "argv -u user:pass": lambda s: {"args": ["curl", "-u", f"bob:{s}", "https://x.test"]},
    "argv -H Authorization": lambda s: {"args": ["curl", "-H", f"Authorization: Bearer {s}"]},
    "URL ?access_token=": lambda s: {"url": f"https://x.test/cb?access_token={s}&x=1"},
    "URL &api_key=": lambda s: {"url": f"https://x.test/?q=1&api_key={s}"},
    "URL ?password=": lambda s: {"url": f"https://x.test/login?user=bob&password={s}"},
    "URL ?sig=": lambda s: {"url": f"https://bucket.test/o?X-Amz-Signature={s}"},
    "URL ?client_secret=": lambda s: {"url": f"https://x.test/t?client_secret={s}#frag"},
    "URL user:pass@": lambda s: {"url": f"https://bob:{s}@x.test/repo.git"},
    "settings pass": lambda s: {"settings": {"git": {"profiles": [{"name": "w", "pass": s}]}}},
    "settings pwd": lambda s: {"settings": {"db": {"pwd": s}}},
    "settings pw": lambda s: {"settings": {"db": {"pw": s}}},
    "settings passphrase": lambda s: {"settings": {"ssh": {"passphrase": s}}},
    "settings auth": lambda s: {"settings": {"proxy": {"auth": s}}},
    "keystrokes text": lambda s: {"elementId": "e1", "text": s},
    "keystrokes keys": lambda s: {"keys": s},
    "terminal input": lambda s: {"terminalId": "t1", "data": f"{s}\r"},
    "terminal buffer": lambda s: {"buffer": f"$ echo {s}\r\n{s}\r\n$ "},
    "page snapshot": lambda s: {"snapshot": f"<input value={s}>"},
    "log lines": lambda s: {"lines": [f"user typed {s}"]},
    "JSON body in a string": lambda s: {"message": f'request failed: {{"password": "{s}"}}'},
    "repr in a string": lambda s: {"message": f"bad config {{'api_key': '{s}'}}"},
    # Issue 32, case 8: forms the table missed.
    "mysql -u root -p X": lambda s: {"command": f"mysql -u root -p {s} -h db"},
    "argv -u root -p X": lambda s: {"command": ["mysql", "-u", "root", "-p", s, "app"]},
    "sshpass -p X": lambda s: {"shell": f"sshpass -p {s} ssh deploy@host uptime"},
    "sshpass -pX": lambda s: {"shell": f"sshpass -p{s} scp a host:"},
    "argv sshpass -p X": lambda s: {"command": ["sshpass", "-p", s, "ssh", "host"]},
    "redis-cli -a X": lambda s: {"shell": f"redis-cli -h db -a {s} ping"},
    "argv redis-cli -a X": lambda s: {"command": ["/usr/bin/redis-cli", "-a", s, "ping"]},
    "ldapsearch -w X": lambda s: {"shell": f"ldapsearch -x -D cn=admin -w {s} -b dc=x"},
    "argv ldapmodify -w X": lambda s: {"command": ["ldapmodify", "-D", "cn=a", "-w", s]},
    "smbclient -U user%pw": lambda s: {"shell": f"smbclient //srv/share -U bob%{s} -c ls"},
    "smbclient --user=user%pw": lambda s: {"shell": f"smbclient //srv/s --user=bob%{s}"},
    "argv smbclient -U user%pw": lambda s: {"command": ["smbclient", "//s/x", "-U", f"bob%{s}"]},
    "zip -P X": lambda s: {"shell": f"zip -r -P {s} out.zip dir"},
    "argv zip -P X": lambda s: {"command": ["zip", "-P", s, "out.zip", "a.txt"]},
    "7z -pX": lambda s: {"shell": f"7z a -mhe=on -p{s} out.7z dir"},
    "argv 7z -pX": lambda s: {"command": ["7za", "x", f"-p{s}", "in.7z"]},
    "dev server args sshpass -p X": lambda s: {"command": "sshpass", "args": ["-p", s, "ssh"]},
    "echo X | sudo -S": lambda s: {"shell": f"echo {s} | sudo -S apt-get update"},
    "echo 'X' | sudo -kS": lambda s: {"shell": f"echo '{s}' | sudo -k -S true"},
    "printf X | sudo -S": lambda s: {"shell": f"printf '%s\\n' {s} | /usr/bin/sudo -S id"},
    "Slack webhook": lambda s: {"url": f"https://hooks.slack.com/services/T0A1/B0B2/{s}"},
    "Discord webhook": lambda s: {"url": f"https://discord.com/api/webhooks/1234/{s}"},
    "Teams webhook": lambda s: {"url": f"https://contoso.webhook.office.com/webhookb2/{s}"},
    "webhook in a command": lambda s: {
        "shell": f"curl -X POST -d @m.json https://hooks.example.org/hooks/{s}"
    },
}

# Secrets as the property test draws them: no whitespace or delimiters (a delimiter ends a
# value in every form by design) and a marker prefix so they cannot occur by accident.
_SECRET_CHARS = string.ascii_letters + string.digits + "!$%*+-.@^_~/=,:"
secrets_ = st.text(alphabet=_SECRET_CHARS, min_size=4, max_size=40).map(lambda t: "Zq" + t)


@pytest.mark.parametrize("form", FORMS, ids=list(FORMS))
@settings(max_examples=40, deadline=None)
@given(secret=secrets_)
def test_no_form_leaks_its_secret(form: str, secret: str) -> None:
    out = summarize(FORMS[form](secret))
    assert secret not in out, out


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ({"command": "git commit --author 'Ann <a@x.test>' -m fix"}, "Ann <a@x.test>"),
        ({"url": "https://x.test/search?q=readme&page=2"}, "q=readme&page=2"),
        ({"args": ["git", "log", "--oneline", "-n", "5"]}, '"-n","5"'),
        ({"env": {"PATH": "/usr/bin", "LANG": "C.UTF-8"}}, "/usr/bin"),
        ({"settings": {"git": {"activeIdentityProfileId": "work"}}}, '"work"'),
        ({"command": "mkdir -p build && ssh -p 2222 host"}, "mkdir -p build && ssh -p 2222"),
        ({"args": ["mkdir", "-p", "build"]}, '"-p","build"'),
        ({"command": "git add -u -p src/app.py"}, "-u -p src/app.py"),
        ({"command": ["git", "add", "-u", "-p", "src/app.py"]}, '"-p","src/app.py"'),
        ({"shell": "zip -r out.zip dir && 7z x -o/tmp/x in.7z"}, "-o/tmp/x in.7z"),
        ({"shell": "redis-cli -h db ping; sudo -S -v"}, "-h db ping; sudo -S -v"),
        ({"url": "https://example.org/docs/webhooks"}, "/docs/webhooks"),
        ({"shell": "echo done | sudo tee /etc/x"}, "echo done | sudo tee"),
    ],
)
def test_ordinary_values_stay_readable(value: Any, kept: str) -> None:
    assert kept in summarize(value)


# -- end to end: every form through real calls ------------------------------------------------------


# Every top-level key the forms use, as optional fields of any type.
AnyArgs = create_model(  # type: ignore[call-overload]
    "AnyArgs",
    __config__=ConfigDict(extra="forbid"),
    **{key: (Any, None) for form in FORMS.values() for key in form("x")},
)


class PinArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str
    pinCode: str = Field(json_schema_extra={"sensitive": True})


def _tools() -> list[Any]:
    async def echo(ctx: ToolContext, args: Any) -> Any:
        return args.model_dump(exclude_none=True)

    async def fail(ctx: ToolContext, args: Any) -> Any:
        value = args.model_dump(exclude_none=True)
        raise ToolError(ErrorCode.TOOL_FAILED, f"failed with {value}", {"input": value})

    async def guarded(ctx: ToolContext, args: Any) -> Any:
        return "ran"

    async def unlock(ctx: ToolContext, args: PinArgs) -> Any:
        return {"unlocked": args.label}

    return [
        tool(echo, input=AnyArgs, capabilities=["read-only"], description="echo"),
        tool(fail, input=AnyArgs, capabilities=["read-only"], description="fail"),
        tool(guarded, input=AnyArgs, capabilities=["writes-files"], description="guarded"),
        tool(unlock, input=PinArgs, capabilities=["read-only"], description="unlock"),
    ]


SECRET = "Zq7hunter2-Sup3r.S3cret"


@pytest.mark.anyio
async def test_every_form_is_redacted_in_arguments_results_errors_and_denied_calls(
    runtime: Runtime,
) -> None:
    runtime.register(_tools())
    agent = runtime.open_session("agent")  # no grant: `guarded` is denied
    for form in FORMS.values():
        value = form(SECRET)
        # A session per form: repeated failures of one session would be coalesced.
        caller = runtime.open_session("cli")
        assert (await runtime.call("echo", value, caller=caller)).ok
        assert (await runtime.call("fail", value, caller=caller)).error.code is (
            ErrorCode.TOOL_FAILED
        )
        denied = await runtime.call("guarded", value, caller=agent)
        assert denied.error.code is ErrorCode.PERMISSION_DENIED
        agent = runtime.open_session("agent")
        allowed = await runtime.call("guarded", value)  # internal: allowed, with an intent
        assert allowed.ok
    runtime.audit.close()
    trail = runtime.audit.path.read_bytes()
    assert trail.count(b'"toolName":"echo"') == len(FORMS)
    assert trail.count(b'"kind":"intent"') == len(FORMS)
    assert SECRET.encode() not in trail


@pytest.mark.anyio
async def test_a_field_marked_sensitive_is_redacted_whatever_its_name(runtime: Runtime) -> None:
    runtime.register(_tools())
    result = await runtime.call("unlock", {"label": "front door", "pinCode": "Zq4711"})
    assert result.ok
    [record] = list(runtime.audit.read())
    assert "Zq4711" not in record["argsSummary"]
    assert "front door" in record["argsSummary"]
    bad = await runtime.call("unlock", {"label": "x", "pinCode": "Zq4711", "extra": 1})
    assert bad.error.code is ErrorCode.VALIDATION_ERROR
    assert b"Zq4711" not in runtime.audit.path.read_bytes()


@pytest.mark.anyio
async def test_typed_text_quoted_back_in_an_error_message_is_redacted(runtime: Runtime) -> None:
    class TypeArgs(BaseModel):
        model_config = ConfigDict(extra="forbid")
        elementId: str
        text: str

    async def type_text(ctx: ToolContext, args: TypeArgs) -> Any:
        raise ToolError(
            ErrorCode.TOOL_FAILED, f"Element {args.elementId} has no option labelled {args.text!r}"
        )

    runtime.register(tool(type_text, input=TypeArgs, capabilities=["read-only"], description="t"))
    result = await runtime.call("type_text", {"elementId": "e7", "text": "Zq-correct horse"})
    assert "Zq-correct horse" in result.error.message  # the caller sees its own text...
    [record] = list(runtime.audit.read())
    assert "Zq-correct horse" not in record["resultSummary"]  # ...the audit does not
    assert "Element e7 has no option labelled" in record["resultSummary"]
