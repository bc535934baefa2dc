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


# ----------------------------------------------------------------------------- paired comparison
@dataclass(frozen=True)
class PairedResult:
    """Paired comparison of two models on the items both have.

    ``n`` common items; ``mean_a``, ``mean_b`` their means over those items
    and ``mean_diff`` = mean(a - b) (same scale as the values); ``[ci_low,
    ci_high]`` the 95% paired bootstrap CI of ``mean_diff`` (NaN when n < 2;
    equal differences give a degenerate CI equal to ``mean_diff``);
    ``p_value`` two-sided, for H0 "no difference" (0-1); ``method``
    "permutation" or "bootstrap".
    """

    n: int
    mean_a: float
    mean_b: float
    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    method: str


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def paired_test(a: dict[str, float], b: dict[str, float], *, method: str = "permutation",
                n_resamples: int = 10000, seed: int = 0, confidence: float = 0.95) -> PairedResult:
    """Compare model A with model B on the items both scored (keys of ``a`` and ``b``
    = item ids, values = per-item scores on one metric's scale; items missing
    on either side or with a non-finite value are left out).

    - ``method="permutation"`` (default): paired sign-flip permutation test of
      the mean difference, ``scipy.stats.permutation_test(permutation_type=
      "samples")`` (each item's two values are swapped or not; exact
      enumeration when 2**n <= ``n_resamples``), two-sided.
    - ``method="bootstrap"``: bootstrap test of the mean difference
      (Efron & Tibshirani 1993, section 16.4): the differences are centred to
      satisfy H0, resampled ``n_resamples`` times, and
      p = (1 + #{|mean*| >= |observed mean|}) / (1 + n_resamples).

    Both methods report the ``confidence`` CI of mean(a - b) from
    ``scipy.stats.bootstrap(paired=True, method="BCa")`` (percentile when BCa
    is undefined).  Deterministic for a given ``seed``.
    Raises ValueError for an unknown ``method`` or when no item is common.
    """
    if method not in ("permutation", "bootstrap"):
        raise ValueError(f"paired_test: unknown method {method!r}; use 'permutation' or 'bootstrap'")
    keys = sorted(k for k in set(a) & set(b)
                  if math.isfinite(float(a[k])) and math.isfinite(float(b[k])))
    if not keys:
        raise ValueError("paired_test: the two models have no item with a finite score in common")
    x = np.array([float(a[k]) for k in keys])
    y = np.array([float(b[k]) for k in keys])
    d = x - y
    n = len(keys)
    mean_diff = float(d.mean())
    rng = np.random.default_rng(seed)

    # CI of the mean difference (paired bootstrap)
    if n < 2:
        lo = hi = math.nan
    elif np.all(d == d[0]):
        lo = hi = mean_diff
    else:
        lo = hi = math.nan
        for ci_method in ("BCa", "percentile"):
            res = stats.bootstrap((x, y), _mean_diff, paired=True, vectorized=True, confidence_level=confidence,
                                  n_resamples=n_resamples, method=ci_method, random_state=np.random.default_rng(seed))
            lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
            if not (math.isnan(lo) or math.isnan(hi)):
                break

    # p-value
    if np.all(d == 0) or n == 1:  # one item: flips {+d, -d}, two-sided 2 * 1/2 = 1
        p = 1.0
    elif method == "permutation":
        res = stats.permutation_test((x, y), _mean_diff, permutation_type="samples", vectorized=True,
                                     n_resamples=n_resamples, alternative="two-sided", random_state=rng)
        p = float(res.pvalue)
    else:
        centred = d - mean_diff
        idx = rng.integers(0, n, size=(n_resamples, n))
        boot = centred[idx].mean(axis=1)
        # tolerance guards the float noise of the centred means
        extreme = np.count_nonzero(np.abs(boot) >= abs(mean_diff) - 1e-12 * max(1.0, abs(mean_diff)))
        p = float((1 + extreme) / (1 + n_resamples))
    return PairedResult(n=n, mean_a=float(x.mean()), mean_b=float(y.mean()), mean_diff=mean_diff,
                        ci_low=lo, ci_high=hi, p_value=min(1.0, p), method=method)
