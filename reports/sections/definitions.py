"""Metric definitions: which definition each figure of the report uses, how a model's figure is formed and
where the definition comes from."""

from __future__ import annotations

from ...core import CORPUS, MetricSpec, Score
from ..blocks import Section, Table, Text
from ..context import ReportContext
from . import section


def definitions_section(specs: list[MetricSpec], scores: list[Score]) -> Section | None:
    """ "Metric definitions" section: for every metric of ``specs`` with a score in this run, which definition
    its figures use (the spec's description), how a model's figure is formed (per item: the mean and total of
    the per-item values; corpus level: one value per model, e.g. a mean pooled over answers) and its source
    (paper, spec section or upstream file: AidanBench's README S(q) or plot.py count, SciAidanBench's accepted
    or published count).  None when no metric has a score."""
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


@section("definitions", title="Metric definitions", after="recheck")
def definitions_builder(ctx: ReportContext) -> Section | None:
    """The "Metric definitions" section (None when no metric has a score)."""
    return definitions_section(ctx.specs, ctx.scores)
