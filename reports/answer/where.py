"""The Answer's "Where it differs": facet values where the overall winner is not first, where its lead comes from,
where the models differ most, near-ties and ties (from the "Who wins where" tables), and the other metrics that put
another model first.  Means equal at the printed precision are one group, "a = b"."""

from __future__ import annotations

import math
import re
import statistics
from typing import Any
from urllib.parse import quote

from ...core import MetricSpec, Score
from ..format import fmt, fmt2, fmt_p, ordinal
from ..ranking import item_values, model_means, ordered_by_mean

__all__ = [
    "DOMINANCE_SHARE",
    "NEAR_TIE",
    "WHERE_REQUEST",
    "dominant_item",
    "facet_sentences",
    "group_text",
    "item_link",
    "main_facet",
    "metric_disagreement",
    "metric_tops",
]

WHERE_REQUEST = re.compile(
    r"\b(?:where|which\s+(?:topics?|fields?|areas?|subjects?|disciplines?|domains?|subfields?|directions?)|"
    r"disagree\w*|differ(?:s|ence|ences)?\s+(?:by|across|between)\s+(?:topics?|fields?|disciplines?))\b",
    re.I,
)

FACET_WORDS = {
    "discipline": re.compile(r"\b(?:disciplines?|fields?|domains?|sciences?)\b", re.I),
    "direction": re.compile(r"\b(?:subfields?|sub-fields?|directions?|topics?|subdomains?|areas?)\b", re.I),
    "task": re.compile(r"\btasks?\b", re.I),
    "type": re.compile(r"\btypes?\b", re.I),
}

NEAR_TIE = 0.10
"""Near-tie: the paired test does not separate the first two and the lead is at most this share of the mean."""


def item_link(item_id: str) -> str:
    """The item's page in the run's HTML viewer (``sgieval view`` writes ``viewer/index.html`` in the run folder).

    Args:
        item_id: an item id.

    Returns:
        The relative link.
    """
    return f"viewer/index.html#/item/{quote(item_id, safe='')}"


DOMINANCE_SHARE = 0.4
"""An item dominates a model's mean with this share of its total and twice the next item (values >= 0, 3+ items)."""


def metric_tops(scores: list[Score], specs: list[MetricSpec], models: list[str]) -> dict[str, tuple[list[str], float]]:
    """Per metric of ``specs``: the model(s) with the best mean per item over ok item-level scores, and that mean.

    Args:
        scores: the run's scores.
        specs: the metrics.
        models: the target models.

    Returns:
        metric name -> (best models, best mean); metrics without a value left out.
    """
    out = {}
    for spec in specs:
        means = model_means(scores, spec.name, models)
        if not means:
            continue
        order = ordered_by_mean(means, spec.higher_is_better)
        best = means[order[0]]
        out[spec.name] = ([m for m in order if means[m] == best], best)
    return out


def dominant_item(scores: list[Score], metric: str, model: str) -> dict[str, Any] | None:
    """The item holding at least :data:`DOMINANCE_SHARE` of ``model``'s total on ``metric``, if one does.

    Args:
        scores: the run's scores.
        metric: a metric name.
        model: a target model.

    Returns:
        ``{"item", "value", "total", "share", "n", "mean", "median"}``, or None.
    """
    vals = item_values(scores, model, metric)
    if len(vals) < 3 or any(v < 0 for v in vals.values()):
        return None
    total = sum(vals.values())
    if total <= 0 or math.isnan(total):
        return None
    item, runner_up = sorted(vals, key=lambda k: (-vals[k], k))[:2]
    if vals[item] / total < DOMINANCE_SHARE or vals[item] < 2 * vals[runner_up]:
        return None
    return {
        "item": item,
        "value": vals[item],
        "total": total,
        "share": vals[item] / total,
        "n": len(vals),
        "mean": total / len(vals),
        "median": statistics.median(vals.values()),
    }


def group_text(r: Any, group: list[str], paren: bool = True) -> str:
    """``a = b (0.50)`` (``a = b 0.50`` without ``paren``): a tie group of the facet value ``r``
    (``metric_pool.differences.FacetValue``) with its mean, shared at the printed precision.

    Args:
        r: the facet value's row.
        group: models of one group.
        paren: the mean in parentheses.

    Returns:
        The text.
    """
    mean = next(mean for m, mean, _n in r.order if m == group[0])
    return f"{' = '.join(group)} ({fmt2(mean)})" if paren else f"{' = '.join(group)} {fmt2(mean)}"


def main_facet(tables: dict[str, list[Any]], request: str, facets: list[str]) -> str:
    """The facet the Answer speaks of first: the one the request names, else the one with the most values (the
    finest split; ties by the order of ``facets``).

    Args:
        tables: facet -> its rows.
        request: the request.
        facets: every facet, in order.

    Returns:
        The facet.
    """
    named = [f for f in tables if FACET_WORDS.get(f) and FACET_WORDS[f].search(request or "")]
    return named[0] if named else max(tables, key=lambda f: (len(tables[f]), -facets.index(f)))


def facet_sentences(
    tables: dict[str, list[Any]],
    main: str,
    spec: MetricSpec,
    ranked: list[tuple[str, float]],
    winner: str | None,
    separated: bool,
    lead: list[Any],
    values: dict[str, dict[str, float]],
    facet_of: dict[str, str],
) -> list[str]:
    """The Answer's sentences from the "Who wins where" tables.

    Args:
        tables: facet -> its rows (``metric_pool.differences.FacetValue``), ``main`` first in the sentences.
        main: the facet of :func:`main_facet`.
        spec: the ranking metric.
        ranked: (model, overall mean), best first.
        winner: the single overall leader, None when first place is shared.
        separated: whether the paired test separates the leader from the runner-up.
        lead: where the leader's lead over the second comes from, by value of ``main``
            (``metric_pool.differences.lead_sources``).
        values: model -> item id -> value.
        facet_of: item id -> its value of ``main``.

    Returns:
        The sentences: where the winner is not first, where its lead comes from, where the models differ most, the
        near-ties and the ties.
    """
    unit = f"{spec.name} per item"
    order = [main, *[f for f in tables if f != main]]
    out: list[str] = []
    if winner is not None:
        out += _not_first(tables, order, winner, separated, ranked[1][0])
        out += _lead(lead, spec, ranked, winner, values, facet_of, main, unit)
    out += _differ_most([(f, r) for f in order for r in tables[f] if r.second], unit)
    for r in tables[main]:
        if r.lead is not None and r.separated is not True and abs(r.lead) <= NEAR_TIE * max(abs(r.order[0][1]), 1e-12):
            test = (
                f"the paired test does not separate them (p = {fmt_p(r.test.p_value)})" if r.test else "no paired test"
            )
            out.append(
                f"{r.value} is a near-tie: {group_text(r, r.first, False)} against {group_text(r, r.second, False)} "
                f"{unit}; {test}."
            )
    for r in tables[main]:
        if len(r.first) > 1:
            out.append(f"{r.value} is a tie: {' = '.join(r.first)} at {fmt2(r.order[0][1])} {unit}.")
    return out


def _not_first(tables: dict[str, list[Any]], order: list[str], winner: str, separated: bool, second: str) -> list[str]:
    """One sentence per facet with values where the overall winner is not first (each value named once)."""
    out = []
    named_values: set[str] = set()
    for facet in order:
        notfirst = [
            r for r in tables[facet] if winner in r.rank_of and winner not in r.first and r.value not in named_values
        ]
        named_values |= {r.value for r in notfirst}
        if notfirst:
            standing = (
                "is first overall but not in"
                if separated
                else f"has the highest overall mean (the paired test does not separate it from {second}) "
                "but is not first in"
            )
            out.append(
                f"By {facet}, {winner} {standing} "
                + "; ".join(
                    f"{r.value} ({' and '.join(r.first)} first, {winner} {ordinal(r.rank_of[winner])})"
                    for r in notfirst
                )
                + "."
            )
    return out


def _lead(
    shares: list[Any],
    spec: MetricSpec,
    ranked: list[tuple[str, float]],
    winner: str,
    values: dict[str, dict[str, float]],
    facet_of: dict[str, str],
    main: str,
    unit: str,
) -> list[str]:
    """Where the winner's lead over the second comes from, and that the second place is shared when it is."""
    total = sum(s.diff for s in shares)
    if not (shares and total > 0):
        return []
    second, top = ranked[1][0], shares[0]
    co_second = [m for m, mean in ranked[2:] if round(mean, 2) == round(ranked[1][1], 2)]
    n_shared = sum(s.n for s in shares)
    out = []
    if top.diff > total:  # facets offset each other: no share over 100%
        against = sorted((sh for sh in shares if sh.diff < 0), key=lambda x: x.diff)
        out.append(
            f"{top.value} alone holds a lead of {fmt(top.diff)} for {winner} over {second} (summed "
            f"{spec.name} on its {top.n} item{'s' if top.n != 1 else ''}), larger than the overall lead of "
            f"{fmt(total)} on the {n_shared} items both scored: other {main} values offset it"
            + (" (" + ", ".join(f"{sh.value} {fmt(sh.diff)}" for sh in against) + ")" if against else "")
            + "."
        )
    elif top.share is not None and top.diff > 0:
        how = "mostly" if top.share > 0.5 else "most of all"
        own = ""
        if math.isinf(spec.range[1]):  # a count: how much of the winner's total that value holds
            there = sum(v for i, v in values[winner].items() if facet_of.get(i) == top.value)
            own = f"; {winner} has {fmt(there)} of its {fmt(sum(values[winner].values()))} there"
        out.append(
            f"{winner}'s lead over {second} comes {how} from {top.value}: its "
            f"{top.n} item{'s hold' if top.n != 1 else ' holds'} "
            f"{fmt(top.diff)} ({top.share:.0%}) of the {fmt(total)} by which {winner}'s summed {spec.name} "
            f"exceeds {second}'s on the {n_shared} items both scored{own}."
        )
    if co_second:
        out.append(
            f"{second} shares second place with {' and '.join(co_second)} at {fmt2(ranked[1][1])} {unit}: the "
            f"lead above is over {second} only."
        )
    return out


def _differ_most(gapped: list[tuple[str, Any]], unit: str) -> list[str]:
    """The facet values with the largest gap between the first and the second group (each value once)."""

    def gap(r: Any) -> float:
        means = {m: mean for m, mean, _n in r.order}
        return round(abs(means[r.first[0]] - means[r.second[0]]), 2)

    widest = max((gap(r) for _f, r in gapped), default=0.0)
    if widest <= 0:
        return []
    most: dict[str, tuple[str, Any]] = {}  # each value once, an untied first group before a tied one
    for f, r in sorted(((f, r) for f, r in gapped if gap(r) == widest), key=lambda fr: len(fr[1].first) > 1):
        most.setdefault(r.value, (f, r))
    return [
        "The models differ most in "
        + "; ".join(
            f"{r.value} ({facet}): {group_text(r, r.first)} against {group_text(r, r.second)}, "
            f"a gap of {widest:.2f} {unit}"
            + (
                f" (the paired test {'separates' if r.separated else 'does not separate'} them, "
                f"p = {fmt_p(r.test.p_value)})"
                if r.test is not None
                else ""
            )
            for facet, r in most.values()
        )
        + "."
    ]


def metric_disagreement(
    scores: list[Score],
    specs: list[MetricSpec],
    spec: MetricSpec,
    names: list[str],
    leaders: list[str],
    focus: str | None,
) -> list[str]:
    """The sentence naming the other metrics that put another model first (with an item that dominates that
    model's mean, and its median), [] when they agree.

    Args:
        scores: the run's scores.
        specs: every metric of the run.
        spec: the ranking metric.
        names: the ranked models, best first.
        leaders: the models sharing first place.
        focus: the one model the request asks about (its first-ranked model is then compared).

    Returns:
        One sentence, or none.
    """
    if len(names) < 2:
        return []
    others = [x for x in specs if x.name != spec.name and not x.variant_of and spec.variant_of != x.name]
    disagree = []
    for name, (top, mean) in metric_tops(scores, others, names).items():
        if set(top) & set(leaders if not focus else names[:1]):
            continue
        doms = [d for d in (dominant_item(scores, name, m) for m in top) if d]
        dom = (
            f", but one item, {doms[0]['item']}, holds {fmt(doms[0]['value'])} of its {fmt(doms[0]['total'])} "
            f"({doms[0]['share']:.0%}); median {fmt2(doms[0]['median'])} per item"
            if doms
            else ""
        )
        disagree.append(f"{name} puts {' and '.join(top)} first (mean {fmt2(mean)}{dom})")
    if not disagree:
        return []
    first = " and ".join(leaders) if not focus else names[0]
    return [
        f"The metrics disagree about the top model: {spec.name} puts {first} first, but " + "; ".join(disagree) + "."
    ]
