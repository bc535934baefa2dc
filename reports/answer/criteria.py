"""The Answer's first item for a "why" question: which criteria (a rubric's, else the other item-level metrics)
carry the difference between the two models, each with its paired test, then two contrasting items' rationales."""

from __future__ import annotations

from typing import Any

from ...core import CORPUS, MetricSpec
from ..context import ReportContext
from ..format import clip_reason, count_phrase, fmt, fmt2, fmt_p
from ..ranking import item_values
from ..sections.criteria import criterion_scores
from .kinds import ci_of, paired
from .where import item_link

__all__ = ["criterion_values", "why"]


def criterion_values(ctx: ReportContext, spec: MetricSpec, model: str) -> dict[str, dict[str, float]]:
    """What the difference between two models can be split into, for ``model``: for a rubric metric, criterion ->
    item id -> its 0-10 score; else every other metric with item-level values (not a variant of ``spec``) ->
    item id -> value.

    Args:
        ctx: the report context.
        spec: the ranking metric.
        model: a target model.

    Returns:
        name -> item id -> value.
    """
    out: dict[str, dict[str, float]] = {}
    if spec.kind == "rubric":
        for s in ctx.grouped.get(spec.name, []):
            if s.model == model and s.ok and s.item_id != CORPUS:
                for name, v in criterion_scores(s).items():
                    out.setdefault(name, {})[s.item_id] = v
        return out
    for other in ctx.specs:
        if spec.name in (other.name, other.variant_of) or spec.variant_of == other.name:
            continue
        if vals := item_values(ctx.grouped.get(other.name, []), model, other.name):
            out[other.name] = vals
    return out


def _quote(ctx: ReportContext, item: str, model: str, a: str, b: str, va: dict, vb: dict) -> str:
    why = next((s.rationale for s in ctx.grouped.get(ctx.spec.name, []) if s.item_id == item and s.model == model), "")
    return (
        f"on [{item}]({item_link(item)}) ({a} {fmt(va[item])}, {b} {fmt(vb[item])}) {model}'s score says "
        f'"{clip_reason(why or "(no rationale)")}"'
    )


def why(ctx: ReportContext, a: str, b: str, va: dict[str, float], vb: dict[str, float], r: Any) -> str:
    """Which criteria carry the difference between the two models asked about (:func:`.kinds.compared`), largest first,
    and the rationales of the items where the first model leads most and least."""
    spec = ctx.spec
    if r is None:
        return f"{a} and {b} share fewer than 2 items scored by {spec.name}: no difference to explain."
    ca, cb = criterion_values(ctx, spec, a), criterion_values(ctx, spec, b)
    rows = [(name, paired(ctx, ca[name], cb.get(name, {}))) for name in ca]
    tested = sorted([(n, t) for n, t in rows if t is not None], key=lambda nt: (-abs(nt[1].mean_diff), nt[0]))
    what = f"the criteria of {spec.name} (0-10)" if spec.kind == "rubric" else "the run's other item-level metrics"
    parts = [
        f"{a} against {b} by {spec.name} ({spec.scale_label}): mean {fmt2(r.mean_a)} against {fmt2(r.mean_b)} on "
        f"the {count_phrase(r.n)} both scored, difference {fmt2(r.mean_diff)} ({ci_of(r)}, paired permutation test p = "
        f"{fmt_p(r.p_value)})."
    ]
    if tested:
        parts.append(
            f"By {what}, largest difference first ({a} against {b}; paired permutation tests, not adjusted): "
            + "; ".join(
                f"{n} {fmt2(t.mean_a)} against {fmt2(t.mean_b)} (difference {fmt2(t.mean_diff)}, {ci_of(t)}, "
                f"p = {fmt_p(t.p_value)}, {t.n} items)"
                for n, t in tested[:6]
            )
            + "."
        )
    shared = sorted(set(va) & set(vb), key=lambda i: (-(va[i] - vb[i]), i))
    if len(shared) >= 2:
        parts.append(
            "Two contrasting items: "
            + _quote(ctx, shared[0], a, a, b, va, vb)
            + "; "
            + _quote(ctx, shared[-1], b, a, b, va, vb)
            + "."
        )
    return " ".join(parts)
