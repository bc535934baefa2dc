""" "Where the models disagree", in every report ranking two or more models: the where sentences of
:mod:`..answer.disagree` and the per-value paired tests of the two models asked about, Holm-adjusted."""

from __future__ import annotations

from ..answer.disagree import facet_tests, where_lead
from ..answer.kinds import question_pair
from ..blocks import Section, Table, Text
from ..context import ReportContext
from ..format import fmt2, fmt_p
from . import section


@section("disagreement", title="Where the models disagree", before="sgi")
def disagreement_section(ctx: ReportContext) -> Section | None:
    """The where sentences and the per-value paired tests with Holm-adjusted p-values (Holm 1979 step-down); None with
    fewer than two ranked models."""
    pair = question_pair(ctx)
    sentences = where_lead(ctx)
    if pair is None or ctx.pool is None or not sentences:
        return None
    a, b = pair
    tests = facet_tests(ctx, a, b)
    blocks: list = [Text(" ".join(sentences))]
    if tests:
        adjusted = ctx.pool.holm([r.p_value for _f, _v, r in tests])
        rows = [
            [f, v, str(r.n), fmt2(r.mean_a), fmt2(r.mean_b), fmt2(r.mean_diff), fmt_p(r.p_value), fmt_p(p)]
            for (f, v, r), p in zip(tests, adjusted)
        ]
        head = ["facet", "value", "items", f"{a} mean", f"{b} mean", "difference", "p", "Holm-adjusted p"]
        blocks.append(Table(head, rows, name="facet_tests"))
    return Section("disagreement", "Where the models disagree", blocks)
