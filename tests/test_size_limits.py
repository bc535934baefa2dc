"""The size limits of issue 32 hold for the product code (everything outside tests/ and bench/): no module over
700 lines, no function or method over 80 lines (its docstring included)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULE_LINES = 700
FUNCTION_LINES = 80


@functools.cache
def _sizes() -> list[tuple[str, int, list[tuple[int, str, int]]]]:
    """(module path, its lines, [(line, function name, its lines)]) of every product module."""
    out = []
    tops = [d for d in ROOT.iterdir() if d.name not in ("tests", "bench", "build") and not d.name.startswith(".")]
    modules = [d for d in tops if d.suffix == ".py"] + [p for d in tops if d.is_dir() for p in d.rglob("*.py")]
    for p in sorted(modules):
        src = p.read_text(encoding="utf-8")
        functions = [
            (node.lineno, node.name, node.end_lineno - node.lineno + 1)
            for node in ast.walk(ast.parse(src))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        out.append((str(p.relative_to(ROOT)), len(src.splitlines()), functions))
    return out


def _too_long(module_lines: int, function_lines: int) -> list[str]:
    found = []
    for rel, n, functions in _sizes():
        if n > module_lines:
            found.append(f"{rel}: {n} lines")
        found += [f"{rel}:{line} {name}: {k} lines" for line, name, k in functions if k > function_lines]
    return found


def test_no_module_over_700_lines_and_no_function_over_80():
    assert _too_long(MODULE_LINES, FUNCTION_LINES) == []


def test_the_check_sees_the_largest_module_and_function():
    found = _too_long(500, 70)  # lower limits: the largest modules and functions show up
    assert any(line.startswith("cli/commands.py: ") for line in found)
    assert any(line.startswith("agents/estimate.py:") and " estimate_run: " in line for line in found)
    assert len(_sizes()) > 150
