"""The rubric loop (EvalGen, Shankar et al. 2024, "Who validates the validators?", section 4): the judge's
disagreements with the researcher's labels show which criterion to reword; the labelled units alone are scored again
with the revision (``details["rubric_version"]``) and agreement before and after compared (:mod:`.agreement`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Sequence

from ..core import Item, Label, Response, Rubric, Score
from ..models import NamedModel, prompt_scope
from .agreement import Agreement, Statistic
from .base import ScoringContext
from .labels import label_estimates, latest_labels
from .rubric import RubricMetric


@dataclass(frozen=True)
class Disagreement:
    """One labelled unit: ``judge`` (or ``"panel"``) gave ``judge_value`` on ``criterion`` (0-10; None: the metric,
    0-100), the labels average ``label``."""

    item_id: str
    model: str
    criterion: str | None
    judge: str
    judge_value: float
    label: float
    rationale: str

    @property
    def gap(self) -> float:
        """Judge minus label."""
        return self.judge_value - self.label

    @property
    def relative_gap(self) -> float:
        """``|gap|`` as a share of the scale's width (0-1)."""
        return abs(self.gap) / (10.0 if self.criterion is not None else 100.0)


def _labels_by_unit(labels: Sequence[Label], metric: str) -> dict[tuple[str, str, str | None], float]:
    """{(item_id, model, criterion): mean label over labellers} of ``metric``."""
    grouped: dict[tuple[str, str, str | None], list[float]] = {}
    for lab in latest_labels(labels):
        if lab.metric == metric:
            grouped.setdefault((lab.item_id, lab.model, lab.criterion), []).append(float(lab.value))
    return {k: sum(v) / len(v) for k, v in grouped.items()}


def labelled_units(labels: Sequence[Label], metric: str) -> list[tuple[str, str]]:
    """The units labelled on a metric.

    Args:
        labels: the run's labels.
        metric: the rubric's name.

    Returns:
        Sorted unique (item_id, model) pairs with a label of ``metric``.
    """
    return sorted({(i, m) for i, m, _ in _labels_by_unit(labels, metric)})


def _judge_view(score: Score, rubric: Rubric, criterion: str | None, judge: str | None) -> tuple[str, float] | None:
    """(judge name, value) of ``score`` for one judge or the panel (judge None)."""
    if not score.ok or score.value is None:
        return None
    details = score.details or {}
    per = (details.get("per_judge") or {}).get(judge) if judge is not None else None
    name = "panel" if judge is None else judge
    # the judge's own criterion scores when it has them, else the panel's (a single judge's)
    if criterion is None and isinstance(per, dict):
        try:
            return name, rubric.aggregate({c.name: float(per[c.name]) for c in rubric.criteria})
        except KeyError:
            return None
    if criterion is None:
        return name, float(score.value)
    v = (per if isinstance(per, dict) else details.get("criteria") or {}).get(criterion)
    return (name, float(v)) if isinstance(v, (int, float)) else None


def _rationale(score: Score, criterion: str | None, judge: str | None) -> str:
    if criterion is None:
        return score.rationale or ""
    by = ((score.details or {}).get("rationales") or {}).get(criterion) or {}
    if judge is not None and judge in by:
        return str(by[judge])
    return " | ".join(f"{j}: {t}" for j, t in by.items()) if len(by) > 1 else str(next(iter(by.values()), ""))


def disagreements(
    scores: Sequence[Score], labels: Sequence[Label], rubric: Rubric, *, judge: str | None = None
) -> list[Disagreement]:
    """Every labelled unit of ``rubric`` with a valid score, the largest disagreement first.

    Args:
        scores: scores of the rubric.
        labels: the run's labels.
        judge: a judge whose own scores are compared; None: the panel mean.

    Returns:
        One :class:`Disagreement` per (item, model, criterion) label with a score, by ``relative_gap`` descending.
    """
    by_unit = {(s.item_id, s.model): s for s in scores if s.metric == rubric.name and s.item_id != "*"}
    out = []
    for (item_id, model, criterion), label in _labels_by_unit(labels, rubric.name).items():
        score = by_unit.get((item_id, model))
        seen = None if score is None else _judge_view(score, rubric, criterion, judge)
        if score is not None and seen is not None:
            why = _rationale(score, criterion, judge)
            out.append(Disagreement(item_id, model, criterion, seen[0], seen[1], label, why))
    out.sort(key=lambda d: (-d.relative_gap, d.item_id, d.model, d.criterion or ""))
    return out


def scored_by(scores: Sequence[Score], rubric: Rubric, units: Sequence[tuple[str, str]]) -> set[str]:
    """The judges of the valid scores of ``rubric`` on ``units``.

    Args:
        scores: the run's scores.
        units: (item_id, model) pairs.

    Returns:
        Every judge that scored at least one of the units.
    """
    want = set(units)
    mine = [s for s in scores if s.metric == rubric.name and (s.item_id, s.model) in want and s.ok]
    return {j for s in mine for j in (s.details or {}).get("per_judge") or {}}


async def rescore_units(
    rubric: Rubric,
    items: Sequence[Item],
    responses: Sequence[Response],
    units: Sequence[tuple[str, str]],
    judges: Sequence[NamedModel],
    *,
    tools: object = None,
    options: dict | None = None,
    concurrency: int = 8,
) -> list[Score]:
    """Score ``units`` (and nothing else) with ``rubric`` through ``judges``.

    Args:
        rubric: the rubric version to score with.
        items: the run's items.
        responses: the run's responses.
        units: the (item_id, target model) pairs to score.
        judges: the judge panel.
        tools: a ToolPool for the judges, or None.
        options: scoring options.
        concurrency: units scored at once.

    Returns:
        One Score per unit in the run, in ``units`` order.
    """
    by_item = {i.id: i for i in items}
    by_response = {(r.item_id, r.model): r for r in responses}
    metric = RubricMetric(rubric)
    ctx = ScoringContext(judges=list(judges), tools=tools, options=dict(options or {}))
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(item: Item, response: Response) -> list[Score]:
        async with gate:
            with prompt_scope(f"sgieval:*/{rubric.name}"):  # the prompt family of this rubric's judge calls
                return await metric.score(item, response, ctx)

    todo = [(by_item[i], by_response[(i, m)]) for i, m in units if i in by_item and (i, m) in by_response]
    done = await asyncio.gather(*(one(item, resp) for item, resp in todo))
    return [s for scores in done for s in scores]


@dataclass(frozen=True)
class AgreementChange:
    """One agreement ``statistic`` of ``criterion`` (None: the metric) before and after a revision."""

    criterion: str | None
    statistic: str
    before: Statistic | None
    after: Statistic | None


def _pick(agreements: Sequence[Agreement], judge: str | None) -> dict[str | None, Agreement]:
    own = {a.criterion: a for a in agreements if a.judge == (judge or "panel")}
    # a single-judge score has only the panel entry, which is that judge's
    return own | {a.criterion: a for a in agreements if a.judge == "panel" and a.criterion not in own}


def compare_agreement(
    before: Sequence[Score],
    after: Sequence[Score],
    labels: Sequence[Label],
    rubric: Rubric,
    *,
    judge: str | None = None,
    seed: int = 0,
) -> list[AgreementChange]:
    """The agreement with the labels of two sets of scores of one rubric on the same labelled units.

    Args:
        before: scores before the revision.
        after: scores of the revised rubric.
        labels: the run's labels.
        rubric: the rubric (same name and criteria before and after).
        judge: the judge compared; None: the panel.
        seed: seed of the bootstrap intervals.

    Returns:
        One :class:`AgreementChange` per (criterion, statistic), the metric's own value first.
    """
    a = _pick(label_estimates(before, labels, rubric, seed=seed).agreements, judge)
    b = _pick(label_estimates(after, labels, rubric, seed=seed).agreements, judge)
    order: list[str | None] = [None, *[c.name for c in rubric.criteria]]
    out = []
    for crit in order:
        if crit not in a and crit not in b:
            continue
        names = dict.fromkeys(s.name for side in (a, b) if crit in side for s in side[crit].statistics)
        for name in names:
            sides = [side[crit].get(name) if crit in side else None for side in (a, b)]
            out.append(AgreementChange(crit, name, *sides))
    return out
