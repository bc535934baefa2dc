"""Where the models differ, from one metric's ``{model: {item id: value}}``: :func:`facet_winners` (per facet value,
paired permutation test, p < 0.05 unadjusted), :func:`lead_sources` (the leader's lead split by facet value, shares
summing to 1) and :func:`order_departures` (Spearman footrule per item, Diaconis and Graham 1977)."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import groupby
from typing import Mapping

from .stats import PairedResult, paired_test

FACETS = ("discipline", "direction", "task", "type")  # the facets of the "who wins where" tables
DIGITS = 2  # the precision the report prints means at: models whose means are equal at it are tied
SIGNIFICANCE = 0.05  # the two-sided level below which a paired test separates two models


@dataclass(frozen=True)
class FacetValue:
    """One facet value's row of the "who wins where" table: ``order`` (model, mean, n items) best first, tie ``groups``,
    the ``lead`` of the first group over the second, and the paired ``test`` of the first model against the second-group
    member it is least separated from (largest p)."""

    facet: str
    value: str
    n_items: int
    order: list[tuple[str, float, int]]
    first: list[str]
    lead: float | None
    test: PairedResult | None
    rank_of: dict[str, int] = field(default_factory=dict)
    groups: list[list[str]] = field(default_factory=list)

    @property
    def second(self) -> list[str]:
        """The models of the group after the first."""
        return self.groups[1] if len(self.groups) > 1 else []

    @property
    def separated(self) -> bool | None:
        """Whether the paired test separates the first two (p < 0.05); None without a test."""
        return None if self.test is None else self.test.p_value < SIGNIFICANCE


@dataclass(frozen=True)
class LeadShare:
    """The part of the lead of first over second one facet value holds: ``diff`` summed over its ``n`` shared items,
    ``share`` = diff / the summed difference over all shared items (None when that is 0)."""

    facet: str
    value: str
    n: int
    diff: float
    share: float | None


@dataclass(frozen=True)
class ItemDeparture:
    """One item's Spearman footrule ``distance`` from the overall order."""

    item_id: str
    distance: float
    ranks: dict[str, float]
    values: dict[str, float]


def facet_winners(
    values: Mapping[str, Mapping[str, float]],
    facet_of: Mapping[str, str],
    facet: str,
    *,
    higher_is_better: bool = True,
    n_resamples: int = 10000,
    seed: int = 0,
) -> list[FacetValue]:
    """The "who wins where" rows of one facet.

    Args:
        values: model -> item id -> value.
        facet_of: item id -> the item's value of ``facet``.
        facet: the facet's name.
        higher_is_better: the metric's direction.
        n_resamples: resamples of the paired permutation tests.

    Returns:
        One :class:`FacetValue` per facet value; [] with fewer than two values among the scored items.
    """
    scored = {i for per in values.values() for i in per if i in facet_of}
    groups = sorted({facet_of[i] for i in scored})
    if len(groups) < 2:
        return []
    rows = []
    sign = 1.0 if higher_is_better else -1.0
    for g in groups:
        ids = {i for i in scored if facet_of[i] == g}
        order = []
        for m, per in values.items():
            mine = [per[i] for i in ids if i in per]
            if mine:
                order.append((m, float(sum(mine) / len(mine)), len(mine)))
        order.sort(key=lambda r: -sign * round(r[1], DIGITS))  # stable: a tie keeps the given order
        mean_of = {m: mean for m, mean, _n in order}
        tiers = [[m for m, _, _ in run] for _, run in groupby(order, lambda r: round(r[1], DIGITS))]  # equal as printed
        first = tiers[0]
        lead = test = None
        if len(tiers) > 1 and len(first) == 1:
            a = first[0]
            lead = mean_of[a] - mean_of[tiers[1][0]]
            for b in tiers[1]:
                shared = {i: values[a][i] for i in ids if i in values[a] and i in values[b]}
                if len(shared) >= 2:
                    t = paired_test(shared, {i: values[b][i] for i in shared}, n_resamples=n_resamples, seed=seed)
                    if test is None or t.p_value > test.p_value:
                        test = t
        rank_of = {m: 1 + sum(map(len, tiers[:k])) for k, g in enumerate(tiers) for m in g}
        rows.append(FacetValue(facet, g, len(ids), order, first, lead, test, rank_of, tiers))
    return rows


def lead_sources(
    values: Mapping[str, Mapping[str, float]], facet_of: Mapping[str, str], facet: str, first: str, second: str
) -> list[LeadShare]:
    """Where ``first``'s lead over ``second`` comes from, by value of ``facet``.

    Args:
        values: model -> item id -> value.
        facet_of: item id -> its value of ``facet``.
        facet: the facet's name.
        first: the model ahead.
        second: the model behind (first minus second).

    Returns:
        One :class:`LeadShare` per facet value of the shared items, the largest ``diff`` first.
    """
    a, b = values.get(first, {}), values.get(second, {})
    shared = [i for i in a if i in b and i in facet_of]
    total = sum(a[i] - b[i] for i in shared)
    by: dict[str, list[float]] = {}
    for i in shared:
        by.setdefault(facet_of[i], []).append(a[i] - b[i])
    out = [
        LeadShare(facet, g, len(d), float(sum(d)), (float(sum(d)) / total) if total else None)
        for g, d in sorted(by.items())
    ]
    return sorted(out, key=lambda s: -s.diff)


def order_departures(
    values: Mapping[str, Mapping[str, float]],
    overall: Mapping[str, float],
    *,
    higher_is_better: bool = True,
    limit: int | None = 10,
) -> list[ItemDeparture]:
    """The items on which the models' order departs most from their overall order.

    Args:
        values: model -> item id -> value.
        overall: model -> its overall mean (equal means share the mean rank).
        higher_is_better: the metric's direction.
        limit: how many items to return (None: all).

    Returns:
        :class:`ItemDeparture` rows of the items at least two models scored, largest distance first (none at 0).
    """
    from scipy.stats import rankdata

    models = [m for m in overall if m in values]
    sign = -1.0 if higher_is_better else 1.0
    items = sorted({i for m in models for i in values[m]})
    out = []
    for item in items:
        here = [m for m in models if item in values[m]]
        if len(here) < 2:
            continue
        here_values = [round(values[m][item], DIGITS) for m in here]
        if len(set(here_values)) == 1:  # every model scores the same: the item has no order
            continue
        item_ranks = rankdata([sign * v for v in here_values], method="average")
        overall_ranks = rankdata([sign * round(overall[m], DIGITS) for m in here], method="average")
        distance = float(sum(abs(r - o) for r, o in zip(item_ranks, overall_ranks)))
        if distance > 0:
            ranks = {m: float(r) for m, r in zip(here, item_ranks)}
            out.append(ItemDeparture(item, distance, ranks, {m: float(values[m][item]) for m in here}))
    out.sort(key=lambda d: (-d.distance, d.item_id))
    return out if limit is None else out[:limit]
