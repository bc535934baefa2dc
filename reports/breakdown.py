"""The ranking metric broken down by a facet of the items (discipline, task): the shared table of the "By
discipline" and "By task" sections."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

from ..core import Item, Score
from .blocks import Section, Table
from .context import ReportContext
from .format import fmt, fmt2


def facet_table(
    items: dict[str, Item],
    scores: list[Score],
    metric: str,
    models: list[str],
    facet: str,
    show_total: bool,
    scored_ids: set[str] | None = None,
) -> Table | None:
    """The breakdown table of ``metric`` by ``facet`` (discipline, task): one row per facet value of the
    scored items (``scored_ids``: the ids of every score of the run, any metric; default the ids in
    ``scores``), the mean (or total and mean) of each model's ok item-level values there; None when the
    items share one facet value.  ``scores`` may hold only ``metric``'s scores."""
    ids = scored_ids if scored_ids is not None else {s.item_id for s in scores}
    groups = sorted({getattr(items[i], facet) for i in ids if i in items})
    if len(groups) < 2:  # a one-row breakdown repeats the ranking
        return None
    cells: defaultdict[tuple[str, Any], list[float]] = defaultdict(list)  # (model, facet value) -> values
    for s in scores:
        if s.metric == metric and s.ok and s.value is not None and s.item_id in items:
            cells[(s.model, getattr(items[s.item_id], facet))].append(s.value)
    per_group = Counter(getattr(it, facet) for it in items.values())
    rows = []
    for g in groups:
        row: list[Any] = [g or "(none)", per_group[g]]
        for m in models:
            vals = cells.get((m, g))
            if not vals:
                row.append("n/a")
            elif show_total:
                row.append(f"{fmt(sum(vals))} ({fmt2(sum(vals) / len(vals))})")
            else:
                row.append(fmt2(sum(vals) / len(vals)))
        rows.append(row)
    label = "total (mean)" if show_total else "mean"
    return Table([facet, "items"] + [f"{m}: {label}" for m in models], rows, name=facet)


def facet_section(ctx: ReportContext, facet: str) -> Section | None:
    """The "By <facet>" section of the ranking metric (None when the scored items share one value).

    Args:
        ctx: the report context.
        facet: an item facet (``discipline``, ``task``).

    Returns:
        The section, or None.
    """
    spec = ctx.spec
    table = facet_table(
        ctx.by_id,
        ctx.grouped.get(spec.name, []),
        spec.name,
        ctx.model_order,
        facet,
        math.isinf(spec.range[1]),
        {s.item_id for s in ctx.scores},
    )
    return Section(facet, f"By {facet}: {spec.name}", [table]) if table is not None else None
