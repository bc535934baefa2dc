"""Coverage: when the models' scored items of the ranking metric differ, each model's items and its mean on the
shared items, on its own items, and with a failed or missing score counted as the metric's worst value."""

from __future__ import annotations

from typing import Any

from ..blocks import Section, Table, Text
from ..context import ReportContext
from ..format import count_phrase, fmt, fmt2
from . import section


@section("coverage", title="Coverage", after="settled")
def coverage_section(ctx: ReportContext) -> Section | None:
    """When the models' scored items of the ranking metric differ: each model's items and mean on the shared items, on
    its own items, and with a failed or missing score counted as the metric's worst value; None when they agree."""
    cov = ctx.coverage
    if cov is None or not cov.differs:
        return None
    spec = ctx.spec
    n_wrong = next(iter(cov.wrong.values()))[0] if cov.wrong else 0
    headers = [
        "target model",
        "scored items",
        f"mean on the {count_phrase(len(cov.shared))} all scored",
        "mean on its own items",
    ]
    if cov.wrong:
        headers.append(f"mean over {count_phrase(n_wrong)} attempted, failed or missing as {fmt(cov.worst)}")
    rows = []
    for m, (n, mean) in cov.own.items():
        row: list[Any] = [m, n, fmt2(cov.shared_means[m]) if cov.shared_means else "n/a", fmt2(mean)]
        if cov.wrong:
            row.append(fmt2(cov.wrong[m][1]))
        rows.append(row)
    lead = (
        f"The models have valid {spec.name} scores on different items ({cov.selected} selected); the ranking "
        f"compares them on the {count_phrase(len(cov.shared))} all of them scored."
        if cov.shared
        else f"The models have valid {spec.name} scores on different items ({cov.selected} selected) and share "
        "none: the ranking's means are over each model's own items."
    )
    return Section("coverage", f"Coverage: {spec.name}", [Text(lead), Table(headers, rows, name="coverage")])
