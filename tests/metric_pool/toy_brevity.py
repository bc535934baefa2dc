"""A toy metric as a developer adds one: this module and its one decorator, no other edit (the registry test
imports it).  ``brevity`` = 1 for a reply of at most 5 words, else 5 / words (0-1, higher is more concise)."""

from __future__ import annotations

from sgieval.core import MetricSpec
from sgieval.metric_pool.base import MetricResult
from sgieval.metric_pool.registry import metric

SPEC = MetricSpec(
    name="brevity",
    tasks=["*"],
    range=(0.0, 1.0),
    description="1 for a reply of at most 5 words, else 5 / its number of words.",
    source="test",
)


@metric(SPEC, qualities={"conciseness": (r"concise(?:ness)?|brief(?:est)?",)})
def brevity(item, response) -> MetricResult:
    words = len(response.text.split())
    return MetricResult(value=min(1.0, 5 / max(words, 1)), rationale=f"{words} words", details={"words": words})
