"""Who wins where: from the ranking metric's ok item-level scores, one table per facet with two or more values (the
first model per value, its lead over the second and whether the paired test separates them), and the items on
which the models' order departs most from the overall order; its sentences go to the Answer (:mod:`..answer.where`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...core import Item, MetricSpec, Score
from ..answer.where import WHERE_REQUEST, facet_sentences, group_text, item_link, main_facet
from ..blocks import Block, Heading, Section, Table, Text
from ..context import ReportContext, Statistics
from ..format import fmt2, fmt_p
from ..ranking import item_values, pair_separates, runs_of_equal
from . import section

__all__ = ["WhereReport", "item_link", "where_report"]


@dataclass
class WhereReport:
    """The section's blocks and the Answer's sentences; ``leads``: the request asked where the models differ."""

    blocks: list[Block] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    leads: bool = False

    @property
    def section(self) -> Section:
        """The "Who wins where" report section, its sentences under the Answer's "where" part."""
        return Section(
            "where", "Who wins where", list(self.blocks), answer={"where": list(self.sentences)}, leads=self.leads
        )


def _row(r: Any, spec: MetricSpec) -> list[str]:
    first = group_text(r, r.first)
    second = group_text(r, r.second) if r.second else "-"
    if r.lead is None:
        lead = "tie" if len(r.first) > 1 else "-"
    else:
        lead = f"{r.lead:+.2f}" if spec.higher_is_better else f"{-r.lead:+.2f} lower"
    if r.test is None:
        test = "no test (fewer than 2 shared items)" if r.lead is not None else "-"
    else:
        test = f"{'yes' if r.separated else 'no'} (p = {fmt_p(r.test.p_value)}, {r.test.n} items)"
    means = {m: mean for m, mean, _n in r.order}
    order = (" > " if spec.higher_is_better else " < ").join(f"{' = '.join(g)} {fmt2(means[g[0]])}" for g in r.groups)
    return [r.value, str(r.n_items), first, second, lead, test, order]


INTRO = (
    "The first model per facet value by {metric} (scale {scale}, mean per item over that value's scored items); "
    "models equal at the printed precision (2 decimals) are one group, written 'a = b'; the lead is over the second "
    "group; 'separated' is the paired permutation test of the first model and the second group's model it is least "
    "separated from, on the items both scored there (two-sided, 5% level, not adjusted for the several values "
    "tested)."
)

DEPARTURES = (
    "The items on which the models' order departs most from the overall order (Spearman footrule distance: the sum "
    "over models of |rank on the item - overall rank|, values equal at 2 decimals tying and sharing the mean rank; an "
    "item on which every model scores the same has no order and is left out); each links to the item in the HTML "
    "viewer (`sgieval view`)."
)


def where_report(
    request: str,
    items: list[Item],
    scores: list[Score],
    spec: MetricSpec,
    ranked: list[tuple[str, float]],
    *,
    pool: Statistics,
    n_resamples: int = 10000,
    seed: int = 0,
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
        pool: the metric pool's facet statistics (``facet_winners``, ``lead_sources``, ``order_departures``).
        n_resamples: resamples of the paired tests.
        seed: their seed.
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
    values = {m: v for m in models if (v := item_values(scores, m, spec.name))}
    by_id = {i.id: i for i in items}
    facet_of = {f: {i: str(getattr(it, f) or "(none)") for i, it in by_id.items()} for f in pool.facets}
    tables: dict[str, list[Any]] = {}
    for facet in pool.facets:
        rows = pool.facet_winners(
            values, facet_of[facet], facet, higher_is_better=spec.higher_is_better, n_resamples=n_resamples, seed=seed
        )
        if rows and not (tables and any([r.value for r in rows] == [x.value for x in t] for t in tables.values())):
            tables[facet] = rows
    if not tables:
        return None
    blocks: list[Block] = [Text(INTRO.format(metric=spec.name, scale=spec.scale_label))]
    for facet, rows in tables.items():
        blocks.append(Heading(f"By {facet}"))
        headers = [facet, "items", "first (mean)", "second (mean)", "lead", "separated", "order"]
        blocks.append(Table(headers, [_row(r, spec) for r in rows], name=facet))
    main = main_facet(tables, request, list(pool.facets))
    leaders = leaders if leaders is not None else [m for m, mean in ranked if mean == ranked[0][1]]
    winner = leaders[0] if len(leaders) == 1 else None
    lead = pool.lead_sources(values, facet_of[main], main, winner, ranked[1][0]) if winner is not None else []
    sentences = facet_sentences(tables, main, spec, ranked, winner, separated, lead, values, facet_of[main])
    departures = pool.order_departures(values, dict(ranked), higher_is_better=spec.higher_is_better, limit=10)
    if departures:
        blocks += [
            Heading("Items where the order differs most"),
            Text(DEPARTURES),
            _departures(departures, models, spec),
        ]
    return WhereReport(blocks=blocks, sentences=sentences, leads=bool(WHERE_REQUEST.search(request or "")))


def _departures(departures: list[Any], models: list[str], spec: MetricSpec) -> Table:
    lines: list[list[str]] = []
    for d in departures:
        groups = runs_of_equal(sorted(d.ranks, key=lambda m: (d.ranks[m], models.index(m))), d.ranks.__getitem__)
        shown = (" > " if spec.higher_is_better else " < ").join(
            f"{' = '.join(g)} {round(d.values[g[0]], 2):g}" for g in groups
        )
        lines.append([f"[{d.item_id}]({item_link(d.item_id)})", f"{d.distance:g}", shown])
    return Table(["item", "distance", "order on the item"], lines, name="departures")


@section("where", title="Who wins where", after="coverage")
def where_section(ctx: ReportContext) -> Section | None:
    """The "Who wins where" section of the ranking metric, on the scores the ranking compares."""
    if ctx.pool is None:
        return None
    groups = ctx.groups
    top2 = (groups[0][-1].model, groups[1][0].model) if len(groups) > 1 else None
    top_pair = next((p for p in ctx.pairs if (p.get("a"), p.get("b")) == top2), None) if top2 else None
    rep = where_report(
        ctx.request,
        ctx.items,
        ctx.ranking_scores or ctx.grouped.get(ctx.spec.name, []),
        ctx.spec,
        [(s.model, s.stats.mean) for s in ctx.ranked],
        pool=ctx.pool,
        n_resamples=ctx.n_resamples,
        seed=ctx.seed,
        leaders=[s.model for s in groups[0]] if groups else [],
        separated=pair_separates(top_pair),
    )
    return rep.section if rep is not None else None
