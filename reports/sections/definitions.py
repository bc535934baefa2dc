"""Metric definitions: which definition each figure of the report uses, how a model's figure is formed and
where the definition comes from."""

from __future__ import annotations

from ...core import CORPUS
from ..blocks import Section, Table, Text
from ..context import ReportContext
from . import section


@section("definitions", title="Metric definitions", after="recheck")
def definitions_builder(ctx: ReportContext) -> Section | None:
    """The "Metric definitions" section: every scored metric's definition, how a model's figure is formed (per
    item or corpus level) and its source; None when no metric has a score."""
    specs, scores = ctx.specs, ctx.scores
    corpus = {s.metric for s in scores if s.item_id == CORPUS}
    used = {s.metric for s in scores}
    rows = []
    for sp in specs:
        if sp.name not in used:
            continue
        level = "corpus level (one value per model)" if sp.name in corpus else "per item (mean and total over items)"
        name = sp.name + (f" (variant of {sp.variant_of})" if sp.variant_of else "")
        rows.append([name, level, sp.description, sp.source or "n/a"])
    if not rows:
        return None
    return Section(
        "definitions",
        "Metric definitions",
        [
            Text("The definition each figure in this report uses:"),
            Table(["metric", "figure per model", "definition", "source"], rows, name="definitions"),
        ],
    )
