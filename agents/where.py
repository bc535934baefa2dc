"""Where the models differ: the report's "Who wins where" section and the Answer's sentences about it.

From the ranking metric's ok item-level scores: one table per facet (discipline, direction, task, type) with at least
two values among the scored items -- the first model per value, its lead over the second and whether the paired
test on that value's items separates them (:func:`sgieval.metric_pool.differences.facet_winners`) --, where the
overall first model's lead over the second comes from (:func:`~sgieval.metric_pool.differences.lead_sources`), the
near-ties, and the items on which the models' order departs most from the overall order
(:func:`~sgieval.metric_pool.differences.order_departures`), each linked to the item in the HTML viewer.

Models whose means are equal at the printed precision (2 decimals) are one group, written "a = b", never ordered by
name; the second is the next group.  The Answer names the facet values where the overall winner is not first, the
value that holds most of its lead (or, when other values offset it, that it alone holds more than the overall lead),
the values where the models differ most (the largest gap between the first and the second group), then the
near-ties and ties; a request that asks where the models differ ("where", "which topics", "in which fields") gets these
sentences first.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from urllib.parse import quote

from ..core import CORPUS, Item, MetricSpec, Score
from ..metric_pool import FACETS, FacetValue, facet_winners, lead_sources, order_departures
from ..reports import pair_separates, tie_groups
from ..reports import Heading, ReportContext, Section, Table, Text, report_section

__all__ = ["NEAR_TIE", "WHERE_REQUEST", "WhereReport", "asks_where", "item_link", "where_report"]

WHERE_REQUEST = re.compile(
    r"\b(?:where|which\s+(?:topics?|fields?|areas?|subjects?|disciplines?|domains?|subfields?|directions?)|"
    r"in\s+which\s+(?:topics?|fields?|areas?|subjects?|disciplines?|domains?|subfields?|directions?)|"
    r"disagree\w*|differ(?:s|ence|ences)?\s+(?:by|across|between)\s+(?:topics?|fields?|disciplines?))\b",
    re.I,
)
"""A request that asks where the models differ ("where do they disagree?", "which topics", "in which fields")."""

FACET_WORDS = {
    "discipline": re.compile(r"\b(?:disciplines?|fields?|domains?|sciences?)\b", re.I),
    "direction": re.compile(r"\b(?:subfields?|sub-fields?|directions?|topics?|subdomains?|areas?)\b", re.I),
    "task": re.compile(r"\btasks?\b", re.I),
    "type": re.compile(r"\btypes?\b", re.I),
}
"""Request words naming a facet ("across disciplines" -> discipline; "which topics" -> direction)."""

NEAR_TIE = 0.10
"""A facet value is a near-tie when the paired test does not separate its first two models and the first's lead is
at most this share of its mean (10%)."""


def asks_where(request: str) -> bool:
    """Whether ``request`` asks where the models differ (:data:`WHERE_REQUEST`)."""
    return bool(WHERE_REQUEST.search(request or ""))


def item_link(item_id: str) -> str:
    """The item's page in the run's HTML viewer (``sgieval view`` writes ``viewer/index.html`` in the run folder)."""
    return f"viewer/index.html#/item/{quote(item_id, safe='')}"


@dataclass
class WhereReport:
    """The section's blocks (``blocks``) and the Answer's sentences (``sentences``); ``leads``: whether the request
    asked where the models differ (the sentences then come first); ``tables``: facet -> rows."""

    title: str = "Who wins where"
    blocks: list = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    leads: bool = False
    tables: dict[str, list[FacetValue]] = field(default_factory=dict)

    @property
    def section(self) -> Section:
        """The "Who wins where" report section, its sentences under the Answer's "where" part."""
        return Section("where", self.title, list(self.blocks), answer={"where": list(self.sentences)}, leads=self.leads)

    @property
    def body(self) -> str:
        """The section's content as Markdown (without its title)."""
        return self.section.markdown().split("\n\n", 1)[1] if self.blocks else ""


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def _num(x: float) -> str:
    """A sum as the tables print it: an integer without decimals, else 2 decimals."""
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


def _p(p: float) -> str:
    return "< 0.0001" if p < 0.0001 else f"{p:.4f}"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _values(scores: list[Score], metric: str, models: list[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {m: {} for m in models}
    for s in scores:
        if s.metric == metric and s.model in out and s.ok and s.value is not None and s.item_id != CORPUS:
            out[s.model][s.item_id] = float(s.value)
    return {m: v for m, v in out.items() if v}


def _group_text(r: FacetValue, group: list[str], paren: bool = True) -> str:
    """``a = b (0.50)`` (``a = b 0.50`` without ``paren``): a tie group with its (shared, at the printed
    precision) mean."""
    mean = next(mean for m, mean, _n in r.order if m == group[0])
    return f"{' = '.join(group)} ({_fmt(mean)})" if paren else f"{' = '.join(group)} {_fmt(mean)}"


def _row(r: FacetValue, spec: MetricSpec) -> list[str]:
    first = _group_text(r, r.first)
    second = _group_text(r, r.second) if r.second else "-"
    if r.lead is None:
        lead = "tie" if len(r.first) > 1 else "-"
    else:
        lead = f"{r.lead:+.2f}" if spec.higher_is_better else f"{-r.lead:+.2f} lower"
    if r.test is None:
        test = "no test (fewer than 2 shared items)" if r.lead is not None else "-"
    else:
        test = f"{'yes' if r.separated else 'no'} (p = {_p(r.test.p_value)}, {r.test.n} items)"
    means = {m: mean for m, mean, _n in r.order}
    order = (" > " if spec.higher_is_better else " < ").join(f"{' = '.join(g)} {_fmt(means[g[0]])}" for g in r.groups)
    return [r.value, str(r.n_items), first, second, lead, test, order]


def where_report(
    request: str,
    items: list[Item],
    scores: list[Score],
    spec: MetricSpec,
    ranked: list[tuple[str, float]],
    *,
    n_resamples: int = 10000,
    seed: int = 0,
    limit: int = 10,
    leaders: list[str] | None = None,
    separated: bool = True,
) -> WhereReport | None:
    """The "Who wins where" section and sentences for the ranking metric ``spec``.

    Args:
        request: the request (whether it asks where, and which facet it names).
        items: the selected items (their facets).
        scores: the run's scores (only ``spec``'s ok item-level ones are read).
        spec: the ranking metric.
        ranked: (model, overall mean) in ranking order, best first.
        n_resamples, seed: of the paired tests.
        limit: how many items the departures list shows.
        leaders: the models sharing first place overall (default: those with the top mean exactly); with more
            than one there is no single overall winner to place per facet value.
        separated: whether the paired test separates the single leader from the runner-up (the Answer's
            verdict test); when not, the leader is called the model with the highest overall mean, never "first
            overall".

    Returns:
        A :class:`WhereReport`, or None when fewer than two models are ranked or no facet has two values among the
        scored items (nothing differs by facet).
    """
    if len(ranked) < 2:
        return None
    models = [m for m, _ in ranked]
    values = _values(scores, spec.name, models)
    by_id = {i.id: i for i in items}
    tables: dict[str, list[FacetValue]] = {}
    for facet in FACETS:
        facet_of = {i: str(getattr(by_id[i], facet) or "(none)") for i in by_id}
        rows = facet_winners(
            values, facet_of, facet, higher_is_better=spec.higher_is_better, n_resamples=n_resamples, seed=seed
        )
        if rows and not (tables and any([r.value for r in rows] == [x.value for x in t] for t in tables.values())):
            tables[facet] = rows
    if not tables:
        return None
    out = WhereReport(leads=asks_where(request), tables=tables)
    top_mean = ranked[0][1]
    leaders = leaders if leaders is not None else [m for m, mean in ranked if mean == top_mean]
    winner = leaders[0] if len(leaders) == 1 else None
    unit = f"{spec.name} per item"
    parts: list = [
        Text(
            f"The first model per facet value by {spec.name} (scale {spec.scale_label}, mean per item over that "
            "value's scored items); models equal at the printed precision (2 decimals) are one group, written "
            "'a = b'; the lead is over the second group; 'separated' is the paired permutation test of the first "
            "model and the second group's model it is least separated from, on the items both scored there "
            "(two-sided, 5% level, not adjusted for the several values tested)."
        )
    ]
    for facet, rows in tables.items():
        parts.append(Heading(f"By {facet}"))
        parts.append(
            Table(
                [facet, "items", "first (mean)", "second (mean)", "lead", "separated", "order"],
                [_row(r, spec) for r in rows],
                name=facet,
            )
        )
    # the facet the request names, else the one with the most values (the finest split)
    named = [f for f in tables if FACET_WORDS.get(f) and FACET_WORDS[f].search(request or "")]
    main = named[0] if named else max(tables, key=lambda f: (len(tables[f]), -FACETS.index(f)))
    sentences: list[str] = []
    if winner is not None:
        named_values: set[str] = set()
        for facet in [main, *[f for f in tables if f != main]]:
            notfirst = [
                r
                for r in tables[facet]
                if winner in r.rank_of and winner not in r.first and r.value not in named_values
            ]
            named_values |= {r.value for r in notfirst}
            if notfirst:
                standing = (
                    "is first overall but not in"
                    if separated
                    else f"has the highest overall mean (the paired test does not separate it from {ranked[1][0]}) "
                    "but is not first in"
                )
                sentences.append(
                    f"By {facet}, {winner} {standing} "
                    + "; ".join(
                        f"{r.value} ({' and '.join(r.first)} first, {winner} {_ordinal(r.rank_of[winner])})"
                        for r in notfirst
                    )
                    + "."
                )
        second = ranked[1][0]
        # the overall second place may be shared (equal at the printed precision): the lead is over each alike
        co_second = [m for m, mean in ranked[2:] if round(mean, 2) == round(ranked[1][1], 2)]
        facet_of = {i: str(getattr(by_id[i], main) or "(none)") for i in by_id}
        shares = lead_sources(values, facet_of, main, winner, second)
        total = sum(s.diff for s in shares)
        n_shared = sum(s.n for s in shares)
        if shares and total > 0 and shares[0].diff > total:  # facets offset each other: no share over 100%
            top = shares[0]
            against = [sh for sh in shares if sh.diff < 0]
            sentences.append(
                f"{top.value} alone holds a lead of {_num(top.diff)} for {winner} over {second} (summed "
                f"{spec.name} on its {top.n} item{'s' if top.n != 1 else ''}), larger than the overall lead of "
                f"{_num(total)} on the {n_shared} items both scored: other {main} values offset it"
                + (
                    " ("
                    + ", ".join(f"{sh.value} {_num(sh.diff)}" for sh in sorted(against, key=lambda x: x.diff))
                    + ")"
                    if against
                    else ""
                )
                + "."
            )
        elif shares and total > 0 and shares[0].share is not None and shares[0].diff > 0:
            top = shares[0]
            how = "mostly" if (top.share or 0.0) > 0.5 else "most of all"
            own = ""
            if math.isinf(spec.range[1]):  # a count: how much of the winner's total that value holds
                there = sum(v for i, v in values[winner].items() if facet_of.get(i) == top.value)
                own = f"; {winner} has {_num(there)} of its {_num(sum(values[winner].values()))} there"
            sentences.append(
                f"{winner}'s lead over {second} comes {how} from {top.value}: its "
                f"{top.n} item{'s hold' if top.n != 1 else ' holds'} "
                f"{_num(top.diff)} ({top.share:.0%}) of the {_num(total)} by which {winner}'s summed {spec.name} "
                f"exceeds {second}'s on the {n_shared} items both scored{own}."
            )
        if co_second and shares and total > 0:
            sentences.append(
                f"{second} shares second place with {' and '.join(co_second)} at {_fmt(ranked[1][1])} {unit}: the "
                f"lead above is over {second} only."
            )
    # where the models differ most: the facet values with the largest gap between the first and the second group
    gapped = [(facet, r) for facet in [main, *[f for f in tables if f != main]] for r in tables[facet] if r.second]
    if gapped:

        def gap(r: FacetValue) -> float:
            means = {m: mean for m, mean, _n in r.order}
            return round(abs(means[r.first[0]] - means[r.second[0]]), 2)

        widest = max(gap(r) for _f, r in gapped)
        seen: set[str] = set()
        most = []
        for f, r in sorted(((f, r) for f, r in gapped if gap(r) == widest), key=lambda fr: len(fr[1].first) > 1):
            if r.value not in seen:  # a value named by two facets (a direction equal to its discipline) once
                seen.add(r.value)
                most.append((f, r))
        if widest > 0:
            sentences.append(
                "The models differ most in "
                + "; ".join(
                    f"{r.value} ({facet}): {_group_text(r, r.first)} against {_group_text(r, r.second)}, "
                    f"a gap of {widest:.2f} {unit}"
                    + (
                        f" (the paired test {'separates' if r.separated else 'does not separate'} them, "
                        f"p = {_p(r.test.p_value)})"
                        if r.test is not None
                        else ""
                    )
                    for facet, r in most
                )
                + "."
            )
    ties = [
        r
        for r in tables[main]
        if r.lead is not None and r.separated is not True and abs(r.lead) <= NEAR_TIE * max(abs(r.order[0][1]), 1e-12)
    ]
    for r in ties:
        test = f"the paired test does not separate them (p = {_p(r.test.p_value)})" if r.test else "no paired test"
        sentences.append(
            f"{r.value} is a near-tie: {_group_text(r, r.first, False)} against {_group_text(r, r.second, False)} "
            f"{unit}; {test}."
        )
    for r in tables[main]:
        if len(r.first) > 1:
            sentences.append(f"{r.value} is a tie: {' = '.join(r.first)} at {_fmt(r.order[0][1])} {unit}.")
    overall = dict(ranked)
    departures = order_departures(values, overall, higher_is_better=spec.higher_is_better, limit=limit)
    if departures:
        parts += [
            Heading("Items where the order differs most"),
            Text(
                "The items on which the models' order departs most from the overall order (Spearman footrule "
                "distance: the sum over models of |rank on the item - overall rank|, values equal at 2 decimals "
                "tying and sharing the mean rank; an item on which every model scores the same has no order and is "
                "left out); each links to the item in the HTML viewer (`sgieval view`)."
            ),
        ]
        lines: list[list[str]] = []
        for d in departures:
            order = sorted(d.ranks, key=lambda m: (d.ranks[m], models.index(m)))
            groups: list[list[str]] = []
            for m in order:
                if groups and d.ranks[m] == d.ranks[groups[-1][0]]:
                    groups[-1].append(m)
                else:
                    groups.append([m])
            shown = (" > " if spec.higher_is_better else " < ").join(
                f"{' = '.join(g)} {round(d.values[g[0]], 2):g}" for g in groups
            )
            lines.append([f"[{d.item_id}]({item_link(d.item_id)})", f"{d.distance:g}", shown])
        parts.append(Table(["item", "distance", "order on the item"], lines, name="departures"))
    out.blocks = parts
    out.sentences = sentences
    return out


@report_section("where", order=15)
def where_section(ctx: ReportContext) -> Section | None:
    """The registered "Who wins where" section of the ranking metric (order 15: after the ranking and coverage),
    on the scores the ranking compares (``options["ranking_scores"]``, else the ranking metric's)."""
    groups = tie_groups(ctx.ranked, ctx.pairs)
    rep = where_report(
        str(ctx.header.get("request", "") or ""),
        ctx.items,
        ctx.options.get("ranking_scores") or ctx.grouped.get(ctx.spec.name, []),
        ctx.spec,
        [(s.model, s.stats.mean) for s in ctx.ranked],
        n_resamples=int(ctx.options.get("n_resamples", 10000)),
        seed=int(ctx.options.get("seed", 0)),
        leaders=[s.model for s in groups[0]] if groups else [],
        separated=_leader_separated(groups, ctx.pairs),
    )
    return rep.section if rep is not None else None


def _leader_separated(groups: list, pairs: list[dict]) -> bool:
    """Whether the adjacent-pair test of the first and second rank groups (:func:`~sgieval.reports.pair_entry`)
    separates them at the 5% level (its ``significant``: p < 0.05), as the Answer's verdict reads it."""
    if len(groups) < 2:
        return False
    return pair_separates(
        next((p for p in pairs if (p.get("a"), p.get("b")) == (groups[0][-1].model, groups[1][0].model)), None)
    )
