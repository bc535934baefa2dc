"""Build the report: every section, the limitations and the failures (:func:`assemble`), then ``report.md`` and
``report.json`` with the Answer (:func:`write_report_files`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import REPORT_PENDING, MetricSpec, atomic_write_text, escape_control_chars, open_append_in, redact_secrets
from .blocks import Section
from .context import ReportContext
from .failures import failures, flag_rows
from .judges import judge_summary, judgement_sources
from .limitations import limitations
from .ranking import ModelStat, ranking_rows
from .render import render_report, write_report_json
from .sections import build_sections
from .sections.sgi import sgi_table


@dataclass
class ReportDraft:
    """Everything of the report but its narrative: ``data`` (the template's keys but ``narrative``), ``top`` (paired
    test of the top two, or None), ``tables_text`` (every section's text: what a narrative may cite), ``sgi_missing``
    (why an SGI-Score is unavailable)."""

    data: dict[str, Any]
    stats: list[ModelStat]
    spec: MetricSpec
    top: dict[str, Any] | None
    tables_text: str
    sgi_missing: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)

    @property
    def limitations(self) -> list[str]:
        """The Limitations section's lines (append to add one)."""
        return self.data["limitations"]


def assemble(ctx: ReportContext) -> ReportDraft:
    """Every part of the report but the Answer: the sections (drawing their figures), the limitations and the failures.

    Args:
        ctx: the report context, its statistics set.

    Returns:
        The ReportDraft.
    """
    spec, scores, pairs = ctx.spec, ctx.scores, ctx.pairs
    _, sgi_missing = sgi_table(ctx.sgi)
    limits = limitations(ctx, sgi_missing)
    sections = build_sections(ctx)
    limits += ctx.notes
    top = pairs[0] if pairs else None
    comparison = top if top and top["p"] is not None else None
    tables_text = "\n".join(
        [s.text() for s in sections]
        + (
            [f"n = {comparison['n']}, mean difference {comparison['mean_diff']}, p = {comparison['p_value']}"]
            if comparison
            else []
        )
    )
    chart = next(
        (f.path for s in sections if s.key == "ranking" for f in s.figures if f.path == "figures/ranking.png"), None
    )
    header = ctx.header
    sources = judgement_sources(scores, ctx.models)
    if sources:  # who decided acceptance of open-creativity answers, also for replays
        judged = any(s.ok and s.judge != "objective" for s in scores)
        header = {**header, "judges": judge_summary(sources, list(ctx.judges), judged)}
    data = {
        "header": header,
        "ranking": {
            "metric": spec.name,
            "scale": spec.scale_label,
            "higher_is_better": spec.higher_is_better,
            "rows": ranking_rows(ctx.stats, spec, pairs),
            "chart": chart,
        },
        "comparison": comparison,
        "sections": [s.to_dict() for s in sections],
        "limitations": limits,
        "failures": {**failures(ctx.responses, scores), "flagged": flag_rows(scores, ctx.models)},
        "warnings": ctx.warnings or [],
        # for the HTML viewer (report.json; the Markdown template does not use them)
        "metric_specs": [
            {"name": sp.name, "scale": sp.scale_label, "hib": sp.higher_is_better, "kind": sp.kind} for sp in ctx.specs
        ],
    }
    return ReportDraft(data, ctx.stats, spec, top, tables_text, sgi_missing, sections)


def write_report_files(run_dir: Path, draft: ReportDraft, narrative: str) -> Path:
    """Render ``draft`` with ``narrative`` to ``run_dir/report.md``, and its data to ``report.json`` with
    ``ranking["values"]`` (the numbers behind the ranking rows).  Each file is written whole with keys inside URLs
    masked; ``REPORT_PENDING`` marks the run incomplete until both are in place.

    Args:
        run_dir: the run folder.
        draft: the assembled report (:func:`assemble`).
        narrative: the Answer section's text.

    Returns:
        The path of ``report.md``.

    Raises:
        InputError: a full disk (the old report stays).
    """
    out = run_dir / "report.md"
    pending = run_dir / REPORT_PENDING
    open_append_in(run_dir, pending).close()  # touched; no link followed in the run folder
    data = {**draft.data, "narrative": narrative}
    # terminal escapes from a server or a program (an error reason, a reply) are shown as \xNN, never written raw
    atomic_write_text(out, escape_control_chars(redact_secrets(render_report(data))), root=run_dir)
    values = [
        {
            "model": s.model,
            "mean": s.summary.mean,
            "ci_low": s.summary.ci_low,
            "ci_high": s.summary.ci_high,
            "total": s.summary.total,
            "n": s.summary.n,
        }
        for s in draft.stats
        if s.summary is not None
    ]
    write_report_json(run_dir / "report.json", {**data, "ranking": {**data["ranking"], "values": values}}, root=run_dir)
    pending.unlink(missing_ok=True)
    return out
