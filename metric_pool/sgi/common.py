"""Shared SGI-Bench machinery: answer-tag extraction, the "empty or none" rule, and spec helpers.

Sources: METRICS.md A.0 (answer-tag extraction, empty/failed model output) and D.1 (tag matching is case-sensitive; an
empty ``<answer></answer>`` is an empty answer, not a fallback; the "empty or none" test looks at the raw reply).
"""

from __future__ import annotations

from typing import Any

from ...core import InputError, Item, MetricKind, MetricSpec, final_text

BENCHMARK = "sgi-bench"
PAPER = "paper arXiv 2512.16969"

ANSWER_OPEN = "<answer>"
ANSWER_CLOSE = "</answer>"
NONE_ANSWER = "None"
"""The string SGI-Bench stores as response, answer and parsed answer for an empty or "none" reply (METRICS.md A.0)."""


def extract_answer_tag(text: str) -> str | None:
    """Text between the last ``<answer>`` and the first ``</answer>`` after it, stripped, in the text after the last
    ``</think>`` (METRICS.md D.8). METRICS.md A.0 + D.1: tags are matched case-sensitively (``<ANSWER>`` is not a tag);
    an empty pair ``<answer></answer>`` (or whitespace only) gives ``""`` (an empty answer, no fallback); a missing
    opening tag, or no closing tag after the last opening tag, gives ``None`` so the caller falls back to the whole
    response (:func:`model_answer`)."""
    if text is None:
        return None
    text = final_text(text)  # D.8: only the text after the last </think> holds the answer
    start = text.rfind(ANSWER_OPEN)
    if start < 0:
        return None
    start += len(ANSWER_OPEN)
    end = text.find(ANSWER_CLOSE, start)
    if end < 0:
        return None
    return text[start:end].strip()


def is_empty_or_none(text: str | None) -> bool:
    """METRICS.md A.0/D.1: the reply is empty or equals "none" case-insensitively, tested on the raw reply without
    stripping (so ``"none\\n"`` and ``" "`` are not empty-or-none)."""
    return text is None or len(text) == 0 or text.lower() == "none"


def model_answer(text: str | None) -> str:
    """SGI-Bench ``model_answer``: ``"None"`` for an empty-or-none reply (:func:`is_empty_or_none`), else the tag
    extraction, falling back to the whole (unstripped) response when a tag is missing (METRICS.md A.0, A.1 step 1)."""
    if is_empty_or_none(text):
        return NONE_ANSWER
    text = final_text(text)  # D.8
    if is_empty_or_none(text):
        return NONE_ANSWER
    tagged = extract_answer_tag(text)
    return text if tagged is None else tagged


def spec(
    name: str,
    task: str,
    section: str,
    description: str,
    *,
    kind: MetricKind = "objective",
    range: tuple[float, float] = (0.0, 1.0),
    variant_of: str | None = None,
    primary: bool = False,
    unit: str = "",
    qualities: list[str] | None = None,
) -> MetricSpec:
    """A SGI-Bench :class:`MetricSpec` with ``source`` "METRICS.md <section> / paper arXiv 2512.16969";
    ``qualities``: the qualities it measures (MetricSpec.qualities)."""
    return MetricSpec(
        name=name,
        tasks=[task],
        kind=kind,
        range=range,
        description=description,
        source=f"METRICS.md {section} / {PAPER}",
        benchmark=BENCHMARK,
        variant_of=variant_of,
        primary=primary,
        unit=unit,
        qualities=qualities or [],
    )


def reference_field(item: Item, key: str) -> Any:
    """``item.reference[key]``; raises InputError naming the item and field when absent."""
    ref = item.reference
    if not isinstance(ref, dict) or key not in ref:
        raise InputError(
            f"reference has no field {key!r}",
            what=f"item {item.id}",
            fix=f"load the item with the SGI item contract for task {item.task!r}",
        )
    return ref[key]
