"""The statistics of the reports, each formula once with its source: CIs of a mean, paired tests, bootstrap over
units, power, and the anytime-valid confidence sequences of ``--until-settled``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np


@dataclass(frozen=True)
class Summary:
    """``n`` values, their mean, total, population std and the 95% CI of the mean; ``method`` ``"wilson"``, ``"bca"``,
    ``"percentile"``, ``"degenerate"`` (all equal: zero width) or ``"none"`` (fewer than 2 values: NaN)."""

    n: int
    mean: float
    total: float
    std: float
    ci_low: float
    ci_high: float
    method: str = "bca"
    note: str = ""


def _bootstrap_ci(
    v: np.ndarray, data: tuple, statistic: Callable, confidence: float, n_resamples: int, seed: int, **kw: Any
) -> tuple[float, float, str]:
    """(low, high, kind) of the CI of ``statistic`` over ``v``: ``"none"`` (fewer than 2 values: NaN),
    ``"degenerate"`` (all equal: zero width at the mean), else ``scipy.stats.bootstrap`` BCa (``"bca"``), percentile
    (``"percentile"``) when BCa is NaN."""
    from scipy import stats

    if v.size < 2:
        return math.nan, math.nan, "none"
    if np.all(v == v[0]):
        return float(v.mean()), float(v.mean()), "degenerate"
    for method in ("BCa", "percentile"):
        ci = stats.bootstrap(
            data,
            statistic,
            confidence_level=confidence,
            n_resamples=n_resamples,
            method=method,
            random_state=np.random.default_rng(seed),
            **kw,
        ).confidence_interval
        lo, hi = float(ci.low), float(ci.high)
        if not (math.isnan(lo) or math.isnan(hi)):
            break
    return lo, hi, method.lower()


def summarize(
    values: Sequence[float],
    *,
    n_resamples: int = 10000,
    seed: int = 0,
    confidence: float = 0.95,
    binary: bool | None = None,
) -> Summary:
    """Mean, total and CI of ``values``: 0/1 values get the Wilson interval, others the BCa bootstrap over items (Efron
    & Tibshirani 1993), percentile where BCa is undefined.

    Args:
        values: per-item scores on the metric's scale.
        n_resamples: bootstrap resamples (>= 1).
        confidence: the CI level, in (0, 1).
        binary: the values are 0/1 (Wilson interval); None: decided from the values.

    Returns:
        The Summary.

    Raises:
        ValueError: no value.
    """
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        raise ValueError("summarize() needs at least one value")
    mean = float(x.mean())
    if np.all((x == 0) | (x == 1)) if binary is None else binary:
        k = int(x.sum())
        # Wilson 1927: center (p + z²/2n)/(1 + z²/n), half-width z/(1 + z²/n)·sqrt(p(1-p)/n + z²/4n²)
        from scipy import stats

        ci = stats.binomtest(k, int(x.size)).proportion_ci(confidence_level=confidence, method="wilson")
        lo, hi = float(ci.low), float(ci.high)
        method, note = "wilson", f"Wilson score interval for {k} of {x.size} (a 0/1 metric)"
    else:
        lo, hi, method = _bootstrap_ci(x, (x,), np.mean, confidence, n_resamples, seed)
        note = {
            "none": "no CI: fewer than 2 items",
            "degenerate": f"zero-width interval: all {x.size} values equal {x[0]:g}, so every bootstrap resample does",
            "percentile": "percentile bootstrap: the BCa interval is undefined for these values",
        }.get(method, "")
    return Summary(int(x.size), mean, float(x.sum()), float(x.std()), lo, hi, method, note)


@dataclass(frozen=True)
class PairedResult:
    """Paired comparison on ``n`` common items: ``mean_diff`` = mean(a - b), its 95% paired bootstrap CI, two-sided
    ``p_value``."""

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
    """Compare models A and B on the items both scored with a finite value, two-sided, deterministic per ``seed``.
    ``"permutation"``: paired sign-flip test (``scipy.stats.permutation_test(permutation_type="samples")``, exact when
    2**n <= ``n_resamples``). ``"bootstrap"``: centred differences resampled, p = (1 + #{|mean*| >= |mean|}) / (1 +
    n_resamples) (Efron & Tibshirani 1993, 16.4). CI: ``scipy.stats.bootstrap(paired=True)``, BCa.

    Args:
        a: model A's item id -> score.
        b: model B's per-item scores.
        method: ``"permutation"`` or ``"bootstrap"``.
        n_resamples: resamples (>= 1).
        confidence: the CI level, in (0, 1).

    Returns:
        The PairedResult.

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
    lo, hi, kind = _bootstrap_ci(d, (x, y), _mean_diff, confidence, n_resamples, seed, paired=True, vectorized=True)
    ci_note = {
        "none": "no CI: fewer than 2 common items",
        "degenerate": f"zero-width interval: the difference is {d[0]:g} on all {n} common items, so every bootstrap "
        "resample gives it",
        "percentile": "percentile bootstrap: the BCa interval is undefined for these differences",
    }.get(kind, "")
    if np.all(d == 0) or n == 1:  # one item: flips {+d, -d}, two-sided 2 * 1/2 = 1
        p = 1.0
    elif method == "permutation":
        from scipy import stats

        p = float(
            stats.permutation_test(
                (x, y),
                _mean_diff,
                permutation_type="samples",
                vectorized=True,
                n_resamples=n_resamples,
                alternative="two-sided",
                random_state=rng,
            ).pvalue
        )
    else:
        boot = (d - mean_diff)[rng.integers(0, n, size=(n_resamples, n))].mean(axis=1)
        # tolerance guards the float noise of the centred means
        extreme = np.count_nonzero(np.abs(boot) >= abs(mean_diff) - 1e-12 * max(1.0, abs(mean_diff)))
        p = float((1 + extreme) / (1 + n_resamples))
    return PairedResult(n, float(x.mean()), float(y.mean()), mean_diff, lo, hi, min(1.0, p), method, ci_note)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment (Holm 1979, Scand. J. Statist. 6:65-70): the i-th smallest of m p-values becomes
    max over j <= i of min(1, (m - j + 1) p_(j)); controls the family-wise error rate.

    Args:
        p_values: the unadjusted p-values (0-1).

    Returns:
        The adjusted p-values, in the order given.
    """
    m = len(p_values)
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda k: p_values[k])):
        running = max(running, min(1.0, (m - rank) * float(p_values[i])))
        out[i] = running
    return out


def unit_resamples(stat: Callable[[np.ndarray], float | None], n: int, *, n_resamples: int, seed: int) -> list[float]:
    """Percentile-bootstrap distribution over ``n`` units of a statistic undefined on some resamples (Krippendorff's
    alpha, Hayes & Krippendorff 2007; kappa).

    Args:
        stat: the statistic of the units at the given indices (None or NaN when undefined).
        n: units.
        n_resamples: resamples.

    Returns:
        The finite values of the statistic, in resample order.
    """
    rng = np.random.default_rng(seed)
    drawn = (stat(rng.integers(0, n, size=n)) for _ in range(n_resamples))
    return [float(v) for v in drawn if v is not None and math.isfinite(v)]


def z_quantile(alpha: float) -> float:
    """z_{1 - alpha/2}, the two-sided normal quantile.

    Args:
        alpha: the error level, in (0, 1).

    Returns:
        The quantile.

    Raises:
        ValueError: alpha outside (0, 1).
    """
    from scipy.stats import norm

    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return float(norm.ppf(1 - alpha / 2))


METHOD = "normal-approximation power of the paired test, n = ((z_0.975 + z_0.80) x SD / mean)^2"


@dataclass(frozen=True)
class ItemsNeeded:
    """:func:`items_to_separate`'s outcome: mean and sample SD of ``n_used`` differences, ``n_total`` items needed and
    ``more`` = max(0, n_total - n_used) (None when no number would do: ``reason``)."""

    n_used: int
    mean_diff: float
    sd_diff: float
    alpha: float
    power: float
    n_total: int | None
    more: int | None
    reason: str = ""


def items_to_separate(diffs: Sequence[float], *, alpha: float = 0.05, power: float = 0.8) -> ItemsNeeded:
    """Items the two-sided paired test needs: n = ceil(((z_{1-alpha/2} + z_{power}) sd_d / |mean_d|)^2) (Chow, Shao &
    Wang, *Sample Size Calculations in Clinical Research*, 2nd ed., 2008, 3.1.1); none when mean 0 or sd 0.

    Args:
        diffs: per-item differences a - b (at least 1).
        alpha: the two-sided level, in (0, 1).
        power: the power, in (0, 1).

    Returns:
        :class:`ItemsNeeded`.

    Raises:
        ValueError: no difference, a non-finite one, or ``alpha``/``power`` outside (0, 1).
    """
    from scipy.stats import norm

    if not diffs:
        raise ValueError("items_to_separate: no paired difference")
    if not all(math.isfinite(float(d)) for d in diffs):
        raise ValueError("items_to_separate: a paired difference is not a finite number")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"items_to_separate: alpha and power must be in (0, 1), got {alpha}, {power}")
    n = len(diffs)
    mean = sum(float(d) for d in diffs) / n
    sd = math.sqrt(sum((float(d) - mean) ** 2 for d in diffs) / (n - 1)) if n > 1 else 0.0
    scale = max(abs(float(d)) for d in diffs)
    for bad, reason in ((mean, "the mean paired difference is 0"), (sd, "every paired difference is the same")):
        if abs(bad) <= 1e-12 * max(1.0, scale):
            return ItemsNeeded(n, mean, sd, alpha, power, None, None, reason)
    z = z_quantile(alpha) + float(norm.ppf(power))
    total = math.ceil((z * sd / abs(mean)) ** 2)
    return ItemsNeeded(n, mean, sd, alpha, power, total, max(0, total - n))


class HedgedCapitalCS:
    """Hedged-capital betting confidence sequence (CS) for the mean of values in [0, 1] (Waudby-Smith & Ramdas 2023,
    JRSS-B 86(1), section 4; finite-population form of their 2020 NeurIPS paper; as ``confseq``'s ``hedged_cs``). For
    x_1, x_2, ... in [0, 1] (drawn without replacement from N values, or independently): predictable plug-in bet
    lambda_t = sqrt(2 log(2/alpha) / (sigma2_{t-1} t log(1 + t))), mu_hat_t = (1/2 + sum x_i) / (t + 1), sigma2_t = (1/4
    + sum (x_i - mu_hat_i)^2) / (t + 1), sigma2_0 = 1/4; conditional mean of a candidate m, mu_t(m) = (N m - sum_{i<t}
    x_i) / (N - t + 1) (m itself with replacement; a candidate whose mu_t(m) leaves [0, 1] is impossible); capital
    K+_t(m) = prod (1 + min(lambda_i, c/mu_i(m)) (x_i - mu_i(m))), K-_t(m) = prod (1 - min(lambda_i, c/(1 - mu_i(m)))
    (x_i - mu_i(m))), hedged K_t = max(K+/2, K-/2); CS_t = {m : K_t(m) < 1/alpha}, intersected with the logical bounds
    [S_t/N, 1 - (t - S_t)/N] and CS_1..CS_{t-1}. By Ville's inequality the mean leaves the CS at some t with probability
    at most alpha.

    Args:
        alpha: miscoverage over the whole sequence, in (0, 1).
        population: N, the size of the finite population sampled without replacement; None for independent draws.
        grid: candidate means 0, 1/grid, ..., 1 (the CS is reported to within 1/grid, outward).
        trunc: c, the truncation of the bets (0 < c <= 1; 1/2 as in the paper's experiments).

    Raises:
        ValueError: alpha outside (0, 1), population < 1, grid < 2, trunc outside (0, 1].
    """

    def __init__(self, alpha: float, population: int | None = None, *, grid: int = 1000, trunc: float = 0.5):
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        if population is not None and population < 1:
            raise ValueError(f"population must be at least 1, got {population}")
        if grid < 2:
            raise ValueError(f"grid must be at least 2, got {grid}")
        if not 0.0 < trunc <= 1.0:
            raise ValueError(f"trunc must be in (0, 1], got {trunc}")
        self.alpha, self.population, self.grid, self.trunc = float(alpha), population, int(grid), float(trunc)
        self.m = np.linspace(0.0, 1.0, self.grid + 1)
        self._log_pos = np.zeros_like(self.m)
        self._log_neg = np.zeros_like(self.m)
        self._alive = np.ones_like(self.m, dtype=bool)
        self.t = 0
        self.total = 0.0
        self._sq = 0.0
        self._sigma2 = 0.25
        self._lo, self._hi = 0.0, 1.0

    def update(self, values: Sequence[float] | np.ndarray) -> None:
        """Add observations in drawn order.

        Args:
            values: numbers in [0, 1].

        Raises:
            ValueError: a value outside [0, 1], or more values than the population holds.
        """
        for x in map(float, np.asarray(values, dtype=float).ravel()):
            if not (0.0 <= x <= 1.0):
                raise ValueError(f"a confidence sequence value must lie in [0, 1], got {x}")
            n = self.population
            if n is not None and self.t >= n:
                raise ValueError(f"more values than the population of {n} holds")
            t = self.t + 1
            lam = math.sqrt(2.0 * math.log(2.0 / self.alpha) / (self._sigma2 * t * math.log(1.0 + t)))
            mu = (n * self.m - self.total) / (n - t + 1) if n is not None else self.m
            self._alive &= (mu >= 0.0) & (mu <= 1.0)
            mu = np.clip(mu, 0.0, 1.0)
            with np.errstate(divide="ignore"):
                lam_pos = np.minimum(lam, self.trunc / mu)
                lam_neg = np.minimum(lam, self.trunc / (1.0 - mu))
            d = x - mu
            # each factor is at least 1 - c > 0: 1 + min(lam, c/mu) (x - mu) >= 1 - c since x - mu >= -mu
            self._log_pos += np.log1p(lam_pos * d)
            self._log_neg += np.log1p(-lam_neg * d)
            self.t = t
            self.total += x
            self._sq += (x - (0.5 + self.total) / (t + 1)) ** 2
            self._sigma2 = (0.25 + self._sq) / (t + 1)
            hedged = np.maximum(self._log_pos + math.log(0.5), self._log_neg + math.log(0.5))
            inside = self._alive & (hedged < math.log(1.0 / self.alpha))
            step = 1.0 / self.grid
            lo, hi = 0.0, 1.0
            if inside.any():
                idx = np.flatnonzero(inside)
                lo, hi = max(0.0, self.m[idx[0]] - step), min(1.0, self.m[idx[-1]] + step)
            if n is not None:  # what is known for certain of a finite population whatever the rest holds
                lo, hi = max(lo, self.total / n), min(hi, 1.0 - (t - self.total) / n)
            self._lo, self._hi = max(self._lo, lo), min(self._hi, hi)
            if self._lo > self._hi:  # only a miscovering sequence can cross: keep one point, the middle
                self._lo = self._hi = (self._lo + self._hi) / 2.0

    @property
    def interval(self) -> tuple[float, float]:
        """The running CS ``(low, high)`` on the [0, 1] scale."""
        return self._lo, self._hi


@dataclass(frozen=True)
class Comparison:
    """The leader minus ``model`` (> 0 favours the leader, native scale) on ``n`` items, its CS at level alpha / (K - 1);
    ``left_out``: drawn items where either model had no value."""

    model: str
    n: int
    mean: float
    low: float
    high: float
    left_out: int = 0


@dataclass(frozen=True)
class Settlement:
    """After ``items``: ``settled`` when the leader's every CS lies above 0; ``leader`` the best mean so far."""

    settled: bool
    leader: str | None
    items: int
    alpha: float
    comparisons: list[Comparison] = field(default_factory=list)


class SettleRule:
    """The stopping rule of ``--until-settled``: is one model ahead of every other on the drawn items so far? A paired
    difference d in [-R, R] (R = max - min of the metric's range) is rescaled to (d + R) / (2 R) and followed by a
    :class:`HedgedCapitalCS` per pair of models. The ranking is settled when one model's CS against every other lies
    above 0; each of the K - 1 comparisons is at level alpha / (K - 1) (Bonferroni), and the CS of B - A is minus that
    of A - B, so the declared leader is the best model with probability at least 1 - alpha, whichever item the run
    stopped at.

    Args:
        models: the target models (K >= 2).
        value_range: the metric's finite (min, max).
        higher_is_better: the metric's direction.
        population: N, the items of the full selection; None for independent draws.
        alpha: family-wise miscoverage.
        grid: grid resolution of each CS.

    Raises:
        ValueError: fewer than two models, or a range that is not finite with max > min.
    """

    def __init__(
        self,
        models: Sequence[str],
        value_range: tuple[float, float],
        *,
        higher_is_better: bool = True,
        population: int | None = None,
        alpha: float = 0.05,
        grid: int = 1000,
    ):
        self.models = list(dict.fromkeys(models))
        if len(self.models) < 2:
            raise ValueError("a ranking needs at least two models to settle")
        lo, hi = (float(v) for v in value_range)
        if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
            raise ValueError(f"the metric's range must be finite with max > min, got {value_range}")
        self.lo, self.hi, self.span = lo, hi, hi - lo
        self.sign = 1.0 if higher_is_better else -1.0
        self.alpha = float(alpha)
        self.population = population
        level = self.alpha / (len(self.models) - 1)
        pairs = [(a, b) for i, a in enumerate(self.models) for b in self.models[i + 1 :]]
        self._pairs = {p: HedgedCapitalCS(level, population, grid=grid) for p in pairs}
        self._sums = dict.fromkeys(pairs, 0.0)
        self._left_out = dict.fromkeys(pairs, 0)
        self._model_sum = dict.fromkeys(self.models, 0.0)
        self._model_n = dict.fromkeys(self.models, 0)
        self.items = 0

    def add(self, values: Mapping[str, float | None]) -> None:
        """Add one item.

        Args:
            values: model -> its value on the item (None or missing: left out of that model's comparisons).

        Raises:
            ValueError: a value outside the metric's range.
        """
        self.items += 1
        clean: dict[str, float] = {}
        for m in self.models:
            v = values.get(m)
            if v is None or not math.isfinite(float(v)):
                continue
            v = float(v)
            if not (self.lo - 1e-9 <= v <= self.hi + 1e-9):
                raise ValueError(f"{m}: value {v} is outside the metric's range [{self.lo}, {self.hi}]")
            clean[m] = min(max(v, self.lo), self.hi)
            self._model_sum[m] += self.sign * clean[m]
            self._model_n[m] += 1
        for (a, b), cs in self._pairs.items():
            if a in clean and b in clean:
                d = self.sign * (clean[a] - clean[b])
                self._sums[(a, b)] += d
                cs.update([(d + self.span) / (2.0 * self.span)])
            else:
                self._left_out[(a, b)] += 1

    def _diff(self, leader: str, other: str) -> Comparison:
        """The CS of leader minus other (signed by direction), native scale."""
        flip = (leader, other) not in self._pairs
        key = (other, leader) if flip else (leader, other)
        cs = self._pairs[key]
        low, high = (v * 2.0 * self.span - self.span for v in cs.interval)
        mean = self._sums[key] / cs.t if cs.t else math.nan
        if flip:
            low, high, mean = -high, -low, -mean
        return Comparison(other, cs.t, mean, low, high, self._left_out[key])

    def check(self) -> Settlement:
        """Whether the items so far settle the ranking.

        Returns:
            The Settlement; unsettled, the leader is the best mean so far (ties: the first given).
        """
        seen = [m for m in self.models if self._model_n[m]]
        if not seen:
            return Settlement(False, None, self.items, self.alpha)
        by_mean = sorted(seen, key=lambda m: -self._model_sum[m] / self._model_n[m])
        against = {ld: [self._diff(ld, m) for m in self.models if m != ld] for ld in by_mean}
        leader = next((ld for ld in by_mean if all(c.n > 0 and c.low > 0.0 for c in against[ld])), None)
        shown = by_mean[0] if leader is None else leader
        return Settlement(leader is not None, shown, self.items, self.alpha, against[shown])
