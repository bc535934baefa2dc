"""Shared SGI-Bench machinery: answer-tag extraction and the "empty or none" rule (METRICS.md A.0, D.1), the spec
helper, the reference-field reader and the judge-panel scoring of the judged metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from pydantic import BaseModel

from ...core import InputError, Item, MetricSpec, Response, Score, final_text
from ..repeats import ask_repeats, judge_means, judge_repeats, panel_score, repeat_details

if TYPE_CHECKING:
    from ..base import Metric, ScoringContext

BENCHMARK = "sgi-bench"
PAPER = "paper arXiv 2512.16969"

ANSWER_OPEN = "<answer>"
ANSWER_CLOSE = "</answer>"
NONE_ANSWER = "None"  # stored as response, answer and parsed answer for an empty or "none" reply (A.0)


def extract_answer_tag(text: str) -> str | None:
    """Text between the last ``<answer>`` and the first ``</answer>`` after it, stripped, in the text after the last
    ``</think>`` (METRICS.md A.0, D.1, D.8): case-sensitive tags; an empty pair gives ``""``; a missing tag None (the
    caller falls back to the whole response)."""
    text = final_text(text)
    start = text.rfind(ANSWER_OPEN)
    if start < 0:
        return None
    start += len(ANSWER_OPEN)
    end = text.find(ANSWER_CLOSE, start)
    if end < 0:
        return None
    return text[start:end].strip()


def is_empty_or_none(text: str | None) -> bool:
    """Whether the raw reply (not stripped: ``"none\\n"`` is not) is None, empty or "none" in any case (A.0, D.1)."""
    return text is None or len(text) == 0 or text.lower() == "none"


def model_answer(text: str | None) -> str:
    """SGI-Bench ``model_answer`` (A.0, A.1 step 1): ``"None"`` for an empty-or-none reply, else the tagged answer,
    else the whole (unstripped) response."""
    text = final_text(text)  # D.8
    if is_empty_or_none(text):
        return NONE_ANSWER
    tagged = extract_answer_tag(text)
    return text if tagged is None else tagged


def spec(name: str, task: str, section: str, description: str, **fields: Any) -> MetricSpec:
    """A SGI-Bench :class:`MetricSpec` with ``source`` "METRICS.md <section> / paper arXiv 2512.16969"; ``fields`` are
    further MetricSpec fields (kind, range, primary, ...)."""
    return MetricSpec(
        name=name,
        tasks=[task],
        description=description,
        source=f"METRICS.md {section} / {PAPER}",
        benchmark=BENCHMARK,
        **fields,
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


async def judge_panel(
    metric: Metric,
    item: Item,
    response: Response,
    ctx: ScoringContext,
    messages: Callable[[], list],
    reply: type[BaseModel],
    *,
    candidate: str,
    value: Callable[[Any], float],
    evidence_fields: Callable[[Any], dict[str, Any]],
    per_judge: Callable[[Any], dict[str, Any]],
    key: str,
    rationale: Callable[[dict[str, Any], int], str],
    extra: Callable[[dict[str, Any]], dict[str, Any]] = lambda per: {},
) -> list[Score]:
    """The one Score of a judged metric: every judge allowed for the target asked ``--judge-repeats`` times; the value
    is the mean of the judges' means (``per_judge(parsed)[key]``); ``not_run`` without a judge, ``input_error`` when
    ``messages()`` raises InputError, ``judge_error`` when no reply parsed."""
    name = metric.specs[0].name
    judges, failed = metric.judges_or_failed(item, response, ctx, name)
    if failed is not None:
        return failed
    try:
        msgs = messages()
    except InputError as e:
        return metric.failed(item, response, "input_error", str(e))
    k = judge_repeats(ctx)
    asked = await ask_repeats(judges, k, msgs, reply, candidate=candidate, value=value, evidence_fields=evidence_fields)
    per = {n: per_judge(p) for n, p in asked.parsed.items()}  # the judge's last repeat that parsed
    names = ",".join(j.name for j in judges)
    means = judge_means(asked.draws)  # each judge's mean over its repeats that parsed (k = 1: its one value)
    if not means:
        return metric.failed(
            item, response, "judge_error", "; ".join(asked.errors), judge=names, evidence=asked.evidence
        )
    for n, m in means.items():
        per[n][key] = m
    return panel_score(
        item,
        response,
        name,
        sum(means.values()) / len(means),
        judges=names,
        evidence=asked.evidence,
        rationale=rationale(per, k),
        errors=asked.errors,
        details={"per_judge": per, "judge_errors": asked.errors, **extra(per), **repeat_details(asked.draws, k)},
    )
