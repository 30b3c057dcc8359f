"""A small mutation measurement: how many single-operator and single-constant changes to a
module its tests notice.

    python scripts/mutate.py MODULE.py [MODULE.py ...] -- PYTEST_ARGS...

Each mutant is one change of the module's syntax tree — a comparison flipped (`==`/`!=`,
`<`/`<=`, `in`/`not in`, `is`/`is not`), `and`/`or` swapped, a `not` dropped, an arithmetic
operator swapped, an integer moved by one, `True`/`False` swapped, a short string literal
emptied (long ones are messages), a `return X` made `return None`, an `if` body skipped (its
condition made False), an early `continue`/`break` dropped — written over the file, then the
tests run (`pytest -x -q PYTEST_ARGS`, in a child forked from a process that has pytest and the
heavy libraries imported but not the module); a mutant whose run fails is killed. The file is always
restored. Prints each survivor (line, change) and the kill rate per module.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_FLIP_CMP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_FLIP_BIN: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
}
#: Strings longer than this are messages (a mutant of one is a different message).
SHORT_STRING = 12


@dataclass(frozen=True)
class Mutant:
    line: int
    what: str
    source: str


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _in_fstring(tree: ast.AST) -> set[int]:
    return {
        id(value)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for value in ast.walk(node)
    }


def _changes(node: ast.AST, skip: set[int]) -> Iterator[tuple[str, ast.AST | None]]:
    """(description, replacement node) for each mutation of `node` itself."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            flipped = _FLIP_CMP.get(type(op))
            if flipped is not None:
                compared = copy.deepcopy(node)
                compared.ops[i] = flipped()
                yield f"{type(op).__name__} -> {flipped.__name__}", compared
    elif isinstance(node, ast.BoolOp):
        joined = copy.deepcopy(node)
        joined.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield f"{type(node.op).__name__} -> {type(joined.op).__name__}", joined
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "drop not", copy.deepcopy(node.operand)
    elif isinstance(node, ast.BinOp):
        flipped_bin = _FLIP_BIN.get(type(node.op))
        if flipped_bin is not None:
            computed = copy.deepcopy(node)
            computed.op = flipped_bin()
            yield f"{type(node.op).__name__} -> {flipped_bin.__name__}", computed
    elif isinstance(node, ast.Constant) and id(node) not in skip:
        value = node.value
        if isinstance(value, bool):
            yield f"{value} -> {not value}", ast.Constant(not value)
        elif isinstance(value, int):
            yield f"{value} -> {value + 1}", ast.Constant(value + 1)
            if value != 0:
                yield f"{value} -> 0", ast.Constant(0)
        elif isinstance(value, str | bytes) and 0 < len(value) <= SHORT_STRING:
            yield f"{value!r} -> empty", ast.Constant(type(value)())
    elif isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            yield "return None", ast.Return(ast.Constant(None))
    elif isinstance(node, ast.If):
        branch = copy.deepcopy(node)
        branch.test = ast.Constant(False)
        yield "if -> if False", branch
    elif isinstance(node, ast.Continue | ast.Break):
        yield f"drop {type(node).__name__.lower()}", ast.Pass()


def mutants(path: Path) -> Iterator[Mutant]:
    tree = ast.parse(path.read_text())
    skip = _docstrings(tree) | _in_fstring(tree)
    parents: dict[int, tuple[ast.AST, str, int | None]] = {}
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if isinstance(value, list):
                for i, child in enumerate(value):
                    if isinstance(child, ast.AST):
                        parents[id(child)] = (parent, field, i)
            elif isinstance(value, ast.AST):
                parents[id(value)] = (parent, field, None)
    for node in list(ast.walk(tree)):
        if id(node) not in parents or _annotation(node, parents):
            continue
        parent, field, index = parents[id(node)]
        for what, replacement in _changes(node, skip):
            assert replacement is not None
            ast.copy_location(replacement, node)
            if index is None:
                setattr(parent, field, replacement)
            else:
                getattr(parent, field)[index] = replacement
            try:
                source = ast.unparse(ast.fix_missing_locations(tree))
            finally:
                if index is None:
                    setattr(parent, field, node)
                else:
                    getattr(parent, field)[index] = node
            yield Mutant(getattr(node, "lineno", 0), what, source)


def _annotation(node: ast.AST, parents: dict[int, tuple[ast.AST, str, int | None]]) -> bool:
    """Whether `node` lies in a type annotation or `__all__` (no behaviour to mutate)."""
    current = node
    while id(current) in parents:
        parent, field, _ = parents[id(current)]
        if field in ("annotation", "returns"):
            return True
        if isinstance(parent, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in parent.targets
        ):
            return True
        current = parent
    return False


def _purge(prefixes: list[str], keep: list[str]) -> None:
    """Forget every imported module under `prefixes` (but those under `keep`): the next import
    reads the (mutated) file anew."""
    for name in list(sys.modules):
        if name.startswith(tuple(prefixes)) and not name.startswith(tuple(keep)):
            del sys.modules[name]
            parent, _, attr = name.rpartition(".")
            if parent in sys.modules:
                with contextlib.suppress(AttributeError):
                    delattr(sys.modules[parent], attr)


def _tests_fail(
    pytest_args: list[str],
    timeout_s: float,
    purge: list[str],
    keep: list[str],
    quiet: bool = True,
) -> bool:
    """Run the tests in a child forked from this process, which has imported pytest and the
    heavy libraries (`--preload`); the child forgets the `--purge` modules first, so the module
    under test is imported anew."""
    import pytest

    pid = os.fork()
    if pid == 0:  # the child: quiet, then pytest in-process
        if quiet:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
        _purge(purge, keep)
        code = 3
        try:
            code = int(pytest.main(["-x", "-q", "-p", "no:cacheprovider", *pytest_args]))
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status) != 0
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return True
        time.sleep(0.02)


def survivors_of(output: Path, module: Path) -> set[tuple[int, str]]:
    """(line, change) of each survivor of `module` in an earlier run's output."""
    found: set[tuple[int, str]] = set()
    current = None
    for line in output.read_text().splitlines():
        if " mutants killed (" in line:
            current = line.split(": ", 1)[0].strip()
        elif line.strip().startswith("survived: line ") and current == str(module):
            number, _, what = line.strip()[len("survived: line ") :].partition(": ")
            found.add((int(number), what))
    return found


def run(
    path: Path,
    pytest_args: list[str],
    timeout_s: float,
    purge: list[str],
    keep: list[str],
    only: set[tuple[int, str]] | None = None,
) -> tuple[int, int, list[Mutant]]:
    original = path.read_text()
    if _tests_fail(pytest_args, timeout_s, purge, keep, quiet=False):
        raise SystemExit(f"the tests fail on {path} as it is: nothing to measure")
    found = [m for m in mutants(path) if only is None or (m.line, m.what) in only]
    killed = 0
    survivors: list[Mutant] = []
    try:
        for n, mutant in enumerate(found, 1):
            path.write_text(mutant.source)
            started = time.monotonic()
            dead = _tests_fail(pytest_args, timeout_s, purge, keep)
            killed += dead
            if not dead:
                survivors.append(mutant)
            state = "killed" if dead else "SURVIVED"
            print(
                f"[{n}/{len(found)}] {path.name}:{mutant.line} {mutant.what}: {state} "
                f"({time.monotonic() - started:.1f} s)",
                flush=True,
            )
    finally:
        path.write_text(original)
    return killed, len(found), survivors


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("modules", nargs="+", type=Path)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--list", action="store_true", help="only list the mutants")
    parser.add_argument("--preload", action="append", default=[], help="import once, up front")
    parser.add_argument("--purge", action="append", default=[], help="module prefix to re-import")
    parser.add_argument("--keep", action="append", default=[], help="prefix never re-imported")
    parser.add_argument(
        "--again",
        type=Path,
        help="only the survivors listed in this earlier output (`survived: line N: WHAT`)",
    )
    args, rest = parser.parse_known_args()
    pytest_args = rest[1:] if rest[:1] == ["--"] else rest
    for heavy in ("pytest", "pydantic", "anyio", "structlog", "psutil", "typer"):
        # Imported once here, before any module under test: each forked run starts warm.
        with contextlib.suppress(ImportError):
            __import__(heavy)
    for module_name in args.preload:
        __import__(module_name)
    # SIGTERM ends the run through `finally` (the file is restored).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    summary = []
    for module in args.modules:
        if args.list:
            for m in mutants(module):
                print(f"{module.name}:{m.line} {m.what}")
            continue
        only = survivors_of(args.again, module) if args.again is not None else None
        killed, total, survivors = run(
            module, pytest_args, args.timeout, args.purge, args.keep, only
        )
        summary.append((module, killed, total, survivors))
    for module, killed, total, survivors in summary:
        print(f"\n{module}: {killed} of {total} mutants killed ({killed / max(total, 1):.0%})")
        for m in survivors:
            print(f"  survived: line {m.line}: {m.what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
