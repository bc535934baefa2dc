"""The Answer's first item for a question that is not a ranking (``header["question_kind"]``): ``yes_no`` and
``how_much`` here, ``where`` in :mod:`.disagree`, ``why`` in :mod:`.criteria`.  Every number comes from the paired
test on the items both models scored (``metric_pool.stats.paired_test``: permutation test, two-sided; 95% paired
BCa bootstrap CI of the mean difference)."""

from __future__ import annotations

import math
import re
import statistics
from typing import Any

from ...core import MetricSpec, ModelRef
from ..context import ReportContext
from ..format import count_phrase, fmt, fmt2, fmt_p
from ..ranking import item_values

__all__ = ["ci_of", "how_much", "named_models", "pair_note", "paired", "question_pair", "yes_no"]

_WORSE = re.compile(r"\b(?:worse|lower|weaker|less|behind|below)\b", re.I)


def named_models(request: str, models: list[str]) -> list[str]:
    """The ``models`` whose identity (``replay:phi4:latest`` -> ``phi4``) the request names, first named first.

    Args:
        request: the request.
        models: model strings.

    Returns:
        The named ones.
    """
    at: dict[str, int] = {}
    for m in models:
        ident = ModelRef.identity_of(m)
        hit = re.search(rf"(?<![\w./:-]){re.escape(ident)}(?![\w/-])", request or "", re.I) if ident else None
        if hit and ident not in {ModelRef.identity_of(x) for x in at}:
            at[m] = hit.start()
    return sorted(at, key=lambda m: at[m])


def question_pair(ctx: ReportContext) -> tuple[str, str] | None:
    """The two models a comparison question is about: those it names, then the best other ranked models."""
    ranked = [s.model for s in ctx.ranked]
    named = [m for m in named_models(ctx.request, ctx.models) if m in ranked]
    pair = (named + [m for m in ranked if m not in named])[:2]
    return (pair[0], pair[1]) if len(pair) == 2 else None


def compared(ctx: ReportContext) -> tuple[str, str, dict[str, float], dict[str, float], Any]:
    """(a, b, their per-item values, their paired test or None) for :func:`question_pair` (two ranked models)."""
    pair = question_pair(ctx)
    assert pair is not None, "compose_answer asks only with two or more ranked models"
    va, vb = (item_values(ctx.ranking_scores, m, ctx.spec.name) for m in pair)
    return pair[0], pair[1], va, vb, paired(ctx, va, vb)


def pair_note(ctx: ReportContext, pair: tuple[str, str]) -> str:
    """What the comparison stands in for when the request does not name both models of ``pair`` ("" when it does)."""
    named = [m for m in named_models(ctx.request, ctx.models) if m in pair]
    if len(named) == 2:
        return ""
    if named:
        return f" The request names one ranked model, {pair[0]}: it is compared with {pair[1]}, the best other one."
    return f" The request names no ranked model: the top two, {pair[0]} and {pair[1]}, are compared."


def paired(ctx: ReportContext, a: dict[str, float], b: dict[str, float]) -> Any:
    """The pool's paired test of ``a`` against ``b`` (None under 2 shared items)."""
    if ctx.pool is None or len(set(a) & set(b)) < 2:
        return None
    return ctx.pool.paired_test(a, b, n_resamples=ctx.n_resamples, seed=ctx.seed)


def _units_phrase(diff: float, spec: MetricSpec) -> str:
    """What a per-item difference (positive: better) means in the metric's units: for a count, ``about 7.5 more
    accepted answers per question``; for a 0-1 metric, ``about 12 more items in 100 scored 1``; else its share of the
    scale's range (``23% of the scale's range (0-100) more per item``)."""
    lo, hi = spec.range
    more = "more" if diff >= 0 else "fewer"
    if math.isinf(hi):
        words = spec.name.split("_")
        unit = spec.unit or words[-1]
        noun = " ".join(words[-2:]) if words[-1] == unit and len(words) > 2 else unit
        return f"about {abs(diff):.1f} {more} {noun} per question"
    if (lo, hi) == (0.0, 1.0):
        return f"about {abs(diff) * 100:.0f} {more} items in 100 scored 1"
    more = "more" if diff >= 0 else "less"
    return f"{abs(diff) / (hi - lo):.0%} of the scale's range ({spec.scale_label}) {more} per item"


def ci_of(r: Any) -> str:
    """``95% CI a to b`` of a paired result's difference, or that it has none."""
    if r.ci_low == r.ci_high or math.isnan(r.ci_low):
        return f"no CI: the difference is {fmt(r.mean_diff)} on every one of the {count_phrase(r.n)}"
    return f"95% CI {fmt2(r.ci_low)} to {fmt2(r.ci_high)}"


def _diff_clause(a: str, b: str, r: Any, spec: MetricSpec) -> str:
    return (
        f"on the {count_phrase(r.n)} both scored, mean {fmt2(r.mean_a)} against {fmt2(r.mean_b)} {spec.name} per item, a "
        f"difference of {fmt2(r.mean_diff)} ({a} minus {b}; {ci_of(r)}); the paired "
        f"permutation test gives p = {fmt_p(r.p_value)} (two-sided)"
    )


def _scope(ctx: ReportContext) -> str:
    scope = str(ctx.header.get("scope", "") or "")
    return f" in {scope}" if scope and scope != "whole catalog" else ""


def yes_no(ctx: ReportContext, a: str, b: str, _va: dict[str, float], _vb: dict[str, float], r: Any) -> str:
    """**Yes**, **No** or **Not established** to "Is A better than B?" (:func:`compared`'s ``a`` and ``b``): the
    difference, its CI and the paired test."""
    spec = ctx.spec
    if r is None:
        return f"**Not established**: {a} and {b} share fewer than 2 items scored by {spec.name}, so no paired test."
    asks_worse = bool(_WORSE.search(ctx.request))
    a_better = (r.mean_diff > 0) == spec.higher_is_better
    if r.p_value < 0.05 and r.mean_diff != 0:
        word = "Yes" if a_better != asks_worse else "No"
        unsettled = (
            f"whether this holds beyond {'this' if r.n == 1 else 'these'} {count_phrase(r.n)}, on other metrics, or with other judges or "
            "samples of the models"
        )
    else:
        word = "Not established"
        unsettled = (
            "which of the two is better: the difference is not significant at the 5% level"
            + (" and its 95% CI includes 0" if r.ci_low <= 0 <= r.ci_high else "")
            + "; more items would be needed to tell"
        )
    verb = f"{'worse' if asks_worse else 'better'} than {b} by {spec.name} ({spec.scale_label}, "
    verb += f"{'higher' if spec.higher_is_better else 'lower'} is better){_scope(ctx)}"
    claim = {
        "Yes": f"{a} is {verb}",
        "No": f"{a} is not {verb}: the difference goes the other way",
        "Not established": f"the data do not establish whether {a} is {verb}",
    }[word]
    return f"**{word}**: {claim}; {_diff_clause(a, b, r, spec)}. The data do not settle {unsettled}." + pair_note(
        ctx, (a, b)
    )


def how_much(ctx: ReportContext, a: str, b: str, va: dict[str, float], vb: dict[str, float], r: Any) -> str:
    """How much better ``a`` is than ``b`` (:func:`compared`): the difference and its CI, Cohen's d_z (mean over SD of
    the differences, Cohen 1988, section 2.3.5) and what it means in the metric's units."""
    spec = ctx.spec
    if r is None:
        return f"{a} and {b} share fewer than 2 items scored by {spec.name}: no difference can be estimated."
    diffs = [va[i] - vb[i] for i in sorted(set(va) & set(vb))]
    sd = statistics.stdev(diffs)
    dz = (
        f"Cohen's d_z = {fmt2(r.mean_diff / sd)} (mean of the {r.n} paired differences {fmt2(r.mean_diff)} over "
        f"their SD {fmt2(sd)})"
        if sd > 0
        else f"none (the {r.n} paired differences are all {fmt(r.mean_diff)}: SD 0)"
    )
    better = r.mean_diff if spec.higher_is_better else -r.mean_diff
    return (
        f"{a} against {b} by {spec.name} ({spec.scale_label}){_scope(ctx)}: {_diff_clause(a, b, r, spec)}. "
        f"Standardised effect size: {dz}. In the metric's units: {a} scores {_units_phrase(better, spec)} than {b}"
        + (f" ({fmt(r.mean_diff)} per item)" if not math.isinf(spec.range[1]) else "")
        + "."
        + pair_note(ctx, (a, b))
    )
