"""The ranking's data model and rules: per-model summaries, CI cells, tie groups and shared ranks (METRICS.md
D.16), adjacent-pair entries, coverage of the scored items, and why a model is unscored.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import accumulate, groupby
from typing import Any, Callable, Collection, Iterable, Protocol

from ..core import CORPUS, MetricSpec, Score
from .format import clip_reason, count_phrase, fmt2, fmt_p, fmt_total


class _Interval(Protocol):
    """``n`` values and a 95% CI ``[ci_low, ci_high]`` (NaN when unavailable)."""

    @property
    def n(self) -> int: ...
    @property
    def ci_low(self) -> float: ...
    @property
    def ci_high(self) -> float: ...


class SummaryLike(_Interval, Protocol):
    """A per-model summary (``metric_pool.stats.Summary``): ``mean`` and ``total`` on the metric's scale."""

    @property
    def mean(self) -> float: ...
    @property
    def total(self) -> float: ...


class PairStat(_Interval, Protocol):
    """A paired test (``metric_pool.stats.PairedResult``): ``mean_diff`` is a minus b, ``p_value`` 0-1."""

    @property
    def method(self) -> str: ...
    @property
    def mean_diff(self) -> float: ...
    @property
    def p_value(self) -> float: ...


@dataclass
class ModelStat:
    """One target model's ranking row: ``summary`` None without an ok score; ``corpus`` for a corpus-level metric."""

    model: str
    summary: SummaryLike | None
    failed: int
    corpus: bool = False
    reason: str = ""

    @property
    def stats(self) -> SummaryLike:
        """``summary`` of a ranked model; ValueError for a model without an ok score."""
        if self.summary is None:
            raise ValueError(f"{self.model} has no ok score: it is not ranked")
        return self.summary


@dataclass
class SgiRow:
    """One target model's SGI-Score (0-100, METRICS.md A.6) or None, its per-task terms and missing terms."""

    model: str
    sgi_score: float | None
    per_task: str
    missing: str = ""


def ci_text(a: SummaryLike) -> str:
    """A ranking row's CI cell: ``"lo to hi"``, with the method's mark or why it is degenerate or missing.

    Args:
        a: a summary.

    Returns:
        The cell text.
    """
    method, note = getattr(a, "method", ""), getattr(a, "note", "")
    if not has_ci(a):
        return f"n/a ({note})" if note else "n/a"
    if no_variation(a):
        return f"no variation over {count_phrase(a.n)}"
    text = f"{fmt2(a.ci_low)} to {fmt2(a.ci_high)}"
    if method == "wilson":
        return f"{text} (Wilson score, 0/1 metric)"
    if method in ("degenerate", "percentile") and note:
        return f"{text} ({note})"
    return text


def no_variation(a: Any) -> bool:
    """Whether a CI has zero width: it shows no variation and supports no verdict.

    Args:
        a: a summary.

    Returns:
        True for a zero-width CI.
    """
    lo, hi = getattr(a, "ci_low", math.nan), getattr(a, "ci_high", math.nan)
    return math.isfinite(lo) and math.isfinite(hi) and math.isclose(lo, hi, rel_tol=0.0, abs_tol=1e-12)


def has_ci(a: SummaryLike) -> bool:
    """Whether both CI bounds of ``a`` are numbers (not NaN).

    Args:
        a: a summary.

    Returns:
        True when both bounds are numbers.
    """
    return not any(math.isnan(x) for x in (a.ci_low, a.ci_high))


def ci_overlap(a: SummaryLike, b: SummaryLike) -> bool | None:
    """Whether the two 95% CIs overlap (not a significance test).

    Args:
        a: one summary.
        b: the other.

    Returns:
        True, False, or None when either CI is unavailable.
    """
    if not (has_ci(a) and has_ci(b)):
        return None
    return not (a.ci_low > b.ci_high or b.ci_low > a.ci_high)


def order_stats(stats: list[ModelStat], higher_is_better: bool) -> list[ModelStat]:
    """Models with a summary by mean (best first, equal means in name order), then those without.

    Args:
        stats: per-model summaries.
        higher_is_better: the metric's direction.

    Returns:
        The ordered list.
    """
    have = {s.model: s for s in stats if s.summary is not None}
    order = ordered_by_mean({m: s.stats.mean for m, s in have.items()}, higher_is_better)
    return [have[m] for m in order] + [s for s in stats if s.summary is None]


def tie_groups(ranked: list[ModelStat], pairs: list[dict[str, Any]]) -> list[list[ModelStat]]:
    """The ranked models in groups that share a rank (METRICS.md D.16): adjacent models with equal printed means whose
    paired test does not separate them.

    Args:
        ranked: the ranked models, best first.
        pairs: ``pairs[k]`` is the :func:`pair_entry` of ``ranked[k]`` and ``ranked[k + 1]``.

    Returns:
        One list per rank, best first.
    """
    groups: list[list[ModelStat]] = []
    for k, s in enumerate(ranked):
        pair = pairs[k - 1] if 0 < k <= len(pairs) else None
        if groups and fmt2(ranked[k - 1].stats.mean) == fmt2(s.stats.mean) and not pair_separates(pair):
            groups[-1].append(s)
        else:
            groups.append([s])
    return groups


def rank_labels(groups: list[list[ModelStat]]) -> dict[str, str]:
    """``{model: rank}`` in standard competition ranking with shared ranks marked: ``"1"``, ``"2="``, ``"2="``, ``"4"``.

    Args:
        groups: the rank groups, best first.

    Returns:
        model -> rank label.
    """
    starts = accumulate((len(g) for g in groups), initial=1)
    return {s.model: f"{pos}=" if len(g) > 1 else str(pos) for g, pos in zip(groups, starts) for s in g}


def order_with_ties(groups: list[list[Any]], higher_is_better: bool = True) -> str:
    """The full order with shared ranks: ``"alpha > beta = gamma > delta"`` (``<`` when lower is better).

    Args:
        groups: the rank groups, best first (model names or :class:`ModelStat`).
        higher_is_better: the metric's direction.

    Returns:
        The order text.
    """
    name = lambda x: x.model if isinstance(x, ModelStat) else str(x)  # noqa: E731
    return (" > " if higher_is_better else " < ").join(" = ".join(name(x) for x in g) for g in groups)


def unscored_reason(mine: list[Score]) -> str:
    """Why a model has no valid score for a metric, e.g. "3 failed (judge_error): timeout".

    Args:
        mine: one model's scores of one metric.

    Returns:
        The reason.
    """
    if not mine:
        return "no score recorded"
    na = [s for s in mine if not_applicable(s) or s.status == "not_applicable"]
    failed = [s for s in mine if s not in na]
    by = Counter(s.status for s in failed)
    what = ", ".join(f"{k} {v}" if len(by) > 1 else k for k, v in sorted(by.items()))
    parts = []
    for group, label in ((na, "not applicable"), (failed, f"failed ({what})")):
        why = next((s.error for s in group if s.error), "")
        if group:
            parts.append(f"{len(group)} {label}" + (f": {clip_reason(why)}" if why else ""))
    return "; ".join(parts)


@dataclass
class Coverage:
    """How the models' scored item sets of the ranking metric compare (METRICS.md D.16).

    ``shared``: ids every scored model has a valid score for; ``own``/``wrong``: ``{model: (n, mean)}`` over its own
    valid items / over every attempted item with a failure or missing score counted as ``worst``; ``shared_means``:
    ``{model: mean}`` on the shared items.
    """

    selected: int
    shared: set[str]
    own: dict[str, tuple[int, float]]
    wrong: dict[str, tuple[int, float]]
    shared_means: dict[str, float]
    worst: float | None

    @property
    def differs(self) -> bool:
        """Whether some scored model's item set is not the shared one."""
        return any(n != len(self.shared) for n, _ in self.own.values())


def coverage(scores: list[Score], spec: MetricSpec, models: list[str], selected: int) -> Coverage | None:
    """The :class:`Coverage` of ``spec`` over ``models``.

    Args:
        scores: the scores (any metric).
        spec: the ranking metric; its worst value is the worse end of ``range`` (None when infinite).
        models: the target models.
        selected: the number of selected items.

    Returns:
        The Coverage; None for a corpus-level metric or fewer than two scored models.
    """
    own: dict[str, dict[str, float]] = {m: {} for m in models}
    tried: set[str] = set()
    for s in scores:
        if s.metric != spec.name or s.model not in own:
            continue
        if s.item_id == CORPUS:
            if s.ok:
                return None
            continue
        if s.ok and s.value is not None:
            own[s.model][s.item_id] = float(s.value)
            tried.add(s.item_id)
        elif not (not_applicable(s) or s.status == "not_applicable"):
            tried.add(s.item_id)
    scored = [m for m in models if own[m]]
    if len(scored) < 2:
        return None
    shared = set.intersection(*(set(own[m]) for m in scored))
    worst = spec.range[0] if spec.higher_is_better else spec.range[1]
    worst_v = None if math.isinf(worst) else float(worst)
    wrong = {}
    if worst_v is not None:
        wrong = {m: (len(tried), sum(own[m].get(i, worst_v) for i in tried) / len(tried)) for m in scored}
    return Coverage(
        selected=selected,
        shared=shared,
        own={m: (len(own[m]), sum(own[m].values()) / len(own[m])) for m in scored},
        wrong=wrong,
        shared_means={m: sum(own[m][i] for i in shared) / len(shared) for m in scored} if shared else {},
        worst=worst_v,
    )


def groups_by_mean(means: dict[str, float], higher_is_better: bool) -> list[list[str]]:
    """Models by mean, best first, grouped where the means print the same (no paired test)."""
    return runs_of_equal(ordered_by_mean(means, higher_is_better), lambda m: fmt2(means[m]))


def runs_of_equal(ordered: list[str], key: Callable[[str], Any]) -> list[list[str]]:
    """``ordered`` in runs of equal ``key``."""
    return [list(run) for _, run in groupby(ordered, key)]


def item_values(scores: list[Score], model: str, metric: str) -> dict[str, float]:
    """``model``'s ok item-level ``metric`` values.

    Args:
        scores: the run's scores.
        model: a target model.
        metric: a metric name.

    Returns:
        item id -> value.
    """
    return {s.item_id: float(s.value) for s in _item_scores(scores, metric) if s.model == model}  # type: ignore[arg-type]


def _item_scores(scores: Iterable[Score], metric: str) -> Iterable[Score]:
    """The ok item-level scores of ``metric`` with a value."""
    return (s for s in scores if s.metric == metric and s.ok and s.value is not None and s.item_id != CORPUS)


def pair_separates(pair: dict[str, Any] | None) -> bool:
    """Whether the paired test of a :func:`pair_entry` ran and separates its two models (p < 0.05).

    Args:
        pair: the entry, or None.

    Returns:
        True when the pair is separated.
    """
    return pair is not None and pair.get("p") is not None and bool(pair.get("significant"))


def pair_entry(hi: ModelStat, lo: ModelStat, shared: int, result: PairStat | None) -> dict[str, Any]:
    """One adjacent-pair entry of the ranking (``hi`` ranked above ``lo``).

    Args:
        hi: the model ranked above.
        lo: the one below.
        shared: items both scored.
        result: their paired test (None: none run).

    Returns:
        ``a``, ``b``, ``n``, ``overlap`` (marginal 95% CIs overlap, None when unavailable), ``p`` (None when not
        tested); with a ``result`` also ``method``, ``mean_diff``, ``ci``, ``p_value`` (text) and ``significant``.
    """
    d: dict[str, Any] = {
        "a": hi.model,
        "b": lo.model,
        "n": shared,
        "p": None,
        "overlap": ci_overlap(hi.stats, lo.stats),
    }
    if result is not None:
        d.update(
            n=result.n,
            method=f"{result.method}, {hi.model} minus {lo.model}",
            mean_diff=fmt2(result.mean_diff),
            ci=(
                f"no variation over {count_phrase(result.n)}"
                if no_variation(result)
                else f"{fmt2(result.ci_low)} to {fmt2(result.ci_high)}"
            ),
            p_value=fmt_p(result.p_value),
            p=result.p_value,
            significant=result.p_value < 0.05,
        )
    return d


NOT_APPLICABLE_REASONS = (re.compile(r"^no accepted answers\b"),)
"""``not_run`` reasons meaning "nothing to score": SciAidanBench over 0 accepted answers (metric_pool/aidanbench.py)."""


def not_applicable(s: Score) -> bool:
    """Whether ``s`` is not applicable rather than failed (``not_run`` with that flag or reason).

    Args:
        s: a Score.

    Returns:
        True when not applicable.
    """
    return s.status == "not_run" and bool(
        (s.details or {}).get("not_applicable") or any(p.search(s.error or "") for p in NOT_APPLICABLE_REASONS)
    )


RANKING_HEADERS = ["rank", "target model", "mean per item", "95% CI (bootstrap)", "total", "n items", "failed"]

RANKING_KEYS = ("rank", "model", "mean", "ci", "total", "n", "failed")


def ranking_rows(stats: list[ModelStat], spec: MetricSpec, pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ranking table's rows as printed, in ``stats`` order (keys :data:`RANKING_KEYS`; ``pairs`` decide ties)."""
    ranked = [s for s in stats if s.summary is not None]
    labels = rank_labels(tie_groups(ranked, pairs))
    return [
        {
            "rank": labels[s.model] if sm else "unscored",
            "model": s.model,
            "mean": fmt2(sm.mean) if sm else "n/a",
            "ci": ("corpus-level, no CI" if s.corpus and not has_ci(sm) else ci_text(sm)) if sm else "n/a",
            "total": fmt_total(sm.total, spec) if sm else "n/a",
            "n": sm.n if sm else 0,
            "failed": s.failed
            if sm or not s.reason
            else s.reason
            if s.failed and " failed (" in s.reason and "not applicable" not in s.reason
            else f"{s.failed} ({s.reason})",
        }
        for s in stats
        for sm in [s.summary]
    ]


def by_metric(scores: Iterable[Score]) -> dict[str, list[Score]]:
    """``scores`` grouped by metric name, each group in the given order.

    Args:
        scores: any scores.

    Returns:
        metric name -> its scores.
    """
    out: dict[str, list[Score]] = defaultdict(list)
    for s in scores:
        out[s.metric].append(s)
    return out


def model_means(
    scores: Iterable[Score], metric: str, models: list[str], leave_out: Collection[str] = frozenset()
) -> dict[str, float]:
    """Each model's mean of its ok item-level ``metric`` values, leaving out the items ``leave_out``.

    Args:
        scores: the scores (any metric).
        metric: a metric name.
        models: the models (one without a value is left out).
        leave_out: item ids not counted.

    Returns:
        model -> mean.
    """
    vals: dict[str, list[float]] = {m: [] for m in models}
    for s in _item_scores(scores, metric):
        if s.model in vals and s.item_id not in leave_out:
            vals[s.model].append(float(s.value))  # type: ignore[arg-type]
    return {m: sum(v) / len(v) for m, v in vals.items() if v}


def ordered_by_mean(means: dict[str, float], higher_is_better: bool) -> list[str]:
    """The models of ``means`` best first, equal means in name order.

    Args:
        means: model -> mean.
        higher_is_better: the metric's direction.

    Returns:
        The models.
    """
    return sorted(means, key=lambda m: (-means[m] if higher_is_better else means[m], m))


def printed_tie_groups(means: dict[str, float], higher_is_better: bool) -> list[list[str]]:
    """The models of ``means`` best first, grouped where their means are equal at 2 decimals.

    Args:
        means: model -> mean.
        higher_is_better: the metric's direction.

    Returns:
        The groups, best first.
    """
    return runs_of_equal(ordered_by_mean(means, higher_is_better), lambda m: round(means[m], 2))
