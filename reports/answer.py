"""What the Answer must say beside the ranking: flagged stored records and whether the order
survives without them, who judged, self-preference, metrics that disagree about the top model, and means dominated by one item.

Pure functions over :class:`~sgieval.core.Score` records and plain values (imports only ``core``); the report
builder turns their results into the Answer's sentences, the Run table's judge row, the Limitations and the
Failures section.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Collection, Iterable

from ..core import MetricSpec, Score, same_model

CORPUS = "*"  # Score.item_id of a corpus-level score (metric_pool.base.CORPUS)

__all__ = [
    "Answer",
    "DOMINANCE_SHARE",
    "dominant_item",
    "flag_rows",
    "flagged_items",
    "judgement_sources",
    "judge_summary",
    "metric_tops",
    "order_text",
    "printed_tie_groups",
    "tied_order_text",
    "self_preference",
    "sensitivity_sentence",
]

DOMINANCE_SHARE = 0.4
"""An item dominates a model's mean when it holds at least this share of the model's total and at least twice the
next item's value (non-negative metric, 3 or more items)."""


def _flag(s: Score) -> str | None:
    d = s.details or {}
    return "missing" if d.get("missing") else "censored" if d.get("censored") else None


def by_metric(scores: Iterable[Score]) -> dict[str, list[Score]]:
    """``scores`` grouped by metric name, each group in the given order: one pass, so the report's
    per-metric sections each read their metric's scores only (a 10,000-item run has 30,000
    scores, and a pass over the scores of a finished run costs ~10 ms).

    Args:
        scores: any scores.

    Returns:
        metric name -> its scores.
    """
    out: dict[str, list[Score]] = defaultdict(list)
    for s in scores:
        out[s.metric].append(s)
    return out


def flag_rows(scores: Iterable[Score], models: list[str] | None = None) -> list[dict[str, str]]:
    """One row per flagged (item, target model) pair, whatever the metric:
    ``{"item", "model", "flag" ("censored" | "missing"), "reason", "error"}``
    sorted by model then item id; ``models`` limits the target models."""
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for s in scores:
        f = _flag(s)
        if f is None or (models is not None and s.model not in models) or (s.model, s.item_id) in rows:
            continue
        d = s.details or {}
        rows[(s.model, s.item_id)] = {
            "item": s.item_id,
            "model": s.model,
            "flag": f,
            "reason": str(d.get("flag_reason", "")),
            "error": str(d.get("stop_error", "")),
        }
    return [rows[k] for k in sorted(rows)]


def flagged_items(scores: Iterable[Score], metric: str, models: list[str]) -> set[str]:
    """Item ids for which any of ``models`` has a censored or missing ``metric`` score."""
    return {s.item_id for s in scores if s.metric == metric and s.model in models and _flag(s)}


def _means(
    scores: Iterable[Score], metric: str, models: list[str], leave_out: Collection[str] = frozenset()
) -> dict[str, float]:
    vals: dict[str, list[float]] = {m: [] for m in models}
    for s in scores:
        if (
            s.metric == metric
            and s.model in vals
            and s.ok
            and s.value is not None
            and s.item_id != CORPUS
            and s.item_id not in leave_out
        ):
            vals[s.model].append(float(s.value))
    return {m: sum(v) / len(v) for m, v in vals.items() if v}


def _ordered(means: dict[str, float], higher_is_better: bool) -> list[str]:
    return sorted(means, key=lambda m: (-means[m] if higher_is_better else means[m], m))


def printed_tie_groups(means: dict[str, float], higher_is_better: bool, digits: int = 2) -> list[list[str]]:
    """The models of ``means`` best first, grouped where their means are equal at ``digits`` decimals (the
    report's precision): a tie is one group, its models in name order (name order never ranks them).

    Args:
        means: model -> mean.
        higher_is_better: the metric's direction.
        digits: the printed precision (decimals).

    Returns:
        The groups, best first.
    """
    groups: list[list[str]] = []
    last: float | None = None
    for m in _ordered(means, higher_is_better):
        r = round(means[m], digits)
        if groups and r == last:
            groups[-1].append(m)
        else:
            groups.append([m])
        last = r
    return groups


def tied_order_text(groups: list[list[str]], higher_is_better: bool = True) -> str:
    """``a > b = c`` from tie groups (``<`` when lower is better)."""
    return (" > " if higher_is_better else " < ").join(" = ".join(g) for g in groups)


def order_text(models: list[str], higher_is_better: bool = True) -> str:
    """``a > b > c`` (``<`` when lower is better)."""
    return (" > " if higher_is_better else " < ").join(models)


def sensitivity_sentence(scores: list[Score], spec: MetricSpec, order: list[str]) -> str | None:
    """The Answer's sensitivity line: leaving out the items
    whose stored list of any ranked model is censored (ended by an error) or
    missing (empty), does the order of ``order`` by ``spec`` change?  None
    when no ranked model has a flagged ``spec`` score.

    Args:
        scores: the run's scores.
        spec: the ranking metric.
        order: the ranked models, best first.

    Returns:
        The sentence, or None.
    """
    bad = flagged_items(scores, spec.name, order)
    if not bad:
        return None
    rows = [r for r in flag_rows((s for s in scores if s.metric == spec.name), order)]
    n_c = sum(1 for r in rows if r["flag"] == "censored")
    n_m = len(rows) - n_c
    parts = ([f"{n_c} censored (stopped by an error, so the count is a lower bound)"] if n_c else []) + (
        [f"{n_m} missing (an empty stored list)"] if n_m else []
    )
    kept = _means(scores, spec.name, order, leave_out=bad)
    new = printed_tie_groups(kept, spec.higher_is_better)
    full = printed_tie_groups(_means(scores, spec.name, [m for m in order if m in kept]), spec.higher_is_better)
    head = (
        f"Sensitivity: {' and '.join(parts)} stored {'list is' if len(rows) == 1 else 'lists are'} counted as "
        f"published (see Failures); leaving out the {len(bad)} item{'' if len(bad) == 1 else 's'} concerned"
    )
    if new == full:
        return f"{head}, the order by {spec.name} does not change."
    return f"{head}, the order by {spec.name} changes to {tied_order_text(new, spec.higher_is_better)}."


def judgement_sources(scores: Iterable[Score], models: list[str]) -> list[dict[str, str]]:
    """The distinct ``details["judged_by"]`` records (who decided acceptance:
    ``coherence``, ``novelty``, ``origin`` stored|live, ``source``) of the
    target models' scores, in first-seen order.

    Args:
        scores: the run's scores.
        models: the target models.

    Returns:
        The records.
    """
    out: list[dict[str, str]] = []
    for s in scores:
        jb = (s.details or {}).get("judged_by")
        if s.model in models and isinstance(jb, dict) and jb not in out:
            out.append(jb)
    return out


def judge_summary(sources: list[dict[str, str]], live_judges: list[str], judge_metrics_scored: bool) -> str:
    """The Run table's judge row: the live judges (or none) and every stored
    judgement source, e.g. "none called in this run; stored judgements (SciAidanBench
    published run): coherence by o1-mini, novelty by text-embedding-3-large embeddings
    (from the SciAidanBench definition ...)"."""
    if live_judges:
        parts = [", ".join(live_judges)]
    else:
        parts = ["none called in this run" + ("" if judge_metrics_scored else " (judge metrics not run)")]
    for src in sources:
        what = (
            f"coherence by {src.get('coherence')}, novelty by {src.get('novelty')} embeddings "
            f"(from {src.get('source')})"
        )
        if src.get("origin") == "stored":
            parts.append(f"stored judgements of the original run: {what}")
        elif not live_judges or src.get("coherence") not in live_judges:
            parts.append(f"open-creativity protocol: {what}")
    return "; ".join(parts)


def self_preference(
    models: list[str], sources: list[dict[str, str]], live_judges: list[str], allow_self_judge: bool
) -> list[str]:
    """Sentences naming every ranked target that is the same model as a judge
    that decided its scores (stored coherence judge of a replay, or a live
    judge allowed to score its own responses), e.g. "replay:o1-mini is ranked
    while o1-mini judged the coherence that decided its accepted answers
    (stored judgements): a judge may favour its own answers (self-preference)".

    Args:
        models: the ranked target models.
        sources: :func:`judgement_sources` records.
        live_judges: the run's judge models.
        allow_self_judge: whether ``--allow-self-judge`` was set.

    Returns:
        The sentences (empty when none).
    """
    out = []
    for m in models:
        for src in sources:
            j = src.get("coherence", "")
            if j and same_model(j, m):
                how = "stored judgements of the original run" if src.get("origin") == "stored" else "live"
                out.append(
                    f"{m} is ranked while {j} judged the coherence that decided its accepted answers ({how}): "
                    "a judge may favour its own answers (self-preference), so its position may be overstated"
                )
                break
        else:
            if allow_self_judge:
                for j in live_judges:
                    if same_model(j, m):
                        out.append(
                            f"{m} is ranked while {j} judged its responses (--allow-self-judge): a judge may "
                            "favour its own answers (self-preference)"
                        )
                        break
    return out


def metric_tops(scores: list[Score], specs: list[MetricSpec], models: list[str]) -> dict[str, tuple[list[str], float]]:
    """Per metric of ``specs``: (the model(s) with the best mean per item over
    ok item-level scores, that mean); metrics no model has a value for are
    left out.

    Args:
        scores: the run's scores.
        specs: the metrics.
        models: the target models.

    Returns:
        metric name -> (best models, best mean on the metric's scale).
    """
    out = {}
    grouped = by_metric(scores)
    for spec in specs:
        means = _means(grouped.get(spec.name, []), spec.name, models)
        if not means:
            continue
        order = _ordered(means, spec.higher_is_better)
        best = means[order[0]]
        out[spec.name] = ([m for m in order if means[m] == best], best)
    return out


def dominant_item(scores: list[Score], metric: str, model: str) -> dict[str, Any] | None:
    """When one item holds at least :data:`DOMINANCE_SHARE` of ``model``'s
    total on ``metric`` (non-negative values, 3+ items): ``{"item", "value",
    "total", "share", "n", "mean", "median"}``; else None.

    Args:
        scores: the run's scores.
        metric: a metric name.
        model: a target model.

    Returns:
        The dict, or None.
    """
    vals = {
        s.item_id: float(s.value)
        for s in scores
        if s.model == model and s.metric == metric and s.ok and s.value is not None and s.item_id != CORPUS
    }
    if len(vals) < 3 or any(v < 0 for v in vals.values()):
        return None
    total = sum(vals.values())
    if total <= 0 or math.isnan(total):
        return None
    ranked = sorted(vals, key=lambda k: (-vals[k], k))
    item = ranked[0]
    share = vals[item] / total
    if share < DOMINANCE_SHARE or vals[item] < 2 * vals[ranked[1]]:
        return None
    return {
        "item": item,
        "value": vals[item],
        "total": total,
        "share": share,
        "n": len(vals),
        "mean": total / len(vals),
        "median": statistics.median(vals.values()),
    }


@dataclass
class Answer:
    """The report's Answer as a short list of full sentences: ``verdict`` (the fixed first sentence: winner or
    tie, scope, metric, full order), ``summary`` (an agent model's text that passed the fact check, "" without
    one), ``how_sure`` (paired tests, CIs, judge agreement), ``where`` (where the models differ: facets, other
    metrics), ``more_items`` (when the top two are not separated: how many more items the paired test would need,
    and their cost), ``caveats`` (coverage, ties, unscored models, self-preference, stored judges...) and
    ``stamp`` (what was checked in an agent's text, "" without one)."""

    verdict: str
    how_sure: list[str] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    more_items: list[str] = field(default_factory=list)
    summary: str = ""
    summary_by: str = ""
    stamp: str = ""
    where_first: bool = False
    """The request asked where the models differ: "Where it differs" comes right after the verdict."""

    def markdown(self) -> str:
        """The Answer as a Markdown list (one item per part that has sentences; caveats one per sub-item when
        there are several), then the stamp in italics.

        Returns:
            The Markdown text.
        """
        lines = [f"- **Verdict:** {self.verdict}"]
        parts = [("How sure", self.how_sure), ("Where it differs", self.where)]
        if self.where_first:
            parts.reverse()
        if self.summary:
            lines.append(f"- **Summary** ({self.summary_by}): {self.summary}")
        for label, part in parts:
            if part:
                lines.append(f"- **{label}:** " + " ".join(part))
        if self.more_items:
            lines.append("- **More items:** " + " ".join(self.more_items))
        if len(self.caveats) == 1:
            lines.append(f"- **Caveats:** {self.caveats[0]}")
        elif self.caveats:
            lines.append("- **Caveats:**")
            lines += [f"  - {c}" for c in self.caveats]
        text = "\n".join(lines)
        return text + (f"\n\n*({self.stamp})*" if self.stamp else "")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``report.json``, the viewer).

        Returns:
            The dict.
        """
        return {
            "verdict": self.verdict,
            "summary": self.summary,
            "summary_by": self.summary_by,
            "how_sure": list(self.how_sure),
            "where": list(self.where),
            "caveats": list(self.caveats),
            "more_items": list(self.more_items),
            "stamp": self.stamp,
            "where_first": self.where_first,
        }
