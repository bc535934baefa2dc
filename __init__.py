"""sgieval: an agentic evaluation orchestrator for scientific LLMs.

Public API (imports are lazy, so ``import sgieval`` stays light):

- :func:`evaluate` / :func:`aevaluate`: run the four-agent graph on a request and get the run's records
  (:class:`RunRecords`);
- :func:`score` / :func:`ascore`: score given texts with one predefined or rubric metric (no request, no graph, no run
  folder);
- :func:`load_run`: a run folder's records (:class:`RunRecords`, with ``.to_pandas()``);
- :func:`compare`: compare finished runs (:class:`Comparison`: paired changes of the same model, a joint ranking on the
  shared items, what is not shared; ``.to_markdown()``, ``.to_pandas()``, ``.write(folder)``);
- records: :class:`Item`, :class:`Response`, :class:`Score`, :class:`MetricSpec`, :class:`Rubric`, :class:`RunConfig`
  (from :mod:`sgieval.core`); :class:`Metric` (the metric interface, :mod:`sgieval.metric_pool.base`);
- the benchmark registry: :class:`Benchmark`, :class:`Vocabulary`, :func:`register_benchmark`, :func:`get_benchmark`,
  :func:`list_benchmarks` (:mod:`sgieval.benchmarks.registry`).
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
