"""The ranking: the ranking metric's mean, 95% CI, total and n per target model with shared ranks ("2=", METRICS.md
D.16), unscored models with their reason, a bar chart, and the paired permutation test of every adjacent pair."""

from __future__ import annotations

from typing import Any

from ..blocks import Section, Table, Text
from ..charts import ranking_chart
from ..context import ReportContext
from ..ranking import RANKING_HEADERS, RANKING_KEYS, ranking_rows
from . import section

PAIR_HEADERS = [
    "adjacent ranks (paired permutation test)",
    "shared items",
    "mean difference (upper minus lower)",
    "95% CI of difference",
    "p",
    "at the 5% level",
]


@section("ranking", title="Ranking")
def ranking_section(ctx: ReportContext) -> Section:
    """The ranking of the ranking metric: table, bar chart with CIs, paired tests of adjacent ranks."""
    spec = ctx.spec
    rows = ranking_rows(ctx.stats, spec, ctx.pairs)
    sec = Section(
        "ranking",
        f"Ranking by {spec.name} (scale {spec.scale_label}, {'higher' if spec.higher_is_better else 'lower'} is better)",
        [Table(RANKING_HEADERS, [[r[k] for k in RANKING_KEYS] for r in rows], name="ranking")],
    )
    ranked = ctx.ranked
    if ranked:
        sec.blocks.append(
            ctx.figure(
                "figures/ranking.png",
                "ranking",
                ranking_chart,
                [s.model for s in ranked],
                [s.stats.mean for s in ranked],
                [s.stats.ci_low for s in ranked],
                [s.stats.ci_high for s in ranked],
                metric=spec.name,
                scale=spec.scale_label,
            )
        )
    if ctx.pairs:
        pair_rows: list[list[Any]] = []
        for d in ctx.pairs:
            pair = f"{d['a']} vs {d['b']}"
            if d["p"] is None:
                pair_rows.append([pair, d["n"], "n/a", "n/a", "n/a", "not tested (needs 2 shared items)"])
            else:
                verdict = "significant" if d["significant"] else "not significant"
                pair_rows.append([pair, d["n"], d["mean_diff"], d["ci"], d["p_value"], verdict])
        sec.blocks += [
            Text(
                f"Paired permutation tests of adjacent ranks on {spec.name} (items both target models scored; "
                "two-sided; not adjusted for multiple comparisons):"
            ),
            Table(PAIR_HEADERS, pair_rows, name="pairs"),
        ]
    return sec
