"""Repeated judge calls (``--judge-repeats k``): test-retest material for the judge panel.

Each judge allowed to score a target is asked ``k`` times per judged item (``ScoringContext.options
["judge_repeats"]``, from ``RunConfig.judge_repeats``; default 1).  Every repeat is a distinct call: the r-th draw
is :func:`sgieval.models.base.repeat_of` (judge, r), whose index is part of the call cache key from r = 1 on, and
it is sampled at the run's judge temperature (``RunConfig`` makes a temperature of 0 into 0.7 when ``k`` > 1;
families that reject a temperature get none).  METRICS.md D.8-D.10 apply to each repeat on its own: the reasoning
is removed before parsing (D.8), a reply that does not parse is retried with the error, then fails (D.4), a
truncated reply is asked once more with twice the tokens, then fails (D.10).

**Aggregation** (the score's value): each judge's value is the mean over its successful repeats; the metric's
value is the panel aggregate of those per-judge means (the mean over judges for scores), so a judge with a failed
repeat weighs as much as the others.  A failed repeat is recorded as a failure with its reason (never a zero);
a judge whose repeats all failed is a failed judge, as with k = 1.

**Recorded in the score**: ``details["judge_repeats"]`` = {judge: [value of repeat 0, 1, ..., k-1]} with None
where that repeat failed, ``details["repeat_failures"]`` = {judge: {repeat index: reason}} (only when one failed),
``details["repeats"]`` = k; every repeat's judge reply is in the evidence with its ``repeat`` index.  The report's
Judge reliability section reads ``judge_repeats`` for the test-retest alpha of each judge
(:func:`sgieval.metric_pool.reliability.reliability`).

**Where**: rubric metrics, ``reasoning_validity``, the deep-research ``sla`` and the SFBench explanation judge.
Idea-generation votes (their win thresholds count the six votes of the paper's three judges, METRICS.md A.2),
dry-experiment verdicts and the AidanBench coherence judge inside the generation loop ask each judge once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from ..core import Item, Response, Score
from ..models import NamedModel, repeat_of

__all__ = ["Draw", "Repeats", "ask_repeats", "judge_repeats", "draws", "repeat_details", "judge_means", "panel_score"]


def judge_repeats(ctx: Any) -> int:
    """``k``: times each judge is asked per item, from ``ctx.options["judge_repeats"]`` (default 1; at least 1)."""
    opts = getattr(ctx, "options", None) or {}
    try:
        return max(1, int(opts.get("judge_repeats", 1) or 1))
    except (TypeError, ValueError):
        return 1


def draws(judges: Sequence[NamedModel], k: int) -> list[tuple[NamedModel, int]]:
    """(the r-th draw of the judge, r) for every judge and r = 0 .. k-1, judge by judge."""
    return [(repeat_of(j, r), r) for j in judges for r in range(k)]


@dataclass(frozen=True)
class Draw:
    """One repeat's outcome: ``value`` on the metric's scale (None when it failed, with ``error``)."""

    judge: str
    repeat: int
    value: float | None
    error: str | None = None


def judge_means(results: Sequence[Draw]) -> dict[str, float]:
    """{judge: mean of its successful repeats' values}, judges in first-seen order; judges without one left out."""
    vals: dict[str, list[float]] = {}
    for d in results:
        vals.setdefault(d.judge, [])
        if d.value is not None and math.isfinite(d.value):
            vals[d.judge].append(float(d.value))
    return {j: sum(v) / len(v) for j, v in vals.items() if v}


def panel_score(
    item: Item,
    response: Response,
    metric: str,
    value: float,
    *,
    judges: str,
    evidence: list[Any],
    rationale: str,
    errors: list[str],
    details: dict[str, Any],
) -> list[Score]:
    """The one Score of a judge panel's verdict on ``response``: the rationale names the judges whose calls failed
    (they are left out of ``value``).

    Args:
        item: the item judged.
        response: the target model's response.
        metric: the metric's name.
        value: the panel's value on the metric's range (the mean of the judges that answered).
        judges: the panel's judge names, comma-separated.
        evidence: the judges' evidence records.
        rationale: one clause per judge that answered.
        errors: why each failed judge failed (empty when none failed).
        details: the Score's details (per judge, repeats).

    Returns:
        A one-Score list.
    """
    if errors:
        rationale += f"; failed judges excluded: {'; '.join(errors)}"
    return [
        Score(
            item_id=item.id,
            model=response.model,
            metric=metric,
            value=value,
            judge=judges,
            evidence=evidence,
            rationale=rationale,
            details=details,
        )
    ]


def repeat_details(results: Sequence[Draw], k: int) -> dict[str, Any]:
    """The score's details for ``k`` > 1 (module docstring): ``judge_repeats``, ``repeats`` and, when any repeat
    failed, ``repeat_failures``; {} when ``k`` is 1 (nothing to add to a single draw)."""
    if k <= 1:
        return {}
    per: dict[str, list[float | None]] = {}
    fails: dict[str, dict[str, str]] = {}
    for d in results:
        row = per.setdefault(d.judge, [None] * k)
        row[d.repeat] = d.value if d.value is not None and math.isfinite(d.value) else None
        if d.value is None:
            fails.setdefault(d.judge, {})[str(d.repeat)] = d.error or "no value"
    out: dict[str, Any] = {"judge_repeats": per, "repeats": k}
    if fails:
        out["repeat_failures"] = fails
    return out


@dataclass
class Repeats:
    """What :func:`ask_repeats` gathered: ``draws`` (one :class:`Draw` per call, in call order), ``evidence`` (every
    call's judge reply, with its ``repeat`` index when ``k`` > 1), ``errors`` ("judge (repeat r/k): reason" of each
    failed call), ``parsed`` ({judge: its last repeat that parsed}, judges in first-parsed order)."""

    draws: list[Draw] = field(default_factory=list)
    evidence: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    parsed: dict[str, Any] = field(default_factory=dict)


async def ask_repeats(
    judges: Sequence[NamedModel],
    k: int,
    messages: list[BaseMessage],
    schema: type[BaseModel],
    *,
    candidate: str,
    value: Callable[[Any], float],
    evidence_fields: Callable[[Any], dict[str, Any]] = lambda parsed: {},
) -> Repeats:
    """Ask every judge ``k`` times (:func:`draws`, one after the other) for a ``schema`` reply to ``messages``
    through :func:`sgieval.metric_pool.judge.ask_judge` (``candidate``: the judged text, for its injection
    flags); ``value(parsed)`` is a parsed reply's value on the metric's scale, ``evidence_fields(parsed)`` extra
    fields of its evidence record.  A call that fails is a Draw with value None and its reason (never a zero)."""
    from .judge import ask_judge

    out = Repeats()
    for j, r in draws(judges, k):
        rep = {"repeat": r} if k > 1 else {}
        reply = await ask_judge(j, messages, schema, candidate=candidate)
        if reply.parsed is None:
            out.errors.append(f"{j.name}{f' (repeat {r + 1}/{k})' if k > 1 else ''}: {reply.error}")
            out.evidence.append(reply.evidence(**rep))
            out.draws.append(Draw(j.name, r, None, reply.error))
            continue
        out.draws.append(Draw(j.name, r, value(reply.parsed)))
        out.parsed[j.name] = reply.parsed
        out.evidence.append(reply.evidence(**evidence_fields(reply.parsed), **rep))
    return out
