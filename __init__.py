"""sgieval: an agentic evaluation orchestrator for scientific LLMs.

Public API (lazy imports keep ``import sgieval`` light):
  - :func:`evaluate` -- run the four-agent graph on a request and return the run's records.
  - records: :class:`Item`, :class:`Response`, :class:`Score`, :class:`MetricSpec`,
    :class:`Rubric`, :class:`RunConfig` (from :mod:`sgieval.core`).
"""

from __future__ import annotations

from typing import Any

from .core import (  # noqa: F401
    InputError, Item, MetricSpec, Response, Rubric, RunConfig, Score, SgievalError,
)

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "evaluate":
        from .api import evaluate

        return evaluate
    raise AttributeError(name)
