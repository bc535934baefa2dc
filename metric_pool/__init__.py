"""metric_pool: every metric (objective, judge, rubric), the metric registry and the aggregations (CIs, paired tests,
SGI-Score); the names other folders may use, loaded lazily from their modules."""

from __future__ import annotations

from ..core import lazy_exports

_PUBLIC: dict[str, str] = {
    name: module
    for module, names in {
        "stats": "HedgedCapitalCS holm items_to_separate METHOD paired_test PairedResult SettleRule summarize Summary",
        "aidanbench_protocol": "run_generation",
        "base": "CORPUS FunctionMetric Metric MetricResult ScoringContext",
        "embeddings": "embedding_counts get_embedder",
        "judge": "as_data ask_judge DATA_NOTICE JudgeReply parse_json_object",
        "reliability": "reliability reliability_rows with_added_judges",
        "registry": "ALL applicable entries key_of metric MetricEntry Scoped unregister_scope",
        "rubric": "RubricMetric tool_loop",
        "rubrics": (
            "find_rubric list_rubrics load_rubric match_texts MATCH_THRESHOLD rubric_origin save_rubric "
            "semantic_scores slug STARTER_DIR user_rubric_dir"
        ),
        "sgi.sgi_score": "sgi_score",
        "differences": "facet_winners FACETS FacetValue lead_sources order_departures",
        "labels": "label_estimates sample_units validate_labels",
        "generic": "NumericMatch ReferenceMatch",
        "rubric_loop": "compare_agreement disagreements labelled_units rescore_units scored_by",
    }.items()
    for name in names.split()
}

__all__ = sorted(_PUBLIC)


__getattr__ = lazy_exports(__name__, _PUBLIC)
