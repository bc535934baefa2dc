"""Rubric breakdowns: per rubric metric, the mean criterion score (0-10) per target model, as a table and a heatmap."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any

from ...core import CORPUS, Score
from ..blocks import Section, Table
from ..charts import heatmap
from ..context import ReportContext
from ..format import fmt, fmt2
from . import section


def criterion_scores(score: Score) -> dict[str, float]:
    """Per-criterion values (0-10) of a rubric Score from ``details["criteria"]``: ``{name: value}``, ``{name:
    {"score"|"value": v}}`` or ``[{"criterion"|"name": name, "score"|"value": v}]``; entries without a number left out.

    Args:
        score: a rubric Score.

    Returns:
        criterion -> value (0-10).
    """
    raw = (score.details or {}).get("criteria")
    out: dict[str, float] = {}
    if isinstance(raw, dict):
        pairs = list(raw.items())
    elif isinstance(raw, list):
        pairs = [(e.get("criterion", e.get("name")), e) for e in raw if isinstance(e, dict)]
    else:
        return out
    for name, v in pairs:
        if isinstance(v, dict):
            v = v.get("score", v.get("value"))
        if name is None or isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(float(v)):
            continue
        out[str(name)] = float(v)
    return out


def rubric_breakdown(scores: list[Score], rubric: Any, models: list[str]) -> dict[str, Any] | None:
    """Mean per-criterion score (0-10) per target model for one rubric metric, over its item-level scores.

    Args:
        scores: the run's scores.
        rubric: a spec with ``name``, ``criteria`` (each with ``name``) and optional ``weights``.
        models: the target models.

    Returns:
        ``{"rubric", "criteria", "weights", "means": {model: [mean or NaN]}, "n": {model: [count]}}``; None when no
        model has criterion scores.
    """
    names = [c.name for c in rubric.criteria]
    weights = [float((getattr(rubric, "weights", None) or {}).get(n, 1.0)) for n in names]
    means: dict[str, list[float]] = {}
    counts: dict[str, list[int]] = {}
    found = False
    for m in models:
        per: dict[str, list[float]] = defaultdict(list)
        for s in scores:
            if s.model == m and s.metric == rubric.name and s.item_id != CORPUS:
                for c, v in criterion_scores(s).items():
                    per[c].append(v)
        found = found or any(per.values())
        means[m] = [sum(per[n]) / len(per[n]) if per[n] else float("nan") for n in names]
        counts[m] = [len(per[n]) for n in names]
    if not found:
        return None
    return {"rubric": rubric.name, "criteria": names, "weights": weights, "means": means, "n": counts}


@section("criteria", title="Rubric breakdowns", after="metrics")
def criteria_sections(ctx: ReportContext) -> list[Section]:
    """One rubric breakdown per rubric metric with criterion scores: table and heatmap (0-10)."""
    out = []
    models = ctx.model_order
    for r in ctx.specs:
        if not getattr(r, "criteria", None):
            continue
        bd = rubric_breakdown(ctx.grouped.get(r.name, []), r, models)
        if bd is None:
            continue
        rows = [
            [c, fmt(bd["weights"][j])] + [fmt2(bd["means"][m][j]) if bd["n"][m][j] else "n/a" for m in models]
            for j, c in enumerate(bd["criteria"])
        ]
        table = Table(["criterion", "weight"] + [f"{m}: mean (0-10)" for m in models], rows, name="criteria")
        fig = ctx.figure(
            f"figures/criteria_{re.sub(r'[^A-Za-z0-9_.-]+', '_', bd['rubric'])}.png",
            f"{bd['rubric']} per criterion",
            heatmap,
            models,
            bd["criteria"],
            [bd["means"][m] for m in models],
            title=f"{bd['rubric']}: mean score per criterion (0-10)",
        )
        out.append(
            Section(
                f"criteria:{bd['rubric']}",
                f"Rubric breakdown: {bd['rubric']} (mean criterion score per target model, 0-10)",
                [table, fig],
            )
        )
    return out
