"""meith's installation is protected as installed, tried as an attacker would: a confined
process whose grant covers a directory holding meith's own code — an editable checkout (the
directories its `.pth` files add), a plugin loaded from there — opens a module file to append
to it. Refused (EACCES), the file unchanged; its other files stay writable."""

from __future__ import annotations

import hashlib
import shlex
import sys
from pathlib import Path

import pytest

import meith_core
import meith_plugins_process
from meith_core.confine import protected
from tests.core.confine.support import needs_landlock, results
from tests.process.conftest import Proc
from tests.process.sealed import agent
from tests.process.support import ok

pytestmark = [pytest.mark.anyio, needs_landlock, pytest.mark.slow]

#: Opens each file for appending and writes nothing (so a missing wall changes no byte):
#: `key:errno` (0 when the open succeeded).
_APPEND = """
import sys
for key, path in zip(sys.argv[1::2], sys.argv[2::2]):
    try:
        open(path, "a").close()
        print(f"{key}:0")
    except OSError as exc:
        print(f"{key}:{exc.errno}")
"""


def append_probe(files: dict[str, Path]) -> str:
    args = " ".join(f"{k} {shlex.quote(str(v))}" for k, v in files.items())
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(_APPEND)} {args}"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_plugin_loaded_from_the_granted_directory_is_not_writable(
    proc: Proc, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    package = repo / "checkout" / "src" / "meith_attack_plugin"
    package.mkdir(parents=True)
    module = package / "__init__.py"
    module.write_text("class Plugin:\n    pass\n")
    sys.path.insert(0, str(package.parent))
    try:
        import meith_attack_plugin  # type: ignore[import-not-found]

        assert proc.rt.load_plugin("attack", meith_attack_plugin.Plugin()).status == "loaded"
        before = digest(module)
        (repo / "notes.txt").write_text("mine\n")
        caller = agent(proc, repo)
        line = append_probe({"plugin": module, "own": repo / "notes.txt"})
        done = ok(
            await proc.rt.call("run_command", {"cwd": str(repo), "shell": line}, caller=caller)
        )
        got = results(str(done["stdout"]))
        assert got["plugin"] == "13", done  # EACCES
        assert got["own"] == "0", done  # the control: the rest of its directory is its own
        assert digest(module) == before
    finally:
        sys.path.remove(str(package.parent))
        sys.modules.pop("meith_attack_plugin", None)
        protected._loaded.discard(str(package.resolve()))


async def test_meiths_own_editable_checkout_is_not_writable(proc: Proc, tmp_path: Path) -> None:
    """The grant covers the checkout meith runs from (an editable install, as in development):
    meith_core's and the plugins' modules, found through the `.pth` files, are refused."""
    core = Path(meith_core.__file__).resolve().parent
    checkout = core.parents[2]
    if not (checkout / "meith_plugins_process").is_dir():
        pytest.skip("meith is not run from its checkout here")
    targets = {
        "cli": core / "cli" / "main.py",
        "policy": core / "policy" / "grants.py",
        # The plugin's module as loaded: from the checkout in an editable install, from a
        # venv beneath it under `nox` (the checkout's copy is then not meith's code).
        "plugin": Path(meith_plugins_process.__file__).resolve().parent / "killer.py",
    }
    if not targets["plugin"].is_relative_to(checkout):
        pytest.skip("the process plugin is installed outside the checkout here")
    before = {k: digest(p) for k, p in targets.items()}
    caller = agent(proc, checkout)
    done = ok(
        await proc.rt.call(
            "run_command", {"cwd": str(checkout), "shell": append_probe(targets)}, caller=caller
        )
    )
    got = results(str(done["stdout"]))
    for key in targets:
        assert got[key] == "13", (key, done)
    assert {k: digest(p) for k, p in targets.items()} == before
