"""Predefined metrics of a user JSONL benchmark (``-b <file.jsonl>``, loader
:mod:`sgieval.benchmarks.jsonl`): reference matching.

Items of a JSONL benchmark with a ``reference`` (``Item.reference =
{"answer": value}``) get two objective per-item metrics, both 0 or 1 (higher
is better; a model's score is the mean over items, i.e. accuracy):

- ``exact_match`` (primary): the prediction equals the reference after
  stripping surrounding whitespace (case, inner spacing and number formatting
  all count).
- ``exact_match_normalised``: equality after the normalisation of the
  SGI-Bench deep-research normalised EM (whitespace collapsed, case-folded,
  numbers rounded to the reference's decimal places;
  :func:`sgieval.metric_pool.sgi.deep_research.normalised_equal`), a named
  variant of ``exact_match`` reported beside it.

The prediction is the text inside the last ``<answer>...</answer>`` of the
response when there is one (the SGI-Bench convention, METRICS.md A.1 step 1),
else the whole response.  A non-string reference is compared in its JSON form
(``100`` -> ``"100"``, ``[1, 2]`` -> ``"[1, 2]"``).  Items without a reference
have no predefined metric (the request's custom rubric metrics still apply).
"""

from __future__ import annotations

import json
from typing import Any

from ..core import Item, MetricSpec, Response, final_text
from .base import FunctionMetric, Metric
from .sgi.common import extract_answer_tag
from .sgi.deep_research import normalised_equal

SRC = "sgieval generic JSONL benchmark (metric_pool/generic.py); normalisation as METRICS.md A.1 normalised EM"

EXACT = MetricSpec(
    name="exact_match", tasks=["*"], kind="objective", range=(0.0, 1.0), higher_is_better=True,
    benchmark="jsonl", primary=True,
    description="1 if the prediction (the last <answer>...</answer>, else the response) equals the reference "
                "after stripping surrounding whitespace, else 0; model score = accuracy.",
    source=SRC)
NORMALISED = MetricSpec(
    name="exact_match_normalised", tasks=["*"], kind="objective", range=(0.0, 1.0), higher_is_better=True,
    benchmark="jsonl", variant_of="exact_match",
    description="1 if prediction and reference are equal after collapsing whitespace, case-folding and rounding "
                "numbers to the reference's decimal places, else 0.",
    source=SRC)

def reference_text(value: Any) -> str:
    """The reference as compared: a string as is, any other JSON value in its JSON form."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def prediction_text(response_text: str) -> str:
    """The content of the last ``<answer>...</answer>`` (stripped; the SGI-Bench
    tag rule, :func:`sgieval.metric_pool.sgi.common.extract_answer_tag`), else
    the stripped response; both read only the text after the last ``</think>``
    (METRICS.md D.8)."""
    text = final_text(response_text or "")  # D.8: the reasoning before the last </think> is never scored
    tagged = extract_answer_tag(text)
    return (tagged if tagged is not None else text).strip()


def _score(item: Item, response: Response) -> dict[str, tuple[float, str, dict]]:
    ref = reference_text((item.reference or {}).get("answer")).strip()
    pred = prediction_text(response.text)
    details = {"reference": ref[:500], "prediction": pred[:500]}
    exact = float(pred == ref)
    norm = float(normalised_equal(ref, pred))
    shown = f"prediction {pred[:120]!r} vs reference {ref[:120]!r}"
    return {
        EXACT.name: (exact, f"{'equal' if exact else 'not equal'}: {shown}", details),
        NORMALISED.name: (norm, f"{'equal' if norm else 'not equal'} after normalisation: {shown}", details),
    }


class ReferenceMatch(FunctionMetric):
    """``exact_match`` and ``exact_match_normalised`` (module docstring) for JSONL
    items that have a reference; scores are 0 or 1."""

    def __init__(self) -> None:
        super().__init__([EXACT, NORMALISED], _score)

    def applies(self, item: Item) -> bool:
        return item.benchmark.startswith("jsonl") and item.reference is not None \
            and "answer" in item.reference


def metrics(options: dict | None = None) -> list[Metric]:
    """Predefined metrics of a JSONL benchmark: :class:`ReferenceMatch`."""
    return [ReferenceMatch()]
