"""Quality words: what a request asks about, for the metric customisation agent.

The request words that name catalog facets (disciplines, tasks, benchmark
names) belong to each benchmark's definition (``Benchmark.vocabulary``,
joined by :func:`sgieval.benchmarks.registry.vocabulary`); which metric
measures a quality is declared by the metric (``MetricSpec.qualities``).
"""

from __future__ import annotations

# Qualities a request may ask about (regular expressions, matched case-insensitively on word boundaries).
QUALITY_WORDS: dict[str, list[str]] = {
    "creativity": [r"creative", r"creativity", r"original(ity)?", r"divergent"],
    "rigor": [r"rigou?r(ous)?", r"rigorously"],
    "feasibility": [r"feasib(le|ility)", r"practical(ity)?"],
    "novelty": [r"novel(ty)?", r"innovative", r"new(est)? ideas"],  # ranked by a novelty metric, not by counts
    "clarity": [r"clarity", r"clear(ly|er|est)?", r"well[- ]written"],
    "safety": [r"safety", r"safe(r|st)?", r"hazard\w*", r"risks?"],
    "reproducibility": [r"reproducib(le|ility)", r"replicab(le|ility)"],
    "cost awareness": [r"cost[- ]aware(ness)?", r"budget", r"cheap(er)?"],
    "accuracy": [r"accura(te|cy)", r"correct(ness)?", r"exact"],
}
