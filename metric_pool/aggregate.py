"""Aggregation of per-item scores: mean, total, 95% CI.

Bootstrap: the BCa interval from ``scipy.stats.bootstrap``
(Efron & Tibshirani 1993), 95% confidence, resampling items with replacement.
Binary (0/1) values get the Wilson score interval of a proportion instead
(Wilson 1927; ``scipy.stats.binomtest(...).proportion_ci(method="wilson")``),
which stays informative at the edges: 8 of 8 correct gives 0.68 to 1, where a
bootstrap gives the degenerate "1 to 1".  Every interval
says how it was made (``Summary.method``) and, when it is degenerate or
unavailable, why (``Summary.note``).
``scipy.stats`` is imported by the first computation that needs it, not with
this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class Summary:
    """``n`` values, their ``mean`` and ``total`` (same scale as the values),
    ``std`` (population), and the 95% CI of the mean ``[ci_low, ci_high]``.

    ``method``: ``"wilson"`` (0/1 values: Wilson score interval of the
    proportion), ``"bca"`` or ``"percentile"`` (bootstrap over items),
    ``"degenerate"`` (every value equal and not 0/1: zero width, equal to the
    mean) or ``"none"`` (NaN: fewer than 2 values).  ``note`` says why an
    interval is degenerate, unavailable or not BCa ("" otherwise)."""

    n: int
    mean: float
    total: float
    std: float
    ci_low: float
    ci_high: float
    method: str = "bca"
    note: str = ""


def is_binary(x: np.ndarray) -> bool:
    """True when every value is exactly 0 or 1 (a 0/1 metric such as exact match)."""
    return bool(x.size) and bool(np.all((x == 0) | (x == 1)))


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion with ``k`` successes in ``n`` trials
    (Wilson 1927), via ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``:
    center (p + z²/2n)/(1 + z²/n), half-width z/(1 + z²/n)·sqrt(p(1-p)/n + z²/4n²).
    8 of 8 at 95% -> (0.6756, 1.0).  Raises ValueError for n < 1 or k outside 0..n."""
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"wilson_interval needs 0 <= k <= n and n >= 1, got k={k}, n={n}")
    from scipy import stats

    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def summarize(
    values: Sequence[float],
    *,
    n_resamples: int = 10000,
    seed: int = 0,
    confidence: float = 0.95,
    binary: bool | None = None,
) -> Summary:
    """Mean, total and a ``confidence`` CI of ``values`` (see :class:`Summary`).

    ``binary`` None (default) detects 0/1 values (:func:`is_binary`); True/False
    forces the choice.  Binary values get :func:`wilson_interval` (also for one
    value).  Others: ``scipy.stats.bootstrap`` with method "BCa" (``n_resamples``
    resamples, ``seed``), percentile when BCa is undefined; fewer than 2 values
    give NaN and equal values a zero-width interval, each with its ``note``.
    Raises ValueError for an empty sequence.

    Args:
        values: per-item scores on the metric's scale.
        n_resamples: bootstrap resamples (>= 1).
        seed: the random seed.
        confidence: the CI level, in (0, 1).
        binary: the values are 0/1 (Wilson interval); None: decided from the values.

    Returns:
        The Summary: mean, CI, total, n and the interval's method.
    """
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        raise ValueError("summarize() needs at least one value")
    mean = float(x.mean())
    method, note = "bca", ""
    if is_binary(x) if binary is None else binary:
        k = int(x.sum())
        lo, hi = wilson_interval(k, int(x.size), confidence)
        method = "wilson"
        note = f"Wilson score interval for {k} of {x.size} (a 0/1 metric)"
    elif x.size < 2:
        lo = hi = math.nan
        method, note = "none", "no CI: fewer than 2 items"
    elif np.all(x == x[0]):
        lo = hi = mean
        method = "degenerate"
        note = f"zero-width interval: all {x.size} values equal {x[0]:g}, so every bootstrap resample does"
    else:
        from scipy import stats

        res = stats.bootstrap(
            (x,),
            np.mean,
            confidence_level=confidence,
            n_resamples=n_resamples,
            method="BCa",
            random_state=np.random.default_rng(seed),
        )
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isnan(lo) or math.isnan(hi):  # BCa can fail on very skewed data; fall back to percentile
            res = stats.bootstrap(
                (x,),
                np.mean,
                confidence_level=confidence,
                n_resamples=n_resamples,
                method="percentile",
                random_state=np.random.default_rng(seed),
            )
            lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
            method, note = "percentile", "percentile bootstrap: the BCa interval is undefined for these values"
    return Summary(
        n=int(x.size),
        mean=mean,
        total=float(x.sum()),
        std=float(x.std()),
        ci_low=lo,
        ci_high=hi,
        method=method,
        note=note,
    )


# ----------------------------------------------------------------------------- paired comparison
@dataclass(frozen=True)
class PairedResult:
    """Paired comparison of two models on the items both have.

    ``n`` common items; ``mean_a``, ``mean_b`` their means over those items
    and ``mean_diff`` = mean(a - b) (same scale as the values); ``[ci_low,
    ci_high]`` the 95% paired bootstrap CI of ``mean_diff`` (NaN when n < 2;
    equal differences give a degenerate CI equal to ``mean_diff``);
    ``p_value`` two-sided, for H0 "no difference" (0-1); ``method``
    "permutation" or "bootstrap"; ``ci_note`` says why the CI is degenerate
    or unavailable ("" otherwise).
    """

    n: int
    mean_a: float
    mean_b: float
    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    method: str
    ci_note: str = ""


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def paired_test(
    a: dict[str, float],
    b: dict[str, float],
    *,
    method: str = "permutation",
    n_resamples: int = 10000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairedResult:
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

    Args:
        a: model A's per-item scores.
        b: model B's per-item scores.
        method: ``"permutation"`` or ``"bootstrap"``.
        n_resamples: resamples (>= 1).
        seed: the random seed.
        confidence: the CI level, in (0, 1).

    Returns:
        The PairedResult: mean difference, its CI, p value, n.

    Raises:
        ValueError: an unknown ``method``, or no common item.
    """
    if method not in ("permutation", "bootstrap"):
        raise ValueError(f"paired_test: unknown method {method!r}; use 'permutation' or 'bootstrap'")
    keys = sorted(k for k in set(a) & set(b) if math.isfinite(float(a[k])) and math.isfinite(float(b[k])))
    if not keys:
        raise ValueError("paired_test: the two models have no item with a finite score in common")
    x = np.array([float(a[k]) for k in keys])
    y = np.array([float(b[k]) for k in keys])
    d = x - y
    n = len(keys)
    mean_diff = float(d.mean())
    rng = np.random.default_rng(seed)
    from scipy import stats

    # CI of the mean difference (paired bootstrap)
    ci_note = ""
    if n < 2:
        lo = hi = math.nan
        ci_note = "no CI: fewer than 2 common items"
    elif np.all(d == d[0]):
        lo = hi = mean_diff
        ci_note = (
            f"zero-width interval: the difference is {d[0]:g} on all {n} common items, so every bootstrap "
            "resample gives it"
        )
    else:
        lo = hi = math.nan
        for ci_method in ("BCa", "percentile"):
            res = stats.bootstrap(
                (x, y),
                _mean_diff,
                paired=True,
                vectorized=True,
                confidence_level=confidence,
                n_resamples=n_resamples,
                method=ci_method,
                random_state=np.random.default_rng(seed),
            )
            lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
            if not (math.isnan(lo) or math.isnan(hi)):
                if ci_method == "percentile":
                    ci_note = "percentile bootstrap: the BCa interval is undefined for these differences"
                break

    # p-value
    if np.all(d == 0) or n == 1:  # one item: flips {+d, -d}, two-sided 2 * 1/2 = 1
        p = 1.0
    elif method == "permutation":
        res = stats.permutation_test(
            (x, y),
            _mean_diff,
            permutation_type="samples",
            vectorized=True,
            n_resamples=n_resamples,
            alternative="two-sided",
            random_state=rng,
        )
        p = float(res.pvalue)
    else:
        centred = d - mean_diff
        idx = rng.integers(0, n, size=(n_resamples, n))
        boot = centred[idx].mean(axis=1)
        # tolerance guards the float noise of the centred means
        extreme = np.count_nonzero(np.abs(boot) >= abs(mean_diff) - 1e-12 * max(1.0, abs(mean_diff)))
        p = float((1 + extreme) / (1 + n_resamples))
    return PairedResult(
        n=n,
        mean_a=float(x.mean()),
        mean_b=float(y.mean()),
        mean_diff=mean_diff,
        ci_low=lo,
        ci_high=hi,
        p_value=min(1.0, p),
        method=method,
        ci_note=ci_note,
    )
