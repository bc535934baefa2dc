"""reports: build the report from records and statistics: its data model, tables, figures (matplotlib), Markdown rendering (Jinja2).

What other folders may use (DESIGN.md "Adding things": each folder's ``__init__`` lists it); the names load
lazily from their modules on first use, so importing one module of this folder does not import the others.
"""

from __future__ import annotations

from ..core import lazy_exports

_PUBLIC: dict[str, str] = {
    "ModelStat": "build",
    "ReportDraft": "build",
    "SgiRow": "build",
    "assemble": "build",
    "ci_overlap": "build",
    "count_phrase": "build",
    "criterion_scores": "build",
    "fmt": "build",
    "has_ci": "build",
    "item_values": "build",
    "not_applicable": "build",
    "order_stats": "build",
    "pair_entry": "build",
    "pair_separates": "build",
    "rubric_breakdown": "build",
    "write_report_files": "build",
    "Answer": "answer",
    "Figure": "sections",
    "Heading": "sections",
    "ReportContext": "sections",
    "Section": "sections",
    "Table": "sections",
    "Text": "sections",
    "register_section": "sections",
    "registered_sections": "sections",
    "report_section": "sections",
    "unregister_section": "sections",
    "heatmap": "charts",
    "ranking_chart": "charts",
    "markdown_table": "render",
    "export_run": "export",
    "write_viewer": "viewer",
    "render_report": "render",
    "by_metric": "answer",
    "dominant_item": "answer",
    "judgement_sources": "answer",
    "metric_tops": "answer",
    "printed_tie_groups": "answer",
    "self_preference": "answer",
    "sensitivity_sentence": "answer",
    "Coverage": "build",
    "ci_text": "build",
    "coverage": "build",
    "coverage_sentence": "build",
    "fmt2": "build",
    "fmt_p": "build",
    "fmt_total": "build",
    "no_variation": "build",
    "order_with_ties": "build",
    "rank_labels": "build",
    "tie_groups": "build",
    "unscored_reason": "build",
    "pyplot": "charts",
    "Change": "compare",
    "Comparison": "compare",
    "RankRow": "compare",
    "RunSide": "compare",
    "labels_sections": "labels",
    "warm_templates": "render",
    "csv_cell": "export",
    "COMPARE_PREFIX": "runs",
    "additions_text": "runs",
    "home_files": "runs",
    "list_comparisons": "runs",
    "list_runs": "runs",
    "read_run": "runs",
    "write_runs_page": "runs",
    "ViewerServer": "viewer",
}
"""Public name -> the module of this folder that defines it."""

__all__ = sorted(_PUBLIC)


__getattr__ = lazy_exports(__name__, _PUBLIC)
