"""The Answer's "where" sentences for any run of two or more models: the facet values (and a rubric's criteria)
where the order of the two models asked about flips or their gap is largest, with Holm's adjustment
(``metric_pool.stats.holm``); the items of widest spread and those where the order of the two flips."""

from __future__ import annotations

from typing import Any

from ..context import ReportContext
from ..format import count_phrase, fmt, fmt2, fmt_p
from ..ranking import item_values
from .criteria import criterion_values
from .kinds import paired, question_pair
from .where import item_link

__all__ = ["facet_tests", "where_lead"]

SPREAD_ITEMS = 5  # items of the widest spread the Answer names


def facet_tests(ctx: ReportContext, a: str, b: str) -> list[tuple[str, str, Any]]:
    """The paired test of ``a`` against ``b`` on each facet value's items (facets with two or more values among the
    items both scored; a value whose items another facet's value already holds is left out), then on each
    criterion of a rubric ranking metric.

    Args:
        ctx: the report context, its statistics set.
        a: a ranked model.
        b: another.

    Returns:
        ``(facet, value, PairedResult)`` per value with at least 2 shared items.
    """
    spec = ctx.spec
    va, vb = (item_values(ctx.ranking_scores, m, spec.name) for m in (a, b))
    out: list[tuple[str, str, Any]] = []
    seen: set[frozenset[str]] = set()
    for facet in ctx.pool.facets if ctx.pool else []:
        by_value: dict[str, set[str]] = {}
        for item in ctx.items:
            if item.id in va and item.id in vb:
                by_value.setdefault(str(getattr(item, facet) or "(none)"), set()).add(item.id)
        for value, ids in sorted(by_value.items()) if len(by_value) > 1 else []:
            if frozenset(ids) not in seen:
                seen.add(frozenset(ids))
                r = paired(ctx, {i: va[i] for i in ids}, {i: vb[i] for i in ids})
                out += [(facet, value, r)] if r is not None else []
    if spec.kind == "rubric":
        ca, cb = criterion_values(ctx, spec, a), criterion_values(ctx, spec, b)
        out += [("criterion", n, r) for n in ca if (r := paired(ctx, ca[n], cb.get(n, {}))) is not None]
    return out


def _facet_sentence(ctx: ReportContext, a: str, b: str, raw: float) -> str:
    """Where the order of ``a`` and ``b`` flips and where their gap is largest, with the Holm-adjusted p-values."""
    tests = facet_tests(ctx, a, b)
    if not tests:
        return (
            f"No facet splits the items {a} and {b} both scored (each facet has one value there), so the models "
            "differ only item by item."
        )
    adjusted = ctx.pool.holm([r.p_value for _f, _v, r in tests]) if ctx.pool else []
    rows = [(f, v, r, p) for (f, v, r), p in zip(tests, adjusted)]

    def say(f: str, v: str, r: Any, p: float) -> str:
        hi, lo = (a, b) if r.mean_diff >= 0 else (b, a)
        m_hi, m_lo = (r.mean_a, r.mean_b) if r.mean_diff >= 0 else (r.mean_b, r.mean_a)
        return (
            f"{v} ({f}; {hi} {fmt2(m_hi)} against {lo} {fmt2(m_lo)} per item, {r.n} items, p = "
            f"{fmt_p(r.p_value)}, Holm-adjusted p = {fmt_p(p)})"
        )

    flips = sorted([x for x in rows if x[2].mean_diff * raw < 0], key=lambda x: (x[3], x[2].p_value, x[1]))
    widest = max(rows, key=lambda x: (abs(x[2].mean_diff), -x[3]))
    head = (
        f"Between {a} and {b} by {ctx.spec.name}, per facet value (paired permutation test on the value's items, "
        f"two-sided; Holm-adjusted for the {count_phrase(len(rows), 'value')} tested): "
    )
    flipped = (
        f"the order flips in {'; '.join(say(*x) for x in flips[:3])}"
        + (f" and {len(flips) - 3} more values" if len(flips) > 3 else "")
        if flips
        else "the order flips in no facet value"
    )
    return head + flipped + f"; the gap is largest in {say(*widest)}."


def _spread_sentence(ctx: ReportContext, models: list[str]) -> str:
    """The items with the widest spread (highest minus lowest value) between the ranked models."""
    vals = {m: item_values(ctx.ranking_scores, m, ctx.spec.name) for m in models}
    spread: list[tuple[float, str, str, str]] = []
    for item in {i for v in vals.values() for i in v}:
        have = sorted((v[item], m) for m, v in vals.items() if item in v)
        if len(have) > 1 and have[-1][0] > have[0][0]:
            spread.append((have[-1][0] - have[0][0], item, have[-1][1], have[0][1]))
    if not spread:
        return ""
    top = sorted(spread, key=lambda x: (-x[0], x[1]))[:SPREAD_ITEMS]
    return (
        f"The items with the widest spread between the models (highest minus lowest {ctx.spec.name}): "
        + "; ".join(
            f"[{i}]({item_link(i)}) ({fmt(s)}: {hi} {fmt(vals[hi][i])}, {lo} {fmt(vals[lo][i])})"
            for s, i, hi, lo in top
        )
        + "."
    )


def _flip_sentence(ctx: ReportContext, a: str, b: str, raw: float) -> str:
    """The items where the model worse overall scores better than the other (``raw``: summed ``a`` minus ``b``)."""
    sign = 1 if ctx.spec.higher_is_better else -1
    if raw == 0:
        return ""
    if raw * sign < 0:
        a, b = b, a
    va, vb = (item_values(ctx.ranking_scores, m, ctx.spec.name) for m in (a, b))
    shared = set(va) & set(vb)
    flips = sorted((i for i in shared if sign * (vb[i] - va[i]) > 0), key=lambda i: (sign * (va[i] - vb[i]), i))
    better = "higher" if sign > 0 else "lower"
    if not flips:
        return f"{b} scores {better} than {a} on none of the {count_phrase(len(shared))} both scored."
    return (
        f"The overall order flips on {len(flips)} of the {count_phrase(len(shared))} both scored, where {b} scores "
        f"{better} than {a}; most on "
        + "; ".join(f"[{i}]({item_link(i)}) ({b} {fmt(vb[i])}, {a} {fmt(va[i])})" for i in flips[:3])
        + "."
    )


def where_lead(ctx: ReportContext) -> list[str]:
    """The Answer's "where" sentences (module doc): facet values with Holm-adjusted tests, widest-spread items and
    items where the order flips; [] with fewer than two ranked models.

    Args:
        ctx: the report context, its statistics set.

    Returns:
        The sentences.
    """
    pair = question_pair(ctx)
    if pair is None or ctx.pool is None:
        return []
    a, b = pair
    va, vb = (item_values(ctx.ranking_scores, m, ctx.spec.name) for m in pair)
    raw = sum(va[i] - vb[i] for i in set(va) & set(vb))
    out = [_facet_sentence(ctx, a, b, raw), _spread_sentence(ctx, [s.model for s in ctx.ranked])]
    return [s for s in [*out, _flip_sentence(ctx, a, b, raw)] if s]
