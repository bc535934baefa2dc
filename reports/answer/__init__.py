"""The report's Answer: a short list of full sentences computed from the same formatted numbers as the tables, one
module per part, merged here (:func:`compose_answer`) with what the report's sections add."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..blocks import Section
from ..context import ReportContext
from .caveats import fact_caveats, ranking_caveats
from .criteria import why
from .disagree import where_lead
from .how_sure import how_sure, order_note, reliability_sentences
from .more_items import items_needed_sentence
from .kinds import compared, how_much, yes_no
from .verdict import verdict_sentence
from .where import metric_disagreement

__all__ = ["Answer", "compose_answer"]


@dataclass
class Answer:
    """The report's Answer as a short list of full sentences: ``verdict`` (the fixed first sentence), ``summary`` (an
    agent's text that passed the fact check), ``how_sure``, ``where``, ``more_items`` (how many more items would
    separate the top two), ``caveats``, ``stamp`` (what was checked in an agent's text); ``where_first`` puts "Where it
    differs" first; ``lead`` is the first item of a question that is not a ranking (:func:`_kind_lead`)."""

    verdict: str
    summary: str = ""
    summary_by: str = ""
    how_sure: list[str] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    more_items: list[str] = field(default_factory=list)
    stamp: str = ""
    where_first: bool = False
    lead: str = ""
    lead_label: str = ""

    def markdown(self) -> str:
        """The Answer as a Markdown list (one item per part with sentences), then the stamp in italics.

        Returns:
            The Markdown text.
        """
        lines = [f"- **{self.lead_label}:** {self.lead}" if self.lead_label else f"- {self.lead}"] if self.lead else []
        if self.where_first and self.where:
            lines.append("- **Where it differs:** " + " ".join(self.where))
        lines.append(f"- **Verdict:** {self.verdict}")
        parts = [("How sure", self.how_sure)] + ([] if self.where_first else [("Where it differs", self.where)])
        if self.summary:
            lines.append(f"- **Summary** ({self.summary_by}): {self.summary}")
        for label, part in parts:
            if part:
                lines.append(f"- **{label}:** " + " ".join(part))
        if self.more_items:
            lines.append("- **More items:** " + " ".join(self.more_items))
        if len(self.caveats) == 1:
            lines.append(f"- **Caveats:** {self.caveats[0]}")
        elif self.caveats:
            lines.append("- **Caveats:**")
            lines += [f"  - {c}" for c in self.caveats]
        text = "\n".join(lines)
        return text + (f"\n\n*({self.stamp})*" if self.stamp else "")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``report.json``, the viewer).

        Returns:
            The dict.
        """
        d = asdict(self)
        return d if self.lead else {k: v for k, v in d.items() if k not in ("lead", "lead_label")}


def compose_answer(ctx: ReportContext, sections: list[Section], variants: list[str], sgi_missing: list[str]) -> Answer:
    """The Answer of a report, each part's sentences followed by what the sections add to it.

    Args:
        ctx: the report context, its statistics set.
        sections: the report's sections, in order.
        variants: the sentences on variants of the ranking metric that order the models differently.
        sgi_missing: why an SGI-Score is unavailable (the last caveats).

    Returns:
        The Answer (no summary yet).
    """
    spec, groups, pairs, stats = ctx.spec, ctx.groups, ctx.pairs, ctx.stats
    one = ctx.focus is not None or len(stats) == 1  # the Answer is about one model
    verdict = verdict_sentence(
        ctx.request,
        stats,
        spec,
        len(ctx.items),
        ctx.header.get("scope", ""),
        groups,
        ctx.coverage,
        ctx.focus,
        pairs,
        ctx.leader_tests,
    )
    answer = Answer(verdict, how_sure=[] if one else how_sure(stats, groups, pairs, ctx.leader_tests, spec.name))
    if not one:
        answer.how_sure += [s for s in [order_note(pairs)] if s]
        answer.more_items += [s for s in [items_needed_sentence(ctx)] if s]
    answer.how_sure += [s for s in [reliability_sentences(ctx.reliability, spec.name).strip()] if s]
    for sec in sections:
        answer.how_sure += sec.answer.get("how_sure", [])
        answer.where += sec.answer.get("where", [])
        answer.caveats += sec.answer.get("caveats", [])
        answer.where_first = answer.where_first or (sec.leads and bool(sec.answer.get("where")))
    names = [s.model for s in ctx.ranked]
    leaders = [s.model for s in groups[0]] if groups else []
    answer.where += metric_disagreement(ctx.scores, ctx.specs, spec, names, leaders, ctx.focus)
    answer.where += variants
    kind = str(ctx.header.get("question_kind", "") or ("where" if answer.where_first else ""))
    if len(ctx.ranked) >= 2 and ctx.pool is not None:
        if kind == "where":  # the where sentences come first, each its own (viewer links)
            answer.where += where_lead(ctx)
            answer.where_first = True
        else:
            answer.lead_label, answer.lead = _kind_lead(ctx, kind)
    facts = fact_caveats(
        ctx.scores,
        spec,
        names,
        leaders,
        judges=ctx.judges,
        allow_self_judge=ctx.allow_self_judge,
        stand_in=ctx.stand_in,
        focus=ctx.focus,
    )
    answer.caveats = ranking_caveats(stats, groups, spec, ctx.coverage) + facts + answer.caveats + sgi_missing
    return answer


def _kind_lead(ctx: ReportContext, kind: str) -> tuple[str, str]:
    """(label, text) of the Answer's first item for a ``yes_no``, ``how_much`` or ``why`` question; ("", "") else."""
    label, build = {"yes_no": ("", yes_no), "how_much": ("How much", how_much), "why": ("Why", why)}.get(
        kind, ("", None)
    )
    return (label, build(ctx, *compared(ctx))) if build is not None else ("", "")
