"""Metrics of a JSONL benchmark, 0 or 1 per item: ``exact_match`` (primary), ``exact_match_normalised`` (METRICS.md
D.11) and ``numeric_match`` (within 1%); multiple-choice items compare option letters."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from typing import Any, Sequence

from ..core import InputError, Item, MetricSpec, Response, final_text
from .answers import close_enough, cut_next_turn, normalised_match, numeric_answer, parse_number, unwrap_letter
from .base import FunctionMetric, MetricResult
from .registry import metric
from .sgi.common import extract_answer_tag
from .sgi.reasoning import final_option

SRC = "sgieval generic JSONL benchmark (metric_pool/generic.py); normalisation as METRICS.md A.1 normalised EM"

EXACT = MetricSpec(
    name="exact_match",
    tasks=["*"],
    benchmark="jsonl",
    primary=True,
    description="1 if the prediction (the last <answer>...</answer>, else the response) equals the reference "
    "after stripping surrounding whitespace, else 0; model score = accuracy.",
    source=SRC,
    qualities=["accuracy"],
)
NORMALISED = MetricSpec(
    name="exact_match_normalised",
    tasks=["*"],
    benchmark="jsonl",
    variant_of="exact_match",
    qualities=["accuracy"],
    description="1 if prediction and reference are equal after Unicode NFKC, dashes to '-', collapsing whitespace "
    "and case-folding, or are equal numbers (currency symbols and thousands separators removed, 1/2 and "
    "6.02 x 10^23 forms read) after rounding to the reference's decimal places, else 0 (METRICS.md D.11).",
    source=SRC + "; METRICS.md D.11",
)
NUMERIC_REL_TOL = 0.01
NUMERIC = MetricSpec(
    name="numeric_match",
    tasks=["*"],
    benchmark="jsonl",
    variant_of="exact_match",
    description=f"For a numeric reference r: 1 if the answer p satisfies |p - r| <= rel_tol * |r| with relative "
    f"tolerance rel_tol = {NUMERIC_REL_TOL:g}, else 0. p: the reply after its reasoning is cut at a turn the "
    f"model wrote for itself (a new Question:/Q: line, a second #### block); then the last explicit final "
    f"answer (<answer> tag, #### line, \\boxed{{}}, Answer: line) holding a number gives it, else the last "
    f"number of the reply (thousands separators, currency symbols, exponents, x 10^n and fractions read; unit "
    f"exponents such as s^-1 are not numbers). No number found is 0, counted as no answer found.",
    source="sgieval generic JSONL benchmark (metric_pool/generic.py); answers read per METRICS.md D.1, D.8",
)


def reference_text(value: Any) -> str:
    """The reference as compared: a string as is, any other JSON value in its JSON form."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def prediction_text(response_text: str) -> str:
    """The content of the last ``<answer>...</answer>`` of the final text (METRICS.md D.8), else that text, stripped."""
    text = final_text(response_text or "")  # D.8: the reasoning before the last </think> is never scored
    tagged = extract_answer_tag(text)
    return (tagged if tagged is not None else text).strip()


def _choice_letters(item: Item) -> list[str] | None:
    """Option letters of a multiple-choice item (``reference["options"]``: a list labelled A, B, ... or a dict)."""
    opts = (item.reference or {}).get("options") if isinstance(item.reference, dict) else None
    if isinstance(opts, dict) and opts:
        return [str(k) for k in opts]
    if isinstance(opts, list) and opts:
        return [chr(65 + k) for k in range(len(opts))]
    return None


def _reference_letter(item: Item, letters: list[str]) -> str:
    """The gold option letter of a multiple-choice item: a letter, a 0-based index or an option's text; else ValueError."""
    ref = (item.reference or {}).get("answer")
    opts = item.reference.get("options")
    if isinstance(ref, str) and ref.strip() in letters:
        return ref.strip()
    if isinstance(ref, int) and not isinstance(ref, bool) and 0 <= ref < len(letters):
        return letters[ref]
    texts = list(opts.values()) if isinstance(opts, dict) else list(opts)
    if ref in texts:
        return letters[texts.index(ref)]
    raise ValueError(
        f"item {item.id}: reference {ref!r} is neither an option letter ({', '.join(letters)}), "
        "a 0-based option index nor the text of an option"
    )


def _score(item: Item, response: Response) -> dict[str, MetricResult]:
    letters = _choice_letters(item)
    if letters:
        return _score_choice(item, response, letters)
    ref = reference_text((item.reference or {}).get("answer")).strip()
    pred = prediction_text(response.text)
    details: dict[str, Any] = {"reference": ref[:500], "prediction": pred[:500]}
    if not pred:
        details["no_answer"] = True
    shown = f"prediction {pred[:120]!r} vs reference {ref[:120]!r}"
    return _results(pred == ref, normalised_match(ref, pred), "after normalisation", shown, details)


def _score_choice(item: Item, response: Response, letters: list[str]) -> dict[str, MetricResult]:
    gold = _reference_letter(item, letters)
    # a boxed letter or final ANSWER: X line (D.3, D.9), else the prediction text when it is one (wrapped) letter
    text = final_text(response.text or "")
    got, how = final_option(text, letters)
    if got is None:
        cand = unwrap_letter(prediction_text(text))
        one = cand is not None and cand.upper() in {x.upper() for x in letters}
        got, how = (cand, "whole answer") if one else (None, "no answer found")
    details: dict[str, Any] = {"reference": gold, "prediction": got, "found_by": how}
    if got is None:
        details["no_answer"] = True
        why = f"no answer found (no boxed option letter, no final ANSWER: line), reference {gold!r}"
        return {EXACT.name: MetricResult(0.0, why, details), NORMALISED.name: MetricResult(0.0, why, details)}
    shown = f"option {got!r} ({how}) vs reference {gold!r}"
    return _results(got == gold, got.casefold() == gold.casefold(), "ignoring case", shown, details)


def _results(exact: bool, norm: bool, how: str, shown: str, details: dict[str, Any]) -> dict[str, MetricResult]:
    """Both specs' results: equal or not as given, and ``how`` normalised."""
    said = {True: "equal", False: "not equal"}
    return {
        EXACT.name: MetricResult(float(exact), f"{said[exact]}: {shown}", details),
        NORMALISED.name: MetricResult(float(norm), f"{said[norm]} {how}: {shown}", details),
    }


REFERENCE_METRICS = (EXACT.name, NORMALISED.name, NUMERIC.name)


JSONL = "jsonl"


@metric(EXACT, NORMALISED, scope=JSONL)
class ReferenceMatch(FunctionMetric):
    """``exact_match`` and ``exact_match_normalised`` for the items of ``benchmark`` (None: any ``jsonl:<stem>``) that
    have a reference; ``names``: the specs to compute (default both)."""

    def __init__(self, benchmark: str | None = None, names: Sequence[str] | None = None) -> None:
        specs = [EXACT, NORMALISED]
        if names is not None:
            unknown = [n for n in names if n not in {s.name for s in specs}]
            if unknown:
                raise InputError(
                    f"unknown reference metric {unknown[0]!r}",
                    what="metrics",
                    fix=f"use {EXACT.name} or {NORMALISED.name}",
                )
            specs = [s for s in specs if s.name in names]
        super().__init__(specs, _score)
        self.benchmark = benchmark

    def applies(self, item: Item) -> bool:
        mine = item.benchmark == self.benchmark if self.benchmark else item.benchmark.startswith("jsonl")
        return mine and item.reference is not None and "answer" in item.reference


def _numeric_reference(item: Item) -> Decimal | Fraction | None:
    """The number a non-multiple-choice item's reference gives, or None."""
    if not isinstance(item.reference, dict) or _choice_letters(item):
        return None
    ref = item.reference.get("answer")
    if isinstance(ref, bool) or ref is None:
        return None
    if isinstance(ref, (int, float)):
        return parse_number(repr(ref)) if isinstance(ref, float) else Decimal(ref)
    return parse_number(ref) if isinstance(ref, str) else None


def _numeric(item: Item, response: Response) -> MetricResult:
    ref = _numeric_reference(item)
    if ref is None:
        raise ValueError(f"item {item.id}: the reference is not a number")
    text = final_text(response.text or "")  # D.8: the reasoning before the last </think> is never scored
    got, how = numeric_answer(text)
    details: dict[str, Any] = {"reference": str(ref), "prediction": None if got is None else str(got)}
    details |= {"found_by": how, "rel_tol": NUMERIC_REL_TOL}
    if got is None:
        details["no_answer"] = True
        shown = cut_next_turn(text).strip()
        return MetricResult(0.0, f"no number found ({how}) in the answer {shown[-120:]!r}; reference {ref}", details)
    v = float(close_enough(ref, got, NUMERIC_REL_TOL))
    why = f"{how}: {got} vs reference {ref}: {'within' if v else 'outside'} relative tolerance {NUMERIC_REL_TOL:g}"
    return MetricResult(v, why, details)


@metric(NUMERIC, scope=JSONL)
class NumericMatch(FunctionMetric):
    """``numeric_match`` for the items of ``benchmark`` (None: any generic JSONL one) whose reference is a number."""

    def __init__(self, benchmark: str | None = None) -> None:
        super().__init__(NUMERIC, _numeric)
        self.benchmark = benchmark

    def applies(self, item: Item) -> bool:
        mine = item.benchmark == self.benchmark if self.benchmark else item.benchmark.startswith("jsonl")
        return mine and _numeric_reference(item) is not None
