"""SGI-Score per target model (METRICS.md A.6), and why it is unavailable for a model."""

from __future__ import annotations

from ..blocks import Section, Table
from ..context import ReportContext
from ..format import fmt2
from ..ranking import SgiRow
from . import section


def sgi_table(rows: list[SgiRow] | None) -> tuple[Table | None, list[str]]:
    """(the SGI-Score table, or None without SGI-Bench items; one "SGI-Score not available" line per group of models
    with the same missing terms) (METRICS.md A.6)."""
    if rows is None:
        return None, []
    why: dict[str, list[str]] = {}
    out = []
    for r in rows:
        out.append([r.model, fmt2(r.sgi_score) if r.sgi_score is not None else "missing tasks", r.per_task])
        if r.sgi_score is None:
            why.setdefault(r.missing, []).append(r.model)
    table = Table(["target model", "SGI-Score (0-100)", "per task (0-100)"], out, name="sgi")
    return table, [
        f"SGI-Score not available for {', '.join(ms)}: missing {reason}; an SGI-Score needs an ok "
        "score on all five SGI-Bench tasks."
        for reason, ms in why.items()
    ]


@section("sgi", title="SGI-Score", after="where")
def sgi_section(ctx: ReportContext) -> Section | None:
    """SGI-Score per target model (METRICS.md A.6); None without SGI-Bench items."""
    table, _ = sgi_table(ctx.sgi)
    return Section("sgi", "SGI-Score", [table]) if table is not None else None
