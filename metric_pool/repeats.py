"""Repeated judge calls (``--judge-repeats k``): each judge is asked ``k`` times per judged item; a judge's value is the
mean of its successful repeats.  ``details``: ``judge_repeats`` {judge: [value or None]}, ``repeat_failures`` {judge:
{repeat: reason}}, ``repeats`` = k."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from ..core import Item, Response, Score
from ..models import NamedModel, repeat_of
from .base import score_for


def judge_repeats(ctx: Any) -> int:
    """``k`` from ``ctx.options["judge_repeats"]`` (default and at least 1)."""
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
    """{judge: mean of its successful repeats' values}."""
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
    """The one Score of a judge panel's verdict on ``response``; the rationale names the failed judges.

    Args:
        value: the panel's value.
        judges: the panel's judge names, comma-separated.
        evidence: the judges' evidence records.
        rationale: one clause per judge that answered.
        errors: why each failed judge failed.
        details: the Score's details.

    Returns:
        A one-Score list.
    """
    if errors:
        rationale += f"; failed judges excluded: {'; '.join(errors)}"
    fields = {"judge": judges, "evidence": evidence, "rationale": rationale, "details": details}
    return [score_for(item, response, metric, value, **fields)]


def repeat_details(results: Sequence[Draw], k: int) -> dict[str, Any]:
    """The score's details for ``k`` > 1 (module docstring); {} when ``k`` is 1."""
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
    """What :func:`ask_repeats` gathered; ``parsed``: {judge: its last repeat that parsed}."""

    draws: list[Draw] = field(default_factory=list)
    evidence: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    parsed: dict[str, Any] = field(default_factory=dict)
    replies: list[Any] = field(default_factory=list)  # each draw's parsed reply, None when it failed


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
    """Ask every judge ``k`` times, one after the other, for a ``schema`` reply; ``value(parsed)`` is a reply's value,
    ``evidence_fields(parsed)`` extra fields of its evidence; a failed call is a Draw with value None."""
    from .judge import ask_judge

    out = Repeats()
    for j, r in draws(judges, k):
        rep = {"repeat": r} if k > 1 else {}
        reply = await ask_judge(j, messages, schema, candidate=candidate)
        out.replies.append(reply.parsed)
        if reply.parsed is None:
            out.errors.append(f"{j.name}{f' (repeat {r + 1}/{k})' if k > 1 else ''}: {reply.error}")
            out.evidence.append(reply.evidence(**rep))
            out.draws.append(Draw(j.name, r, None, reply.error))
            continue
        out.draws.append(Draw(j.name, r, value(reply.parsed)))
        out.parsed[j.name] = reply.parsed
        out.evidence.append(reply.evidence(**evidence_fields(reply.parsed), **rep))
    return out
