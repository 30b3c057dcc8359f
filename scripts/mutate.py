"""Mutation measurement: how many small changes to a module its tests notice.

    python scripts/mutate.py MODULE.py -- PYTEST-ARGS...

Each mutant changes one thing in MODULE.py (a comparison or boolean operator flipped, `not`
dropped, a constant changed, a `return` of a value made `return None`, a condition forced
true or false), is written over the module, and the given tests run against it; a mutant is
*killed* when they fail, *survives* when they pass. The module is restored after each run
(and at exit, whatever happens). Prints the survivors with their line, and the kill rate.
Slow by nature: give it the tests that concern the module, not the suite.
"""

from __future__ import annotations

import argparse
import ast
import atexit
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_SWAPS: dict[type[ast.AST], type[ast.AST]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.And: ast.Or,
    ast.Or: ast.And,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
}


@dataclass(frozen=True)
class Mutant:
    line: int
    what: str
    source: str


def _mutants(tree: ast.Module) -> Iterator[tuple[int, str, ast.Module]]:
    """Every single-change copy of `tree`: (line, description, tree)."""
    nodes = list(ast.walk(tree))
    for index, node in enumerate(nodes):
        for change in _changes(node):
            copy = ast.parse(ast.unparse(tree))
            target = list(ast.walk(copy))[index]
            what = change(target)
            if what is not None:
                yield getattr(node, "lineno", 0), what, copy


def _changes(node: ast.AST) -> list:  # type: ignore[type-arg]
    out = []
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _SWAPS:

                def flip(n: ast.AST, i: int = i) -> str:
                    assert isinstance(n, ast.Compare)
                    old = type(n.ops[i])
                    n.ops[i] = _SWAPS[old]()
                    return f"{old.__name__} -> {_SWAPS[old].__name__}"

                out.append(flip)
    if isinstance(node, ast.BoolOp | ast.BinOp):
        op = node.op

        def swap(n: ast.AST) -> str | None:
            assert isinstance(n, ast.BoolOp | ast.BinOp)
            new = _SWAPS.get(type(n.op))
            if new is None:
                return None
            old = type(n.op).__name__
            n.op = new()  # type: ignore[assignment]
            return f"{old} -> {new.__name__}"

        if type(op) in _SWAPS:
            out.append(swap)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):

        def drop_not(n: ast.AST) -> str:
            assert isinstance(n, ast.UnaryOp)
            n.op = ast.UAdd()  # `+x` on a bool is x: the `not` is gone
            return "not dropped"

        out.append(drop_not)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, bool | int)
        and not isinstance(node.value, str)
    ):

        def change_constant(n: ast.AST) -> str:
            assert isinstance(n, ast.Constant)
            old = n.value
            n.value = (not old) if isinstance(old, bool) else old + 1
            return f"{old!r} -> {n.value!r}"

        out.append(change_constant)
    if isinstance(node, ast.Return) and node.value is not None:

        def return_none(n: ast.AST) -> str:
            assert isinstance(n, ast.Return)
            n.value = ast.Constant(None)
            return "returns None"

        out.append(return_none)
    if isinstance(node, ast.If | ast.While):
        for forced in (True, False):

            def force(n: ast.AST, forced: bool = forced) -> str:
                assert isinstance(n, ast.If | ast.While)
                n.test = ast.Constant(forced)
                return f"condition always {forced}"

            out.append(force)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", type=Path)
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    pytest_args = [a for a in args.pytest_args if a != "--"]
    original = args.module.read_text()
    atexit.register(args.module.write_text, original)
    tree = ast.parse(original)
    baseline = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", *pytest_args], check=False
    )
    if baseline.returncode != 0:
        print("the tests fail on the unchanged module: nothing to measure", file=sys.stderr)
        return 2
    killed = survived = 0
    survivors: list[tuple[int, str]] = []
    for line, what, mutant in _mutants(tree):
        args.module.write_text(ast.unparse(mutant))
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly", *pytest_args],
            capture_output=True,
            check=False,
            timeout=600,
        )
        args.module.write_text(original)
        if done.returncode == 0:
            survived += 1
            survivors.append((line, what))
            print(f"survived  line {line}: {what}", flush=True)
        else:
            killed += 1
    total = killed + survived
    for line, what in survivors:
        print(f"  {args.module}:{line}: {what}")
    print(f"{killed} of {total} mutants killed ({100 * killed / max(total, 1):.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
