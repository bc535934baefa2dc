"""SGI-Score (METRICS.md A.6): SGI = (DR + IG + DE + WE + ER) / 5 on 0-100, each term ``round(mean x scale, 2)`` of em,
idea final score (scale 1), PassAll@5, wet_final_score and mca (scale 100), per task and per discipline. Only ``ok``
scores enter a mean (D.7); a task without one is missing, never zero: the SGI-Score is then None and ``partial`` the
labelled mean of the present terms."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ...core import SGI_TASKS, InputError, Item, MetricSpec, Score
from ..registry import entries
from .common import BENCHMARK

TERM_LABELS = dict(zip(SGI_TASKS, ("DR", "IG", "DE", "WE", "ER")))


def _scale(s: MetricSpec) -> float:
    return 100.0 if s.range[1] <= 1.0 else 1.0


def default_components() -> dict[str, tuple[str, float]]:
    """task -> (metric name, scale) of each term: the ``primary`` SGI-Bench spec of each task (scale 100 when its range
    tops at 1), in the order DR, IG, DE, WE, ER."""
    found = {
        t: (s.name, _scale(s)) for e in entries() if e.scope == BENCHMARK for s in e.specs if s.primary for t in s.tasks
    }
    return {t: found[t] for t in TERM_LABELS if t in found}


@dataclass
class TaskTerm:
    """One SGI-Score term: ``value`` round(mean x scale, 2) on 0-100 (None when missing, with ``reason``), ``n`` ok and
    ``n_failed`` non-ok scores."""

    task: str
    label: str
    metric: str
    value: float | None
    n: int
    n_failed: int = 0
    reason: str = ""

    @property
    def missing(self) -> bool:
        return self.value is None


@dataclass
class SGIScoreResult:
    """SGI-Score of one target model (0-100): ``sgi_score`` None when a task is ``missing``; ``partial`` the mean of the
    present terms (labelled, not comparable with published SGI-Scores); ``by_discipline`` the same per discipline."""

    model: str
    sgi_score: float | None
    terms: dict[str, TaskTerm]
    missing: list[str] = field(default_factory=list)
    partial: float | None = None
    partial_label: str = "partial mean over present tasks (not an SGI-Score)"
    by_discipline: dict[str, "SGIScoreResult"] = field(default_factory=dict)

    def summary(self) -> str:
        """One line, e.g. ``SGI-Score 31.45 (DR 11.32, IG 36.49, ...)``."""
        parts = ", ".join(
            f"{t.label} {t.value:.2f}" if t.value is not None else f"{t.label} missing" for t in self.terms.values()
        )
        if self.sgi_score is not None:
            return f"SGI-Score {self.sgi_score:.2f} ({parts})"
        p = f"{self.partial:.2f}" if self.partial is not None else "n/a"
        return f"SGI-Score not available: missing {', '.join(self.missing)} ({parts}); {self.partial_label}: {p}"


def _compute(
    model: str, scores: Sequence[Score], comps: dict[str, tuple[str, float]], task_of: dict[str, str]
) -> SGIScoreResult:
    terms: dict[str, TaskTerm] = {}
    for task in SGI_TASKS:
        name, scale = comps[task]
        mine = [s for s in scores if s.metric == name and task_of.get(s.item_id) == task]
        ok = [float(s.value) for s in mine if s.ok and s.value is not None]
        n_failed = len(mine) - len(ok)
        if ok:
            terms[task] = TaskTerm(
                task, TERM_LABELS[task], name, round(sum(ok) / len(ok) * scale, 2), len(ok), n_failed
            )
        else:
            reason = f"all {n_failed} {name} scores failed" if n_failed else f"no {name} scores"
            terms[task] = TaskTerm(task, TERM_LABELS[task], name, None, 0, n_failed, reason)
    present = [t.value for t in terms.values() if t.value is not None]
    missing = [t for t, term in terms.items() if term.value is None]
    if not missing:
        return SGIScoreResult(model, round(sum(present) / len(SGI_TASKS), 2), terms)
    partial = round(sum(present) / len(present), 2) if present else None
    return SGIScoreResult(model, None, terms, missing, partial)


def sgi_score(
    scores: Iterable[Score],
    items: dict[str, Item],
    *,
    components: dict[str, tuple[str, float]] | None = None,
    model: str | None = None,
) -> SGIScoreResult:
    """SGI-Score (A.6) of one target model from per-item ``scores``, per task and per discipline (a task with no
    items in a discipline is missing there).

    Args:
        scores: per-item scores.
        items: item id -> Item (task and discipline; scores of unknown items are ignored).
        components: task -> (metric name, scale); default :func:`default_components`.
        model: the target model whose scores count; None: the scores must all be one model's.

    Returns:
        The SGIScoreResult: the score, per task and per discipline.

    Raises:
        InputError: several models are mixed without ``model``.
    """
    scores = list(scores)
    models = sorted({s.model for s in scores})
    if model is None:
        if len(models) > 1:
            raise InputError(
                f"scores of several models {models}",
                what="sgi_score(scores)",
                fix="pass model=<name> or use sgi_scores_by_model()",
            )
        model = models[0] if models else ""
    scores = [s for s in scores if s.model == model]
    comps = components or default_components()
    task_of = {i: it.task for i, it in items.items()}
    result = _compute(model, scores, comps, task_of)
    disciplines = sorted({items[s.item_id].discipline for s in scores if s.item_id in items})
    for d in disciplines:
        ids = {i for i, it in items.items() if it.discipline == d}
        result.by_discipline[d] = _compute(model, [s for s in scores if s.item_id in ids], comps, task_of)
    return result


def sgi_scores_by_model(
    scores: Iterable[Score], items: dict[str, Item], *, components: dict[str, tuple[str, float]] | None = None
) -> dict[str, SGIScoreResult]:
    """:func:`sgi_score` for every model present in ``scores`` (model -> result)."""
    scores = list(scores)
    comps = components or default_components()
    return {m: sgi_score(scores, items, components=comps, model=m) for m in sorted({s.model for s in scores})}
