"""reports: the report's data model, sections, Answer, tables, figures, Markdown rendering, the HTML viewer, exports
and run listings; the public names below load lazily from their modules on first use."""

from __future__ import annotations

from ..core import lazy_exports

_PUBLIC: dict[str, str] = {
    name: module
    for module, names in {
        "ranking": (
            "ModelStat SgiRow Coverage by_metric ci_overlap ci_text coverage has_ci item_values "
            "no_variation not_applicable order_stats order_with_ties pair_entry pair_separates "
            "printed_tie_groups rank_labels tie_groups unscored_reason"
        ),
        "format": "count_phrase fmt fmt2 fmt_p fmt_total",
        "blocks": "Block Figure Heading Section Table Text markdown_table",
        "context": "RecheckResult ReportContext Statistics",
        "sections": "SectionBuilder build_sections builders section",
        "sections.criteria": "criterion_scores rubric_breakdown",
        "sections.labels": "labels_sections",
        "build": "ReportDraft assemble write_report_files",
        "answer": "Answer compose_answer",
        "answer.verdict": "separated_order separated_winner verdict_sentence",
        "answer.summary": (
            "CHECKED NARRATIVE_SYSTEM header_facts names_supported numbers_supported order_claims_supported"
        ),
        "answer.where": "dominant_item metric_tops WHERE_REQUEST",
        "answer.kinds": "named_models",
        "answer.caveats": "sensitivity_sentence",
        "failures": "flag_rows",
        "judges": "judge_summary judgement_sources self_preference",
        "charts": "heatmap ranking_chart pyplot",
        "render": "render_report warm_templates",
        "export": "export_run csv_cell",
        "viewer": "write_viewer",
        "serve": "ViewerServer",
        "compare": "Change Comparison RankRow RunSide",
        "runs": "COMPARE_PREFIX additions_text home_files list_comparisons list_runs read_run write_runs_page",
    }.items()
    for name in names.split()
}

__all__ = sorted(_PUBLIC)


__getattr__ = lazy_exports(__name__, _PUBLIC)
