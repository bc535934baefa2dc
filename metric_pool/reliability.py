"""Judge reliability per judged metric over units (item, target model) scored by two or more judges: Krippendorff's
alpha with a bootstrap CI over units (Hayes & Krippendorff 2007), judge offsets, leave-one-judge-out rankings,
self-preference, position bias of swapped votes (METRICS.md A.2) and test-retest alpha of ``--judge-repeats``.
Verdicts: Krippendorff (2004, *Content Analysis*, 2nd ed., 11.3.4): >= 0.800 reliable, >= 0.667 tentative."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..core import MetricSpec, ModelRef, Score, call_in_worker, same_model
from .stats import paired_test, summarize, unit_resamples

ALPHA_RELIABLE = 0.800
ALPHA_TENTATIVE = 0.667


def judge_values(score: Score) -> dict[str, float]:
    """{judge: that judge's value on the metric's own scale} of one judged Score.

    Args:
        score: a judged Score (``details["judge_values"]``, else ``details["per_judge"]``; rubric criteria give the
            weighted mean x 10).

    Returns:
        The per-judge values ({} when none).
    """
    d = score.details or {}
    if isinstance(d.get("judge_values"), dict):
        return {str(k): float(v) for k, v in d["judge_values"].items() if _finite(v)}
    per = d.get("per_judge")
    if not isinstance(per, dict):
        return {}
    weights = d.get("weights") if isinstance(d.get("weights"), dict) else None
    out: dict[str, float] = {}
    for judge, v in per.items():
        if _finite(v):
            out[judge] = float(v)
        elif isinstance(v, dict) and (own := [float(v[k]) for k in ("sla", "score") if _finite(v.get(k))]):
            out[judge] = own[0]
        elif isinstance(v, dict) and v and all(_finite(x) for x in v.values()):
            w = {c: float((weights or {}).get(c, 1.0)) for c in v}
            total = sum(w.values())
            if total > 0:
                out[judge] = 10.0 * sum(w[c] * float(s) for c, s in v.items()) / total
    return out


def with_added_judges(scores: Sequence[Score], added: Sequence[Score]) -> list[Score]:
    """The run's ``scores`` with the added judges' values beside their own in ``details["judge_values"]``; values
    and ranking unchanged.

    Args:
        scores: the run's scores.
        added: the added judges' scores, each naming its judge.

    Returns:
        ``scores``, in order, those an added judge also scored replaced by copies.
    """
    by_key: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for a in added:
        if a.ok and a.value is not None and _finite(a.value):
            by_key[(a.item_id, a.model, a.metric)][a.judge] = float(a.value)
    if not by_key:
        return list(scores)
    out = []
    for s in scores:
        extra = by_key.get((s.item_id, s.model, s.metric)) if s.ok else None
        own = judge_values(s) or ({s.judge: float(s.value)} if s.value is not None and "," not in s.judge else {})
        if extra and own and s.judge != "objective":
            judged = {**own, **{j: v for j, v in extra.items() if j not in own}}
            s = s.model_copy(update={"details": {**(s.details or {}), "judge_values": judged}})
        out.append(s)
    return out


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def alpha(matrix: np.ndarray, level: str = "interval") -> float | None:
    """Krippendorff's alpha of a (judges x units) matrix (NaN = not rated); None when undefined."""
    import krippendorff

    m = np.asarray(matrix, dtype=float)
    pairable = np.sum(~np.isnan(m), axis=0) >= 2
    if m.shape[0] < 2 or pairable.sum() < 2:
        return None
    vals = m[:, pairable]
    if np.unique(vals[~np.isnan(vals)]).size < 2:
        return None
    with np.errstate(all="ignore"):
        a = float(krippendorff.alpha(reliability_data=vals, level_of_measurement=level))  # type: ignore[arg-type]  # level: "interval" or "nominal" (checked by the callers)
    return a if math.isfinite(a) else None


def alpha_ci(
    matrix: np.ndarray, level: str = "interval", *, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap CI of :func:`alpha` over units (columns); (NaN, NaN) when undefined."""
    m = np.asarray(matrix, dtype=float)
    m = m[:, np.sum(~np.isnan(m), axis=0) >= 2]
    stats = unit_resamples(lambda idx: alpha(m[:, idx], level), m.shape[1], n_resamples=n_resamples, seed=seed)
    if not stats:
        return math.nan, math.nan
    tail = (1 - confidence) / 2 * 100
    return float(np.percentile(stats, tail)), float(np.percentile(stats, 100 - tail))


def _no_variation(lo: float, hi: float) -> bool:
    """Whether a bootstrap CI has zero width (it supports no verdict)."""
    return math.isfinite(lo) and math.isfinite(hi) and math.isclose(lo, hi, rel_tol=0.0, abs_tol=1e-12)


def _ci_cell(lo: float, hi: float, n: int) -> str:
    """A CI as the report prints it."""
    if _no_variation(lo, hi):
        return f"no variation over {n} units"
    return f"{_f(lo)} to {_f(hi)}"


@dataclass(frozen=True)
class Offset:
    """A judge's mean offset from the panel mean on the units it rated (metric's scale), with its 95% CI."""

    judge: str
    mean: float
    ci_low: float
    ci_high: float
    n: int


@dataclass(frozen=True)
class LeaveOneOut:
    """The ranking without ``dropped``, best first, and whether it changed against the full panel's."""

    dropped: str
    order: list[str]
    top_changed: bool
    order_changed: bool


@dataclass(frozen=True)
class SelfPreference:
    """``judge`` scoring ``target``, the same model: mean over ``n`` units of (judge - other judges' mean) with its 95%
    CI; ``significant`` when the CI excludes 0 (without variation: sign-flip test p < 0.05)."""

    judge: str
    target: str
    model: str
    diff: float
    ci_low: float
    ci_high: float
    n: int
    significant: bool


@dataclass(frozen=True)
class Reliability:
    """Judge reliability of one judged metric; ``retest*``: per judge, the alpha between its repeats, its CI and
    (units rated by two or more repeats, k)."""

    metric: str
    level: str
    judges: list[str]
    n_units: int
    alpha: float | None
    alpha_ci: tuple[float, float]
    offsets: list[Offset]
    full_order: list[str]
    leave_one_out: list[LeaveOneOut]
    self_preference: list[SelfPreference]
    position_flip_share: float | None = None
    position_pairs: int = 0
    retest: dict[str, float | None] = field(default_factory=dict)
    retest_ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    retest_units: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """One sentence: do the judges agree enough for the ranking to stand?"""
        m, n, k = self.metric, self.n_units, len(self.judges)
        if k < 2:
            return (
                f"On {m} one judge ({', '.join(self.judges) or 'none'}) scored the items, so agreement "
                "between judges cannot be measured."
            )
        if self.alpha is None:
            return (
                f"Judge agreement on {m} is undefined ({n} units rated by 2 or more judges, "
                "or no variation), so the panel's reliability is unknown."
            )
        lo, hi = self.alpha_ci
        head = f"On {m}, Krippendorff's alpha across {k} judges is {self.alpha:.2f}"
        if _no_variation(lo, hi):  # a degenerate bootstrap CI: it measures no uncertainty, so it supports no verdict
            why = f"bootstrap 95% CI is degenerate (every resample of the {n} units gives alpha {self.alpha:.2f})"
            if self.alpha == 1.0:  # D_o = 0 with D_e > 0: equal values within each unit, varying between units
                head += f" over {n} units: the judges gave equal values on every unit, while the values vary between units. Its {why}"
            else:
                head += f" over {n} units, and its {why}"
            return (
                f"{head}, so it measures no uncertainty, and {n} units are too few to establish the judges' agreement."
            )
        if self.alpha >= ALPHA_RELIABLE and math.isfinite(lo) and lo < ALPHA_TENTATIVE:
            judgement = (
                "alpha is above 0.800 but its CI reaches below 0.667, so with these few units the judges' "
                "agreement is not established (Krippendorff 2004 thresholds)"
            )
        elif self.alpha >= ALPHA_RELIABLE:
            judgement = "the judges agree well enough for the ranking to stand (alpha >= 0.800, Krippendorff 2004)"
        elif self.alpha >= ALPHA_TENTATIVE:
            judgement = (
                "the judges agree only enough for tentative conclusions (0.667 <= alpha < 0.800, Krippendorff 2004)"
            )
        else:
            judgement = "the judges do not agree enough for the ranking to stand (alpha < 0.667, Krippendorff 2004)"
        ci = f" (95% CI {lo:.2f} to {hi:.2f})" if math.isfinite(lo) and math.isfinite(hi) else ""
        return f"{head}{ci}: {judgement}."


def _order(means: dict[str, float], higher_is_better: bool) -> list[str]:
    return sorted(means, key=lambda m: (-means[m] if higher_is_better else means[m], m))


def _model_means(units: dict[tuple[str, str], dict[str, float]], judges: Sequence[str]) -> dict[str, float]:
    per_model: dict[str, list[float]] = defaultdict(list)
    for (_, model), vals in units.items():
        vs = [vals[j] for j in judges if j in vals]
        if vs:
            per_model[model].append(sum(vs) / len(vs))
    return {m: sum(v) / len(v) for m, v in per_model.items() if v}


def _mean_ci(values: Sequence[float], seed: int, n_resamples: int) -> tuple[float, float, float]:
    # differences are never a 0/1 metric (a list of zeros is no "0 of n correct"): a bootstrap, not Wilson
    s = call_in_worker(summarize, list(values), n_resamples=n_resamples, seed=seed, binary=False)
    return s.mean, s.ci_low, s.ci_high


def position_flips(scores: Sequence[Score], dims: set[str] | None = None) -> tuple[float | None, int]:
    """(share of (judge, item, model, dimension) vote pairs whose verdict differs between the two presentation orders,
    number of pairs) from idea-generation evidence (METRICS.md A.2), in ``dims`` only when given; (None, 0) if none."""
    pairs: dict[tuple[str, str, str, str], dict[str, str]] = {}
    for s in scores:
        for e in s.evidence or []:
            ev: dict[str, Any] = e if isinstance(e, dict) else getattr(e, "model_dump", lambda: {})()
            ev = {**(ev.get("details") or {}), **ev}  # typed judge_reply evidence keeps order/votes in details
            votes, order, judge = ev.get("votes"), ev.get("order"), ev.get("judge")
            if not isinstance(votes, dict) or not order or not judge:
                continue
            for dim, v in votes.items():
                if dims is not None and dim not in dims:
                    continue
                verdict = v.get("judgment") if isinstance(v, dict) else None
                if verdict:
                    pairs.setdefault((judge, s.item_id, s.model, dim), {})[str(order)] = verdict
    both = [p for p in pairs.values() if len(p) == 2]
    if not both:
        return None, 0
    flips = sum(1 for p in both if len(set(p.values())) > 1)
    return flips / len(both), len(both)


def _offsets(units: dict, keys: list, judges: list[str], seed: int, n_resamples: int) -> list[Offset]:
    out = []
    for j in judges:
        diffs = [
            units[k][j] - sum(units[k].values()) / len(units[k]) for k in keys if j in units[k] and len(units[k]) >= 2
        ]
        if diffs:
            out.append(Offset(j, *_mean_ci(diffs, seed, n_resamples), len(diffs)))
    return out


def _self_preferences(units: dict, keys: list, judges: list[str], seed: int, n_resamples: int) -> list[SelfPreference]:
    out = []
    targets = sorted({k[1] for k in keys})
    for j, t in ((j, t) for j in judges for t in targets if same_model(j, t)):
        diffs = [
            units[k][j] - sum(v for x, v in units[k].items() if x != j) / (len(units[k]) - 1)
            for k in keys
            if k[1] == t and j in units[k] and len(units[k]) >= 2
        ]
        if diffs:
            mean, lo, hi = _mean_ci(diffs, seed, n_resamples)
            if _no_variation(lo, hi):  # a CI without variation decides nothing: the sign-flip test (diffs vs 0) does
                flips = {str(n): d for n, d in enumerate(diffs)}
                sig = (
                    bool(mean)
                    and paired_test(flips, dict.fromkeys(flips, 0.0), n_resamples=n_resamples, seed=seed).p_value < 0.05
                )
            else:
                sig = math.isfinite(lo) and math.isfinite(hi) and (lo > 0 or hi < 0)
            out.append(SelfPreference(j, t, ModelRef.parse(t).identity, mean, lo, hi, len(diffs), sig))
    return out


def _retest(repeats: dict, level: str, seed: int, n_resamples: int) -> tuple[dict, dict, dict]:
    """({judge: alpha between its repeats}, {judge: its CI}, {judge: (units rated twice or more, k)})."""
    retest: dict[str, float | None] = {}
    retest_ci: dict[str, tuple[float, float]] = {}
    retest_units: dict[str, tuple[int, int]] = {}
    for j, per_unit in sorted(repeats.items()):
        k = max(len(v) for v in per_unit.values())
        rkeys = sorted(per_unit)
        rm = np.array([[per_unit[u][r] if r < len(per_unit[u]) else np.nan for u in rkeys] for r in range(k)])
        retest[j] = alpha(rm, level)
        nan2 = (math.nan, math.nan)
        retest_ci[j] = alpha_ci(rm, level, n_resamples=n_resamples, seed=seed) if retest[j] is not None else nan2
        retest_units[j] = (int(np.sum(np.sum(~np.isnan(rm), axis=0) >= 2)), k)
    return retest, retest_ci, retest_units


def reliability(
    scores: Sequence[Score], spec: MetricSpec | None = None, *, n_resamples: int = 1000, seed: int = 0
) -> Reliability | None:
    """Judge reliability of one metric's per-item ``scores`` scored by a panel.

    Args:
        scores: the metric's per-item Scores (status ``ok`` only count; ``judge_repeats`` feed test-retest).
        spec: the metric's spec (direction; 0/1 metrics are nominal).
        n_resamples: resamples of the bootstrap CIs and sign-flip tests.

    Returns:
        The :class:`Reliability`, or None with fewer than two judges (and no repeat or vote pair).
    """
    units: dict[tuple[str, str], dict[str, float]] = {}
    repeats: dict[str, dict[tuple[str, str], list[float]]] = defaultdict(dict)
    metric = spec.name if spec is not None else (scores[0].metric if scores else "")
    for s in scores:
        if s.status != "ok":
            continue
        vals = judge_values(s)
        if vals:
            units[(s.item_id, s.model)] = vals
        for j, reps in ((s.details or {}).get("judge_repeats") or {}).items():
            if isinstance(reps, list) and len(reps) >= 2:  # a failed repeat (None) stays a missing value
                repeats[j][(s.item_id, s.model)] = [float(x) if _finite(x) else math.nan for x in reps]
    judges = sorted({j for v in units.values() for j in v} | set(repeats))
    # a pairwise-vote metric (idea generation, A.2) counts position flips on its own dimension only
    dims = {str(s.details["dimension"]) for s in scores if (s.details or {}).get("dimension")} or None
    share, n_pairs = position_flips(scores, dims)
    if not judges or (len(judges) < 2 and not repeats and not n_pairs):
        return None
    keys = sorted(units)
    m = np.array([[units[k].get(j, np.nan) for k in keys] for j in judges], dtype=float)
    binary = spec is not None and spec.range == (0.0, 1.0) and set(m[~np.isnan(m)].tolist()) <= {0.0, 1.0}
    level = "nominal" if binary else "interval"
    a = alpha(m, level)
    ci = alpha_ci(m, level, n_resamples=n_resamples, seed=seed) if a is not None else (math.nan, math.nan)
    hib = spec.higher_is_better if spec is not None else True
    full = _order(_model_means(units, judges), hib)
    loo = []
    for j in judges if len(judges) >= 2 else []:
        order = _order(_model_means(units, [x for x in judges if x != j]), hib)
        loo.append(LeaveOneOut(j, order, bool(order and full and order[0] != full[0]), order != full))
    retest, retest_ci, retest_units = _retest(repeats, level, seed, n_resamples)
    return Reliability(
        metric=metric,
        level=level,
        judges=judges,
        n_units=int(np.sum(np.sum(~np.isnan(m), axis=0) >= 2)),
        alpha=a,
        alpha_ci=ci,
        offsets=_offsets(units, keys, judges, seed, n_resamples),
        full_order=full,
        leave_one_out=loo,
        self_preference=_self_preferences(units, keys, judges, seed, n_resamples),
        position_flip_share=share,
        position_pairs=n_pairs,
        retest=retest,
        retest_ci=retest_ci,
        retest_units=retest_units,
    )


def _f(x: float | None) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.2f}"


def _yes(b: bool) -> str:
    return "yes" if b else "no"


def reliability_rows(rel: Reliability) -> dict[str, Any]:
    """Plain data for the report: formatted table rows and sentences.

    Args:
        rel: the judge-reliability statistics.

    Returns:
        The rows and sentences the judge-reliability section reads.
    """
    nan2 = (math.nan, math.nan)
    units = {j: rel.retest_units.get(j, (0, 0)) for j in rel.retest}
    head = [rel.metric, rel.level, ", ".join(rel.judges), str(rel.n_units)]
    share = rel.position_flip_share
    position = (
        None if share is None else f"{share:.1%} of {rel.position_pairs} order-swapped vote pairs changed verdict"
    )
    return {
        "metric": rel.metric,
        "verdict": rel.verdict,
        "agreement": [[*head, _f(rel.alpha), _ci_cell(*rel.alpha_ci, rel.n_units)]],
        "offsets": [[o.judge, _f(o.mean), _ci_cell(o.ci_low, o.ci_high, o.n), str(o.n)] for o in rel.offsets],
        "leave_one_out": [
            [lo.dropped, " > ".join(lo.order), _yes(lo.top_changed), _yes(lo.order_changed)] for lo in rel.leave_one_out
        ],
        "self_preference": [
            [p.judge, p.target, p.model, _f(p.diff), _ci_cell(p.ci_low, p.ci_high, p.n), str(p.n), _yes(p.significant)]
            for p in rel.self_preference
        ],
        "n_judges": len(rel.judges),
        "retest_sentence": _retest_sentence(rel),
        "position": position,
        "retest": [
            [j, str(units[j][1]), str(units[j][0]), _f(a), _ci_cell(*rel.retest_ci.get(j, nan2), units[j][0])]
            for j, a in rel.retest.items()
        ],
        "significant_self_preference": [
            f"{p.judge} scores {p.target} (the same model: {p.model}) {_f(p.diff)} above the other judges ("
            + (
                f"the same on all {p.n} units: no variation, so the sign-flip test decides"
                if _no_variation(p.ci_low, p.ci_high)
                else f"95% CI {_f(p.ci_low)} to {_f(p.ci_high)}"
            )
            + ")"
            for p in rel.self_preference
            if p.significant
        ],
    }


def _read(a: float | None, lo: float, hi: float) -> str:
    """The Krippendorff (2004) reading of a test-retest alpha and its CI."""
    if a is None:
        return "undefined"
    if _no_variation(lo, hi):
        return "not established (no variation over the resampled units)"
    if a >= ALPHA_RELIABLE and math.isfinite(lo) and lo < ALPHA_TENTATIVE:
        return "not established (its CI reaches below 0.667)"
    return "reliable" if a >= ALPHA_RELIABLE else "tentative only" if a >= ALPHA_TENTATIVE else "not reliable"


def _retest_sentence(rel: Reliability) -> str:
    """One sentence on the judges' test-retest agreement ("" without repeats)."""
    if not rel.retest:
        return ""
    parts = []
    for j, a in rel.retest.items():
        lo, hi = rel.retest_ci.get(j, (math.nan, math.nan))
        n_units, k = rel.retest_units.get(j, (0, 0))
        finite = math.isfinite(lo) and math.isfinite(hi)
        ci = f" ({'' if _no_variation(lo, hi) else '95% CI '}{_ci_cell(lo, hi, n_units)})" if finite else ""
        parts.append(f"{j} {_f(a)}{ci} over {k} repeats, {_read(a, lo, hi)}")
    return (
        f"Test-retest agreement on {rel.metric} (Krippendorff's alpha between a judge's repeats; Krippendorff "
        "2004 thresholds): " + "; ".join(parts) + "."
    )
