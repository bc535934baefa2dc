"""Public functions document their interface: every function and public method of a checked package's public API
(the names its ``__init__`` lists in ``__all__``) has an ``Args:`` section when it takes parameters and a
``Returns:`` (or ``Yields:``) section when it returns a value (BRIEF "How we build": shapes, units and ranges)."""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable

CHECKED = (
    "sgieval",
    "sgieval.graphs",
    "sgieval.benchmarks",
    "sgieval.agents",
    "sgieval.tools",
    "sgieval.models",
    "sgieval.metric_pool",
    "sgieval.cli",
)
"""The packages whose public API is held to it (the others are still to be brought in)."""


def _public_functions(package: str) -> list[tuple[str, Callable[..., Any]]]:
    """(name, function) for each function and each public method of a class among ``package.__all__``."""
    mod = importlib.import_module(package)
    out: list[tuple[str, Callable[..., Any]]] = []
    for name in mod.__all__:
        obj = getattr(mod, name)
        if inspect.isclass(obj) and obj.__module__.startswith("sgieval"):
            for attr, member in vars(obj).items():
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if not attr.startswith("_") and inspect.isfunction(member):
                    out.append((f"{package}.{name}.{attr}", member))
        elif inspect.isfunction(obj) and obj.__module__.startswith("sgieval"):
            out.append((f"{package}.{name}", obj))
    return out


def _undocumented(name: str, fn: Callable[..., Any]) -> list[str]:
    """What the docstring of ``fn`` lacks: ``Args:`` for parameters, ``Returns:``/``Yields:`` for a value."""
    doc = inspect.getdoc(fn) or ""
    sig = inspect.signature(fn)
    missing = []
    if [p for p in sig.parameters if p not in ("self", "cls")] and "Args:" not in doc:
        missing.append(f"{name}: no Args:")
    returned = sig.return_annotation
    if returned not in (inspect.Signature.empty, None, "None", "NoReturn") and not (
        "Returns:" in doc or "Yields:" in doc
    ):
        missing.append(f"{name}: no Returns:")
    return missing


def test_public_functions_have_args_and_returns_sections():
    missing = [m for package in CHECKED for name, fn in _public_functions(package) for m in _undocumented(name, fn)]
    assert missing == []


def test_the_checker_sees_a_missing_section():
    def documented(x: int) -> int:
        """Twice ``x``.

        Args:
            x: any integer.

        Returns:
            ``2 * x``.
        """
        return 2 * x

    def undocumented(x: int) -> int:
        """Twice ``x``."""
        return 2 * x

    def no_value() -> None:
        """Nothing to say."""

    assert _undocumented("documented", documented) == []
    assert _undocumented("undocumented", undocumented) == ["undocumented: no Args:", "undocumented: no Returns:"]
    assert _undocumented("no_value", no_value) == []
