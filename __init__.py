"""sgieval: an agentic evaluation orchestrator for scientific LLMs.

The public API (DESIGN.md "Public Python API") loads lazily, so ``import sgieval`` stays light.
"""

from __future__ import annotations

from .core import (  # noqa: F401
    InputError,
    Item,
    MetricSpec,
    Response,
    Rubric,
    RunConfig,
    Score,
    SgievalError,
    lazy_exports,
)

__version__ = "0.1.0"

_LAZY = {
    "evaluate": "api",
    "aevaluate": "api",
    "score": "scoring",
    "ascore": "scoring",
    "load_run": "api",
    "compare": "api",
    "Comparison": "reports.compare",
    "agreement": "api",
    "ppi": "api",
    "RunRecords": "api",
    "Metric": "metric_pool.base",
    "ScoringContext": "metric_pool.base",
    "Benchmark": "benchmarks.base",
    "Vocabulary": "benchmarks.base",
    "register_benchmark": "benchmarks.registry:register",
    "get_benchmark": "benchmarks.registry:get",
    "list_benchmarks": "benchmarks.registry:definitions",
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

__getattr__ = lazy_exports(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
