"""sgieval: an agentic evaluation orchestrator for scientific LLMs.

The public API (DESIGN.md "Public Python API") loads lazily, so ``import sgieval`` stays light.
"""

from __future__ import annotations

from typing import Any

from .core import (  # noqa: F401
    InputError,
    Item,
    MetricSpec,
    Response,
    Rubric,
    RunConfig,
    Score,
    SgievalError,
)

__version__ = "0.1.0"

_LAZY = {
    "evaluate": ("api", "evaluate"),
    "aevaluate": ("api", "aevaluate"),
    "score": ("scoring", "score"),
    "ascore": ("scoring", "ascore"),
    "load_run": ("api", "load_run"),
    "compare": ("api", "compare"),
    "Comparison": ("reports.compare", "Comparison"),
    "agreement": ("api", "agreement"),
    "ppi": ("api", "ppi"),
    "RunRecords": ("api", "RunRecords"),
    "Metric": ("metric_pool.base", "Metric"),
    "ScoringContext": ("metric_pool.base", "ScoringContext"),
    "Benchmark": ("benchmarks.base", "Benchmark"),
    "Vocabulary": ("benchmarks.base", "Vocabulary"),
    "register_benchmark": ("benchmarks.registry", "register"),
    "get_benchmark": ("benchmarks.registry", "get"),
    "list_benchmarks": ("benchmarks.registry", "definitions"),
}

__all__ = [
    "InputError",
    "Item",
    "MetricSpec",
    "Response",
    "Rubric",
    "RunConfig",
    "Score",
    "SgievalError",
    "__version__",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(f"{__name__}.{mod}"), attr)
    raise AttributeError(f"module 'sgieval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
