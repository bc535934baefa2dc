"""Agreement of a judge with human labels by the metric's scale: quadratic-weighted Cohen's kappa (Cohen 1968) for
integer scales, Spearman's rho for continuous ones, TPR/TNR and kappa for 0/1; plus the mean signed difference (judge
minus label) and n, each with a 95% percentile bootstrap CI over units (1,000 seeded resamples)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence

import numpy as np

from .stats import unit_resamples


Scale = Literal["ordinal", "continuous", "binary"]


@dataclass(frozen=True)
class Statistic:
    """One agreement statistic on all labelled units (None when undefined) with its 95% bootstrap interval (None when
    undefined or without variation); ``n`` units (for tpr / tnr: those labelled 1 / 0)."""

    name: str
    value: float | None
    low: float | None
    high: float | None
    n: int


@dataclass(frozen=True)
class Agreement:
    """How ``judge`` (or ``"panel"``) agrees with the labels on ``metric`` (``criterion`` None: its own value)."""

    judge: str
    metric: str
    criterion: str | None
    scale: Scale
    n: int
    statistics: list[Statistic] = field(default_factory=list)

    def get(self, name: str) -> Statistic | None:
        """The statistic called ``name``, or None."""
        return next((s for s in self.statistics if s.name == name), None)


def _scale_of(low: float, high: float, values: Sequence[float]) -> Scale:
    """``binary`` (range 0..1, 0/1 values), ``ordinal`` (integers on a range of at most 21 points) or ``continuous``."""
    ints = all(float(v).is_integer() for v in values)
    if (low, high) == (0, 1) and all(v in (0, 1) for v in values):
        return "binary"
    if ints and float(low).is_integer() and float(high).is_integer() and 0 < high - low <= 20:
        return "ordinal"
    return "continuous"


def _kappa(weights: str | None, labels: Sequence[int]) -> Callable[[np.ndarray, np.ndarray], float]:
    """Cohen's kappa over the categories ``labels`` (quadratic weights, or none): 1 - sum(w O) / sum(w E), O the observed
    confusion proportions, E the product of the marginals (Cohen 1968; as sklearn's ``cohen_kappa_score``)."""
    cats = np.asarray(list(labels), dtype=float)
    k = cats.size
    idx = np.arange(k)
    w = (idx[:, None] - idx[None, :]) ** 2 if weights == "quadratic" else (idx[:, None] != idx[None, :]).astype(float)

    def stat(judge: np.ndarray, human: np.ndarray) -> float:
        hi = np.searchsorted(cats, human)
        ji = np.searchsorted(cats, judge)
        if np.unique(np.concatenate([hi, ji])).size < 2:
            return math.nan
        observed = np.zeros((k, k))
        np.add.at(observed, (hi, ji), 1.0)
        observed /= observed.sum()
        expected = np.outer(observed.sum(1), observed.sum(0))
        denom = float((w * expected).sum())
        return math.nan if denom == 0 else 1.0 - float((w * observed).sum()) / denom

    return stat


def _spearman(judge: np.ndarray, human: np.ndarray) -> float:
    from scipy.stats import spearmanr

    if np.ptp(judge) == 0 or np.ptp(human) == 0:
        return math.nan
    return float(spearmanr(judge, human).statistic)


def _rate(positive: int) -> Callable[[np.ndarray, np.ndarray], float]:
    def stat(judge: np.ndarray, human: np.ndarray) -> float:
        mask = human == positive
        return float(np.mean(judge[mask] == positive)) if mask.any() else math.nan

    return stat


def _with_ci(
    name: str, stat: Callable[[np.ndarray, np.ndarray], float], judge: np.ndarray, human: np.ndarray, n: int, seed: int
) -> Statistic:
    value = stat(judge, human)
    if not math.isfinite(value):
        return Statistic(name, None, None, None, n)
    if judge.size < 3:
        return Statistic(name, value, None, None, n)
    draws = unit_resamples(lambda i: stat(judge[i], human[i]), judge.size, n_resamples=1000, seed=seed)
    if len(draws) < 100 or float(np.ptp(draws)) == 0.0:
        return Statistic(name, value, None, None, n)  # no variation over the resamples: no interval
    low, high = np.percentile(draws, [2.5, 97.5])
    return Statistic(name, value, float(low), float(high), n)


def agreement(
    judge_scores: Sequence[float],
    labels: Sequence[float],
    *,
    value_range: tuple[float, float],
    judge: str,
    metric: str,
    criterion: str | None = None,
    seed: int = 0,
) -> Agreement:
    """Agreement statistics of one judge with the labels on paired units.

    Args:
        judge_scores: the judge's value per labelled unit.
        labels: the human label per unit, same order and scale.
        value_range: the declared (min, max) of the scale.
        judge: the judge's name (``"panel"`` for the panel aggregate).
        criterion: the criterion name, or None for the whole metric.
        seed: seed of the bootstrap resampling.

    Returns:
        An :class:`Agreement`.

    Raises:
        ValueError: the two sequences differ in length or hold non-finite values.
    """
    j = np.asarray(judge_scores, dtype=float)
    h = np.asarray(labels, dtype=float)
    if j.shape != h.shape or j.ndim != 1:
        raise ValueError(f"judge scores and labels must be two sequences of one length, got {j.shape}, {h.shape}")
    if not (np.isfinite(j).all() and np.isfinite(h).all()):
        raise ValueError("judge scores and labels must be finite numbers")
    low, high = value_range
    scale = _scale_of(low, high, [*j.tolist(), *h.tolist()])
    n = int(j.size)
    stats: list[Statistic] = []
    if scale == "ordinal":
        cats = list(range(int(low), int(high) + 1))
        stats.append(_with_ci("weighted_kappa", _kappa("quadratic", cats), j, h, n, seed))
    elif scale == "binary":
        stats.append(_with_ci("tpr", _rate(1), j, h, int((h == 1).sum()), seed))
        stats.append(_with_ci("tnr", _rate(0), j, h, int((h == 0).sum()), seed))
        stats.append(_with_ci("kappa", _kappa(None, [0, 1]), j, h, n, seed))
    else:
        stats.append(_with_ci("spearman", _spearman, j, h, n, seed))
    if n:
        stats.append(_with_ci("mean_difference", lambda x, y: float(np.mean(x - y)), j, h, n, seed))
    return Agreement(judge=judge, metric=metric, criterion=criterion, scale=scale, n=n, statistics=stats)
