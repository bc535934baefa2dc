"""The ranking metric broken down by a facet of the items (discipline, task): the shared table of the "By
discipline" and "By task" sections."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

from .blocks import Section, Table
from .context import ReportContext
from .format import fmt, fmt2


def facet_section(ctx: ReportContext, facet: str) -> Section | None:
    """The "By <facet>" section of the ranking metric (None when the scored items share one value).

    Args:
        ctx: the report context.
        facet: an item facet (``discipline``, ``task``).

    Returns:
        The section, or None.
    """
    spec, items, models = ctx.spec, ctx.by_id, ctx.model_order
    metric, show_total = spec.name, math.isinf(spec.range[1])
    groups = sorted({getattr(items[i], facet) for i in {s.item_id for s in ctx.scores} if i in items})
    if len(groups) < 2:  # a one-row breakdown repeats the ranking
        return None
    cells: defaultdict[tuple[str, Any], list[float]] = defaultdict(list)  # (model, facet value) -> values
    for s in ctx.grouped.get(metric, []):
        if s.ok and s.value is not None and s.item_id in items:
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
    table = Table([facet, "items"] + [f"{m}: {label}" for m in models], rows, name=facet)
    return Section(facet, f"By {facet}: {spec.name}", [table])
