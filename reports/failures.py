"""The Failures section's data: failed responses and scores, the not-applicable ones kept apart, flagged scores
(injection suspected, METRICS.md D.14), truncated and empty replies (D.10), and censored or missing stored records."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..core import Response, Score
from .ranking import not_applicable


REPLY_STATUSES = ("truncated", "empty")  # from the target's reply itself (METRICS.md D.10), not errors


def injection_suspected(s: Score) -> bool:
    """Whether a score's evidence or details flag judge-format tags in the scored text (METRICS.md D.14)."""
    if s.details.get("injection_suspected") or "injection_suspected" in (getattr(s, "flags", None) or ()):
        return True
    return any(
        isinstance(e, dict) and (e.get("injection_suspected") or e.get("kind") == "injection_suspected")
        for e in s.evidence
    )


@dataclass
class _Tally:
    """What the Failures section counts, from one pass over the responses and one over the scores."""

    rows: list[dict[str, Any]] = field(default_factory=list)  # failed responses and scores (not n/a)
    na: list[dict[str, Any]] = field(default_factory=list)  # not-applicable scores
    flagged: list[dict[str, Any]] = field(default_factory=list)  # scores whose evidence raises a flag
    flag_counts: Counter = field(default_factory=Counter)
    truncated: int = 0
    empty: int = 0
    no_answer: Counter = field(default_factory=Counter)
    injection: int = 0
    errors: int = 0
    error_statuses: Counter = field(default_factory=Counter)  # the statuses counted in ``errors``


def _row(kind: str, rec: Response | Score, metric: str) -> dict[str, Any]:
    reason = (rec.error or "")[:200]
    return dict(kind=kind, item=rec.item_id, model=rec.model, metric=metric, status=rec.status, reason=reason)


def _tally(responses: list[Response], scores: list[Score]) -> _Tally:
    """One pass over ``responses`` and one over ``scores`` for :func:`failures`."""
    t = _Tally()
    for r in responses:
        if r.status == "ok":
            continue
        if r.status == "truncated":
            t.truncated += 1
        elif r.status == "empty":
            t.empty += 1
        else:
            t.errors += 1
            t.error_statuses[r.status] += 1
        t.rows.append(_row("response", r, ""))
    for s in scores:
        if s.status == "ok":
            if s.details.get("no_answer"):
                t.no_answer[s.metric] += 1
        else:
            apart = not_applicable(s)
            if not apart and s.status not in REPLY_STATUSES:
                t.errors += 1
                t.error_statuses[s.status] += 1
            (t.na if apart else t.rows).append(_row("score", s, s.metric))
        if s.evidence:  # flags come from the evidence only
            flags = s.flags
            if flags:
                t.flagged.append({"item": s.item_id, "model": s.model, "metric": s.metric, "flags": ", ".join(flags)})
                t.flag_counts.update(flags)
        if s.details.get("injection_suspected") or (s.evidence and injection_suspected(s)):
            t.injection += 1
    return t


def failures(responses: list[Response], scores: list[Score], limit: int = 30) -> dict[str, Any]:
    """Failed responses and scores for the Failures section, not-applicable scores apart in ``not_applicable``,
    flagged scores (D.14) counted in ``flags`` whatever their status, and in ``apart`` the counts kept apart from the
    failures: ``truncated`` and ``empty`` replies (D.10), ``no_answer`` ok scores (``details["no_answer"]``),
    ``injection`` (D.14) and ``errors`` (failed responses and applicable scores)."""
    t = _tally(responses, scores)
    return {
        "flags": _listed(
            t.flagged, limit, by_flag=", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in sorted(t.flag_counts.items()))
        ),
        "apart": {
            "truncated": t.truncated,
            "empty": t.empty,
            "no_answer": sum(t.no_answer.values()),
            "no_answer_by_metric": _counts(t.no_answer, " "),
            "injection": t.injection,
            "errors": t.errors,
            "errors_by_status": _counts(t.error_statuses, " "),
        },
        **_listed(t.rows, limit, by_status=_counts(Counter(r["status"] for r in t.rows), ": ")),
        "not_applicable": _listed(t.na, limit, by_metric=_counts(Counter(r["metric"] for r in t.na), ": ")),
    }


def _counts(counts: Counter, sep: str) -> str:
    return ", ".join(f"{k}{sep}{v}" for k, v in sorted(counts.items()))


def _listed(rows: list[dict[str, Any]], limit: int, **by: str) -> dict[str, Any]:
    """``total``, the counts ``by``, the first ``limit`` ``rows`` and how many ``more``."""
    return {"total": len(rows), **by, "rows": rows[:limit], "more": max(0, len(rows) - limit)}


def _flag(s: Score) -> str | None:
    d = s.details or {}
    return "missing" if d.get("missing") else "censored" if d.get("censored") else None


def flag_rows(scores: Iterable[Score], models: list[str] | None = None) -> list[dict[str, str]]:
    """One row ``{"item", "model", "flag", "reason", "error"}`` per censored or missing (item, target model), sorted."""
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for s in scores:
        f = _flag(s)
        if f is None or (models is not None and s.model not in models) or (s.model, s.item_id) in rows:
            continue
        d = s.details or {}
        rows[(s.model, s.item_id)] = {
            "item": s.item_id,
            "model": s.model,
            "flag": f,
            "reason": str(d.get("flag_reason", "")),
            "error": str(d.get("stop_error", "")),
        }
    return [rows[k] for k in sorted(rows)]


def flagged_items(scores: Iterable[Score], metric: str, models: list[str]) -> set[str]:
    """Item ids for which any of ``models`` has a censored or missing ``metric`` score."""
    return {s.item_id for s in scores if s.metric == metric and s.model in models and _flag(s)}
