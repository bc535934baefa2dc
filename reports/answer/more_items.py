"""The Answer's "More items": when the paired test does not separate the top two, how many more items of the same
kind would, and what they would cost."""

from __future__ import annotations

import math
from typing import Any, Sequence

from ..context import ReportContext
from ..format import count_phrase
from ..ranking import ModelStat, item_values


__all__ = ["MIN_ITEMS_FOR_P05", "items_needed_sentence", "price_per_item", "smallest_permutation_p"]


def items_needed_sentence(ctx: ReportContext) -> str:
    """The Answer's sentence on how many more items would separate the top two when the paired test does not
    (p >= 0.05), and what they would cost; "" when the top two are separated, untested or corpus-level.

    The top two are the two models of a tie for first, or the leader and a runner-up alone in second place (a
    shared second place has no one runner-up: no sentence).  The count is ``metric_pool.stats.items_to_separate``
    (``ctx.pool``) on their paired per-item differences (level 5% two-sided, power 80%), raised to the fewest
    items with which the paired permutation test can reach p < 0.05 at all when the run's items cannot
    (:func:`smallest_permutation_p`: 4 items give at least p = 0.125), which the sentence then says.  The price
    per item is :func:`price_per_item`; with ``header["n_matching"]`` (the catalog's items matching the run's
    filters) the sentence says whether the catalog holds the items needed.

    Args:
        ctx: the report context (the ranking metric's scores the ranking compares, its tie groups and
            adjacent-pair tests, the usage summary, the paired test's resamples).

    Returns:
        One sentence, or "".
    """
    pool, spec, usage, n_items = ctx.pool, ctx.spec, ctx.usage, len(ctx.items)
    assert pool is not None, "the reporting agent sets ctx.pool"
    n_matching = ctx.header.get("n_matching")
    n_matching = n_matching if isinstance(n_matching, int) else None
    top = _top_two(ctx.groups, ctx.pairs)
    if top is None:
        return ""
    best, runner = top
    scores = ctx.ranking_scores
    a, b = item_values(scores, best.model, spec.name), item_values(scores, runner.model, spec.name)
    keys = sorted(k for k in set(a) & set(b) if math.isfinite(a[k]) and math.isfinite(b[k]))
    if len(keys) < 2:
        return ""
    diffs = [a[k] - b[k] for k in keys]
    need = pool.items_to_separate(diffs)
    basis = (
        f"paired differences {best.model} minus {runner.model}: mean {need.mean_diff:.4g}, SD {need.sd_diff:.4g} "
        f"over {count_phrase(need.n_used)}"
    )
    p_min = smallest_permutation_p(diffs, ctx.n_resamples)
    zeros = sum(1 for d in diffs if d == 0)
    floor = ""
    if p_min >= 0.05 and need.mean_diff != 0:
        fewest = MIN_ITEMS_FOR_P05 + zeros  # the differences that are 0 stay 0: they add no flip that counts
        floor = _floor_sentence(need.n_used, zeros, p_min)
        if need.n_total is None or need.n_total < fewest:
            more = fewest - need.n_used
            formula = (
                f"the power formula ({pool.power_method}) asks for {count_phrase(need.n_total)}"
                if need.n_total is not None
                else f"the power formula gives no count: {need.reason}"
            )
            return (
                f"{floor} About {more:,} more items of the same kind ({fewest:,} in all) are the fewest with which "
                f"it could separate {best.model} from {runner.model}, if their differences keep one sign ({formula}; "
                f"{basis}); {_cost_of(more, usage, n_items)}.{_held(n_matching, n_items, more)}"
            )
    if need.n_total is None:
        return f"No number of items of the same kind would let the paired test separate them ({need.reason}; {basis})."
    more = need.n_total - need.n_used
    if more <= 0:
        return (
            f"The power formula ({pool.power_method}) asks for {count_phrase(need.n_total)}, no more than the {need.n_used} "
            f"used, yet the paired test did not separate them, so it gives no count of further items ({basis})."
        )
    return (
        f"About {more:,} more items of the same kind ({need.n_total:,} in all) would give the paired test 80% "
        f"power to separate {best.model} from {runner.model} at the 5% level, two-sided ({pool.power_method}; {basis}); "
        f"{_cost_of(more, usage, n_items)}." + (f" {floor}" if floor else "") + _held(n_matching, n_items, more)
    )


def _top_two(groups: list[list[ModelStat]], pairs: list[dict[str, Any]]) -> tuple[ModelStat, ModelStat] | None:
    """The top two the paired test did not separate (a tie for first, or leader and a lone runner-up), else None."""
    if not groups or not pairs or pairs[0].get("p") is None or pairs[0]["p"] < 0.05:
        return None
    if len(groups[0]) == 2:
        best, runner = groups[0]
    elif len(groups[0]) == 1 and len(groups) > 1 and len(groups[1]) == 1:
        best, runner = groups[0][0], groups[1][0]
    else:
        return None
    if (pairs[0].get("a"), pairs[0].get("b")) != (best.model, runner.model) or best.corpus or runner.corpus:
        return None
    return best, runner


def _floor_sentence(n_used: int, zeros: int, p_min: float) -> str:
    """Why the permutation test cannot reach p < 0.05 on ``n_used`` items and how many it needs at least."""
    return (
        f"With {count_phrase(n_used)} the paired permutation test cannot reach p < 0.05 at all: its "
        f"smallest attainable p is 2/2^{n_used - zeros} = {p_min:.4f} (every difference of one sign"
        + (
            f"; {count_phrase(zeros, 'difference')} of 0 {'changes' if zeros == 1 else 'change'} nothing when flipped"
            if zeros
            else ""
        )
        + f"), and it needs at least {MIN_ITEMS_FOR_P05} items whose difference is not 0 "
        f"(smallest p 2/2^{MIN_ITEMS_FOR_P05} = {2.0 ** (1 - MIN_ITEMS_FOR_P05):.4f})."
    )


MIN_ITEMS_FOR_P05 = 6
"""The fewest nonzero paired differences with which the sign-flip test can give p < 0.05 (2/2^6 = 0.03125)."""


def smallest_permutation_p(diffs: Sequence[float], n_resamples: int = 10000) -> float:
    """The smallest p the report's paired test (:func:`sgieval.metric_pool.stats.paired_test`, the two-sided
    sign-flip permutation test of the mean difference, scipy ``permutation_test(permutation_type="samples")``)
    can give on ``len(diffs)`` items, whatever their differences' magnitudes.

    Exact enumeration (2**n <= ``n_resamples``): only the observed signs and their full flip reach the observed
    |mean| when every nonzero difference has one sign, and flipping a difference of 0 changes nothing, so
    p_min = 2 x 2^z / 2^n = 2/2^(n - z) for z differences of 0.  Randomised (2**n > ``n_resamples``): scipy's
    p = 2 (1 + #resamples at least as extreme) / (n_resamples + 1) is at least 2/(n_resamples + 1).

    Args:
        diffs: the per-item paired differences (finite).
        n_resamples: the test's resamples (>= 1).

    Returns:
        The smallest attainable p, in (0, 1]; 1.0 when every difference is 0 or there is one item.
    """
    n, z = len(diffs), sum(1 for d in diffs if d == 0)
    if n - z == 0 or n == 1:
        return 1.0
    if 2**n <= n_resamples:
        return min(1.0, 2.0 ** (1 + z - n))
    return min(1.0, 2.0 / (n_resamples + 1))


def _cost_of(more: int, usage: dict[str, Any] | None, n_items: int) -> str:
    """What ``more`` items of the run's kind would cost."""
    per_item, source = price_per_item(usage, n_items)
    if per_item is None:
        return f"their cost is not known: {source}"
    return f"about {more * per_item:.4f} USD at {per_item:.6f} USD per item ({source})"


def _held(n_matching: int | None, n_items: int, more: int) -> str:
    """Whether the catalog holds the ``more`` items ("" when not recorded)."""
    if n_matching is None or n_matching < n_items:
        return ""
    unused = n_matching - n_items
    if unused == 0:
        return (
            f" The catalog holds no more items of this kind: this run used all {n_matching:,} that match its selection."
        )
    return f" The catalog holds {unused:,} more items of this kind (not used in this run), " + (
        "enough." if unused >= more else f"fewer than the {more:,} needed."
    )


def price_per_item(usage: dict[str, Any] | None, n_items: int) -> tuple[float | None, str]:
    """(USD per item, where it comes from): the estimate's, else the actual cost over ``n_items``; None when unknown."""
    usage = usage or {}
    est = usage.get("estimate") or {}
    rows = est.get("rows") or []
    priced = [r["usd"] for r in rows if r.get("usd") is not None]
    if priced and est.get("items") and not any(r.get("usd") is None and r.get("calls") for r in rows):
        return sum(priced) / int(est["items"]), "this run's estimate before any call, every target and judge"
    total = (usage.get("total") or {}).get("cost")
    calls = (usage.get("total") or {}).get("calls") or 0
    unpriced = (usage.get("total") or {}).get("unpriced_calls") or 0
    if not calls:
        return None, "this run made no priced call (its answers were replayed), and new items need new answers"
    if total is not None and n_items and not unpriced:
        return float(total) / n_items, "this run's actual cost per item, every model it called"
    return None, "some of this run's models have no known price"
