"""SGI-Bench predefined metrics (METRICS.md A) and the SGI-Score (A.6).

``metrics(options=None) -> list[Metric]`` returns the metrics of all five tasks
(the registry calls it for benchmark "sgi-bench").  ``sgi_score`` aggregates
per-item scores into the SGI-Score with per-task and per-discipline terms.
"""

from __future__ import annotations

import importlib

from ..base import Metric
from .common import extract_answer_tag, is_empty_or_none, model_answer
from .sgi_score import SGIScoreResult, TaskTerm, sgi_score, sgi_scores_by_model

_TASK_MODULES = ("deep_research", "idea_generation", "dry_experiment", "wet_experiment", "reasoning")
_OPTIONAL = ("idea_generation", "dry_experiment")


def _load(name: str):
    """Import ``.<name>``; None when one of the optional task modules is not
    present yet.  Any other import failure (including a missing dependency
    inside a present module) is raised."""
    full = f"{__name__}.{name}"
    try:
        return importlib.import_module(full)
    except ModuleNotFoundError as e:
        if name in _OPTIONAL and e.name == full:
            return None
        raise


def metrics(options: dict | None = None) -> list[Metric]:
    """Every SGI-Bench metric, in task order DR, IG, DE, WE, ER.  ``options``
    is passed to each task module's ``metrics(options)``."""
    out: list[Metric] = []
    for name in _TASK_MODULES:
        mod = _load(name)
        if mod is not None:
            out.extend(mod.metrics(options))
    return out


__all__ = [
    "metrics",
    "sgi_score",
    "sgi_scores_by_model",
    "SGIScoreResult",
    "TaskTerm",
    "extract_answer_tag",
    "is_empty_or_none",
    "model_answer",
]
