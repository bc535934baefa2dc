"""The report's Limitations: sample size and CI method, who decided acceptance, self-preference, the judge,
self-judging, metric aggregations, the adjacent-pair tests and why an SGI-Score is unavailable."""

from __future__ import annotations

from typing import Any

from ..core import same_model
from .context import ReportContext
from .format import count_phrase
from .judges import judgement_sources, self_preference


def limitations(ctx: ReportContext, sgi_missing: list[str]) -> list[str]:
    """The Limitations lines known before the sections are built (a builder's notes follow them).

    Args:
        ctx: the report context, its statistics set.
        sgi_missing: why an SGI-Score is unavailable, one line per group of models.

    Returns:
        The lines.
    """
    items, ranked, judges, models = ctx.items, ctx.ranked, list(ctx.judges), ctx.models
    out = [
        f"{count_phrase(len(items))} selected; "
        + (
            "CIs are wide at this sample size."
            if len(items) < 30
            else "CIs are 95% BCa bootstrap intervals over items."
        )
        + (
            " 0/1 metrics get Wilson score intervals (a bootstrap of 8 of 8 correct would say '1 to 1')."
            if any(getattr(s.summary, "method", "") == "wilson" for s in ranked)
            else ""
        )
    ]
    sources = judgement_sources(ctx.scores, models)
    for src in sources:  # who decided acceptance of open-creativity answers, also for replays
        what = (
            "the stored judgements of the original run"
            if src.get("origin") == "stored"
            else "this run's open-creativity protocol"
        )
        out.append(
            f"Acceptance of the open-creativity answers rests on {what}: coherence scored by "
            f"{src.get('coherence')} and novelty by {src.get('novelty')} embeddings (from "
            f"{src.get('source')}); another judge or embedder may accept different answers."
        )
    out += [
        f"Self-preference: {x}."
        for x in self_preference([s.model for s in ranked], sources, judges, ctx.allow_self_judge)
    ]
    selfj = [j for j in judges if any(same_model(j, m) for m in models)]  # judges that are also target models
    out += _judge_lines(judges, bool(sources), ctx.header, selfj, ctx.allow_self_judge)
    scored_metrics = {s.metric for s in ctx.scores}
    out += [f"{sp.name}: {sp.aggregation}" for sp in ctx.specs if sp.aggregation and sp.name in scored_metrics]
    return out + _pair_limitations(ctx.pairs, ctx.spec.name) + sgi_missing


def _judge_lines(
    judges: list[str], stored: bool, header: dict[str, Any], selfj: list[str], allow_self_judge: bool
) -> list[str]:
    """Who judged, and whether a judge scored its own responses."""
    out = []
    if judges:
        out.append(
            f"Judge: {', '.join(judges)}. Judge and rubric scores are "
            f"{'this one model' if len(judges) == 1 else 'these models'}'s judgement: another judge may score "
            "differently, and a judge may favour models of its own family."
        )
    elif not stored:  # with stored judgements the acceptance line says who judged: no live judge was called
        out.append(f"Judge: {header.get('judges', 'none')}. Judge metrics without a judge are reported as not run.")
    if selfj and allow_self_judge:
        out.append(f"--allow-self-judge was set: {', '.join(selfj)} scored its own responses.")
    elif selfj:
        out.append(
            f"{', '.join(selfj)} is both judge and target: it did not score its own responses "
            "(those judge metrics are not run; pass --allow-self-judge to allow it)."
        )
    return out


def _pair_limitations(pairs: list[dict[str, Any]], metric: str) -> list[str]:
    """One line on the adjacent-pair tests: pairs not separated or not tested, CI overlap, no adjustment."""
    if not pairs:
        return []
    loose = [f"{d['a']} vs {d['b']}" for d in pairs if d["p"] is not None and not d["significant"]]
    untested = [f"{d['a']} vs {d['b']}" for d in pairs if d["p"] is None]
    parts = []
    if loose:
        parts.append(
            f"the paired test on {metric} does not separate {', '.join(loose)} at the 5% level, so their "
            "order is not evidence of a difference"
        )
    if untested:
        parts.append(f"{', '.join(untested)} share fewer than 2 scored items and are not tested")
    if not parts:
        parts.append(f"the paired test on {metric} separates every adjacent pair at the 5% level")
    tested = sum(d["p"] is not None for d in pairs)
    tail = (
        " 95% CI overlap is not a test (some pairs the test separates have overlapping CIs)."
        if any(d["p"] is not None and d["significant"] and d["overlap"] for d in pairs)
        else ""
    )
    adj = " The p-values are not adjusted for multiple comparisons." if tested > 1 else ""
    return [f"Adjacent ranks (table beside the ranking): {'; '.join(parts)}.{tail}{adj}"]
