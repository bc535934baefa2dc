"""metric_pool: every metric (objective, judge, rubric), the predefined-metric registry and the aggregations (CIs, paired tests, SGI-Score).

What other folders may use (DESIGN.md "Adding things": each folder's ``__init__`` lists it); the names load
lazily from their modules on first use, so importing one module of this folder does not import the others.
"""

from __future__ import annotations

from ..core import lazy_exports

_PUBLIC: dict[str, str] = {
    "PairedResult": "stats",
    "Summary": "stats",
    "holm": "stats",
    "paired_test": "stats",
    "summarize": "stats",
    "run_generation": "aidanbench_protocol",
    "CORPUS": "base",
    "FunctionMetric": "base",
    "Metric": "base",
    "MetricResult": "base",
    "ScoringContext": "base",
    "embedding_counts": "embeddings",
    "get_embedder": "embeddings",
    "JudgeReply": "judge",
    "as_data": "judge",
    "ask_judge": "judge",
    "parse_json_object": "judge",
    "reliability": "reliability",
    "reliability_rows": "reliability",
    "with_added_judges": "reliability",
    "ALL": "registry",
    "MetricEntry": "registry",
    "Scoped": "registry",
    "metric": "registry",
    "RubricMetric": "rubric",
    "tool_loop": "rubric",
    "MATCH_THRESHOLD": "rubrics",
    "STARTER_DIR": "rubrics",
    "find_rubric": "rubrics",
    "list_rubrics": "rubrics",
    "load_rubric": "rubrics",
    "match_texts": "rubrics",
    "rubric_origin": "rubrics",
    "save_rubric": "rubrics",
    "semantic_scores": "rubrics",
    "slug": "rubrics",
    "sgi_score": "sgi.sgi_score",
    "FACETS": "differences",
    "FacetValue": "differences",
    "facet_winners": "differences",
    "lead_sources": "differences",
    "order_departures": "differences",
    "DATA_NOTICE": "judge",
    "label_estimates": "labels",
    "METHOD": "stats",
    "items_to_separate": "stats",
    "applicable": "registry",
    "entries": "registry",
    "key_of": "registry",
    "HedgedCapitalCS": "stats",
    "SettleRule": "stats",
    "NumericMatch": "generic",
    "ReferenceMatch": "generic",
    "sample_units": "labels",
    "validate_labels": "labels",
    "unregister_scope": "registry",
    "compare_agreement": "rubric_loop",
    "disagreements": "rubric_loop",
    "labelled_units": "rubric_loop",
    "rescore_units": "rubric_loop",
    "scored_by": "rubric_loop",
    "user_rubric_dir": "rubrics",
}

__all__ = sorted(_PUBLIC)


__getattr__ = lazy_exports(__name__, _PUBLIC)
