"""Stopping a run once its ranking is settled: anytime-valid confidence sequences for paired differences.

The confidence sequence (CS) is the hedged-capital betting CS of Waudby-Smith & Ramdas (2023), "Estimating means
of bounded random variables by betting", JRSS-B 86(1), section 4 (the hedged capital process with predictable
plug-in bets), in the form for sampling without replacement from a finite population of Waudby-Smith & Ramdas
(2020), "Confidence sequences for sampling without replacement", NeurIPS (the conditional mean mu_t^WoR).  It is the construction of the ``confseq`` package's ``hedged_cs``
(a grid over the candidate means, running intersection, the logical bounds of a finite population); ``confseq``
is not a dependency because it builds only with a system Boost.

For x_1, x_2, ... in [0, 1] drawn without replacement from N values with mean m*:

- predictable plug-in bet: lambda_t = sqrt(2 log(2/alpha) / (sigma2_{t-1} t log(1 + t))), with
  mu_hat_t = (1/2 + sum_{i<=t} x_i) / (t + 1) and sigma2_t = (1/4 + sum_{i<=t} (x_i - mu_hat_i)^2) / (t + 1)
  (sigma2_0 = 1/4);
- conditional mean under the candidate m: mu_t(m) = (N m - sum_{i<t} x_i) / (N - t + 1) (m itself with
  replacement); a candidate whose mu_t(m) leaves [0, 1] is impossible and leaves the CS;
- capital: K+_t(m) = prod (1 + min(lambda_i, c / mu_i(m)) (x_i - mu_i(m))),
  K-_t(m) = prod (1 - min(lambda_i, c / (1 - mu_i(m))) (x_i - mu_i(m))), c = 1/2, hedged
  K_t(m) = max(theta K+_t(m), (1 - theta) K-_t(m)), theta = 1/2;
- CS_t = {m : K_t(m) < 1/alpha}, intersected with the logical bounds [S_t / N, 1 - (t - S_t) / N] and with
  CS_1..CS_{t-1}.  By Ville's inequality P(m* leaves CS_t for some t) <= alpha: the interval may be looked at
  after every item and the run stopped whenever it excludes a value, with the guarantee intact.

A ranking is settled when one model's paired difference against every other model has a CS lying above 0; each
of the K - 1 comparisons of the best model is at level alpha / (K - 1) (Bonferroni), so the declared leader is
the best model of the whole selection with probability at least 1 - alpha, whichever item the run stopped at.
The CS of a pair is computed for the pair (not for the current leader), and it is symmetric (the CS of B - A is
minus the CS of A - B), so the union bound over the K - 1 comparisons of the truly best model covers the leader
the data happen to pick.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

__all__ = ["HedgedCapitalCS", "Comparison", "Settlement", "SettleRule"]


class HedgedCapitalCS:
    """Hedged-capital betting confidence sequence for the mean of values in [0, 1] (module docstring), updated
    one value at a time.

    Args:
        alpha: miscoverage over the whole sequence, in (0, 1).
        population: N, the size of the finite population sampled without replacement; None for independent
            draws with one mean.
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
        self.alpha = float(alpha)
        self.population = population
        self.grid = int(grid)
        self.trunc = float(trunc)
        self.m = np.linspace(0.0, 1.0, self.grid + 1)
        self._log_pos = np.zeros_like(self.m)
        self._log_neg = np.zeros_like(self.m)
        self._alive = np.ones_like(self.m, dtype=bool)
        self.t = 0
        self.total = 0.0
        self._mu_hat = 0.5
        self._sq = 0.0  # sum of (x_i - mu_hat_i)^2
        self._sigma2 = 0.25
        self._lo, self._hi = 0.0, 1.0
        self._threshold = math.log(1.0 / self.alpha)

    def update(self, values: Sequence[float] | np.ndarray) -> None:
        """Add observations, in the order they were drawn.

        Args:
            values: numbers in [0, 1].

        Raises:
            ValueError: a value outside [0, 1] or not finite, or more values than the population holds.
        """
        for x in np.asarray(values, dtype=float).ravel():
            self._step(float(x))

    def _step(self, x: float) -> None:
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
        self._mu_hat = (0.5 + self.total) / (t + 1)
        self._sq += (x - self._mu_hat) ** 2
        self._sigma2 = (0.25 + self._sq) / (t + 1)
        hedged = np.maximum(self._log_pos + math.log(0.5), self._log_neg + math.log(0.5))
        inside = self._alive & (hedged < self._threshold)
        step = 1.0 / self.grid
        if inside.any():
            idx = np.flatnonzero(inside)
            lo, hi = max(0.0, self.m[idx[0]] - step), min(1.0, self.m[idx[-1]] + step)
        else:
            lo, hi = 0.0, 1.0
        if n is not None:  # what is known for certain of a finite population whatever the rest holds
            lo, hi = max(lo, self.total / n), min(hi, 1.0 - (t - self.total) / n)
        self._lo, self._hi = max(self._lo, lo), min(self._hi, hi)
        if self._lo > self._hi:  # only a miscovering sequence can cross: keep one point, the middle
            self._lo = self._hi = (self._lo + self._hi) / 2.0

    @property
    def interval(self) -> tuple[float, float]:
        """The running CS ``(low, high)`` on the [0, 1] scale ((0, 1) before any value)."""
        return self._lo, self._hi


@dataclass(frozen=True)
class Comparison:
    """One comparison of the leader with another model on the ranking metric's native scale.

    Attributes:
        model: the other model.
        n: items in the comparison (both models have a value).
        mean: mean paired difference, leader minus model, signed so that > 0 favours the leader (for a metric where
            lower is better, model minus leader).
        low, high: the CS of that difference at level ``alpha / (K - 1)``.
        left_out: items of the drawn ones where either model had no value.
    """

    model: str
    n: int
    mean: float
    low: float
    high: float
    left_out: int = 0


@dataclass(frozen=True)
class Settlement:
    """The state of the rule after the items added so far.

    Attributes:
        settled: the leader's every CS lies above 0.
        leader: the model with the best mean so far (settled or not); None before any value.
        items: items added so far.
        alpha: the family-wise level (each comparison at ``alpha / (K - 1)``).
        comparisons: the leader against each other model, in the order the models were given.
    """

    settled: bool
    leader: str | None
    items: int
    alpha: float
    comparisons: list[Comparison] = field(default_factory=list)


class SettleRule:
    """The sequential stopping rule of ``--until-settled`` (module docstring): feed it the ranking metric's
    per-item values of every model, item by item in the drawn order, and ask whether one model is ahead of every
    other.

    Args:
        models: the target models (K >= 2).
        value_range: the metric's (min, max) native range, both finite (R = max - min; a paired difference lies
            in [-R, R] and is rescaled to (d + R) / (2 R) in [0, 1]).
        higher_is_better: the metric's direction.
        population: N, the items of the full selection (sampled without replacement); None for independent draws.
        alpha: family-wise miscoverage (default 0.05).
        grid: grid resolution of each CS (:class:`HedgedCapitalCS`).

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
        self.lo, self.hi = lo, hi
        self.span = hi - lo
        self.sign = 1.0 if higher_is_better else -1.0
        self.alpha = float(alpha)
        self.population = population
        level = self.alpha / (len(self.models) - 1)
        self._pairs: dict[tuple[str, str], HedgedCapitalCS] = {}
        self._sums: dict[tuple[str, str], float] = {}
        self._left_out: dict[tuple[str, str], int] = {}
        for i, a in enumerate(self.models):
            for b in self.models[i + 1 :]:
                self._pairs[(a, b)] = HedgedCapitalCS(level, population, grid=grid)
                self._sums[(a, b)] = 0.0
                self._left_out[(a, b)] = 0
        self._model_sum = {m: 0.0 for m in self.models}
        self._model_n = {m: 0 for m in self.models}
        self.items = 0

    def add(self, values: Mapping[str, float | None]) -> None:
        """Add one item: ``values`` maps each model to its value on the item (None or missing: no valid value,
        which leaves the item out of that model's comparisons and its mean).

        Raises:
            ValueError: a value outside the metric's range.

        Args:
            values: model -> its value on the item.
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
        """The CS of leader minus other (signed by direction) on the native scale."""
        flip = (leader, other) not in self._pairs
        key = (other, leader) if flip else (leader, other)
        cs = self._pairs[key]
        low, high = (v * 2.0 * self.span - self.span for v in cs.interval)
        mean = self._sums[key] / cs.t if cs.t else math.nan
        if flip:
            low, high, mean = -high, -low, -mean
        return Comparison(other, cs.t, mean, low, high, self._left_out[key])

    def check(self) -> Settlement:
        """Whether the items added so far settle the ranking (:class:`Settlement`): settled when one model's
        comparisons with every other model have a CS low end above 0 (at most one model can have that, the CSs
        being symmetric); that model is the leader.  Unsettled, the leader is the model with the best mean of
        its values so far (ties: the first given).

        Returns:
            The Settlement: settled or not, and the leader.
        """
        seen = [m for m in self.models if self._model_n[m]]
        if not seen:
            return Settlement(False, None, self.items, self.alpha)
        by_mean = sorted(seen, key=lambda m: -self._model_sum[m] / self._model_n[m])
        for leader in by_mean:
            comps = [self._diff(leader, m) for m in self.models if m != leader]
            if all(c.n > 0 and c.low > 0.0 for c in comps):
                return Settlement(True, leader, self.items, self.alpha, comps)
        leader = by_mean[0]
        return Settlement(
            False, leader, self.items, self.alpha, [self._diff(leader, m) for m in self.models if m != leader]
        )
