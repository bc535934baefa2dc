"""Aggregation of per-item scores: mean, total, 95% bootstrap CI.

Bootstrap: the BCa interval from ``scipy.stats.bootstrap``
(Efron & Tibshirani 1993), 95% confidence, resampling items with replacement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Summary:
    """``n`` values, their ``mean`` and ``total`` (same scale as the values),
    ``std`` (population), and the 95% bootstrap CI of the mean
    ``[ci_low, ci_high]`` (NaN when n < 2; equal
    values give a degenerate CI equal to the mean)."""

    n: int
    mean: float
    total: float
    std: float
    ci_low: float
    ci_high: float


def summarize(values: Sequence[float], *, n_resamples: int = 10000, seed: int = 0,
              confidence: float = 0.95) -> Summary:
    """Mean, total and a ``confidence`` bootstrap CI (scipy.stats.bootstrap,
    method "BCa", ``n_resamples`` resamples, ``seed``) of ``values``.
    Raises ValueError for an empty sequence."""
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        raise ValueError("summarize() needs at least one value")
    mean = float(x.mean())
    if x.size < 2:
        lo = hi = math.nan
    elif np.all(x == x[0]):
        lo = hi = mean
    else:
        res = stats.bootstrap((x,), np.mean, confidence_level=confidence, n_resamples=n_resamples,
                              method="BCa", random_state=np.random.default_rng(seed))
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isnan(lo) or math.isnan(hi):  # BCa can fail on very skewed data; fall back to percentile
            res = stats.bootstrap((x,), np.mean, confidence_level=confidence, n_resamples=n_resamples,
                                  method="percentile", random_state=np.random.default_rng(seed))
            lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return Summary(n=int(x.size), mean=mean, total=float(x.sum()), std=float(x.std()), ci_low=lo, ci_high=hi)
