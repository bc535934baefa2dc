"""All metrics: every metric of the run's list, the mean per item per target model (custom ones marked
*custom*), a corpus-level value marked so, and why a cell has no value."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from ...core import CORPUS, Score
from ..blocks import Section, Table
from ..context import ReportContext
from ..format import fmt2
from ..ranking import not_applicable
from . import section


def _cell_without_value(mine: list[Score]) -> str:
    """An "All metrics" cell without an ok value: "n/a", "not run", "not applicable (N)" or "all N failed (...)"."""
    if not mine:
        return "n/a"
    if all(s.status == "not_run" and not not_applicable(s) for s in mine):
        return "not run"
    if all(not_applicable(s) for s in mine):
        return f"not applicable ({len(mine)})"
    failed = [s for s in mine if not not_applicable(s)]
    by = Counter(s.status for s in failed)
    what = next(iter(by)) if len(by) == 1 else ", ".join(f"{k} {v}" for k, v in sorted(by.items()))
    na = len(mine) - len(failed)
    return f"all {len(failed)} failed ({what})" + (f"; {na} not applicable" if na else "")


@section("metrics", title="All metrics", after="sgi")
def metrics_section(ctx: ReportContext) -> Section:
    """One row per metric of the run's list, never dropped: the mean per item of each target model's ok scores,
    "x (corpus)" for a corpus-level value, else :func:`_cell_without_value`."""
    scores, models, custom = ctx.scores, ctx.model_order, ctx.custom
    rows = []
    by_pair: defaultdict[tuple[str, str], list[Score]] = defaultdict(list)  # one pass over the scores
    for s in scores:
        by_pair[(s.model, s.metric)].append(s)
    for spec in ctx.specs:
        row: list[Any] = [spec.name + (" *custom*" if spec.name in custom else ""), spec.kind, spec.scale_label]
        for m in models:
            mine = by_pair.get((m, spec.name), [])
            item_vals = [s.value for s in mine if s.ok and s.value is not None and s.item_id != CORPUS]
            corpus = [s for s in mine if s.ok and s.item_id == CORPUS]
            if item_vals:
                row.append(fmt2(sum(item_vals) / len(item_vals)))
            elif corpus:
                row.append(fmt2(corpus[0].value) + " (corpus)")
            else:
                row.append(_cell_without_value(mine))
        rows.append(row)
    return Section(
        "metrics",
        "All metrics (mean per item; custom metrics marked *custom*)",
        [Table(["metric", "kind", "scale"] + models, rows, name="metrics")],
    )
