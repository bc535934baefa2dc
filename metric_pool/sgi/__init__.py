"""SGI-Bench metrics (METRICS.md A), one module per task, each declared with ``@metric(scope="sgi-bench")``, and the
SGI-Score (A.6), which aggregates per-item scores with per-task and per-discipline terms."""

from __future__ import annotations

from .common import extract_answer_tag, is_empty_or_none, model_answer
from .sgi_score import SGIScoreResult, TaskTerm, sgi_score, sgi_scores_by_model

__all__ = [
    "sgi_score",
    "sgi_scores_by_model",
    "SGIScoreResult",
    "TaskTerm",
    "extract_answer_tag",
    "is_empty_or_none",
    "model_answer",
]
