"""How many items a paired comparison would need to separate two models: a power calculation on the paired
per-item differences.

Normal approximation of the power of the two-sided paired test of a mean difference (the paired z-test;
the sign-flip permutation test of the report, :func:`sgieval.metric_pool.aggregate.paired_test`, has the same
large-sample power): with the observed mean paired difference ``mean_d`` and its standard deviation ``sd_d``
(sample SD, n - 1), the items needed for level ``alpha`` (two-sided) and power ``1 - beta`` are

    n = ceil( ((z_{1 - alpha/2} + z_{1 - beta}) * sd_d / |mean_d|) ** 2 )

(e.g. Chow, Shao & Wang, *Sample Size Calculations in Clinical Research*, 2nd ed., 2008, section 3.1.1,
one-sample / paired mean, two-sided test), and ``n - n_used`` more items of the same kind are needed.  When
``mean_d`` is 0 no number of items separates the two; when every difference is the same (``sd_d`` 0) the
formula has no spread to work with and gives no number either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

__all__ = ["ItemsNeeded", "items_to_separate", "METHOD"]

METHOD = "normal-approximation power of the paired test, n = ((z_0.975 + z_0.80) x SD / mean)^2"
"""The method, as the report states it (for alpha 0.05 and power 0.8)."""


@dataclass(frozen=True)
class ItemsNeeded:
    """The outcome of :func:`items_to_separate`.

    Attributes:
        n_used: paired items observed.
        mean_diff: mean of the paired differences (a minus b, on the metric's scale).
        sd_diff: their sample standard deviation (n - 1; 0 for one item).
        alpha: the test's level (two-sided); power: the power asked for.
        n_total: items the test would need in all (None: no number would do, see ``reason``).
        more: ``n_total - n_used`` when positive, else 0 (None with ``n_total`` None).
        reason: why no number would do ("" when there is one).
    """

    n_used: int
    mean_diff: float
    sd_diff: float
    alpha: float
    power: float
    n_total: int | None
    more: int | None
    reason: str = ""


def items_to_separate(diffs: Sequence[float], *, alpha: float = 0.05, power: float = 0.8) -> ItemsNeeded:
    """Items the two-sided paired test at level ``alpha`` needs, with power ``power``, for the mean and SD of
    the paired differences ``diffs`` (module docstring for the formula and its source).

    Args:
        diffs: per-item differences a - b (finite numbers, at least 1).
        alpha: the level, 0 < alpha < 1 (two-sided).
        power: the power, 0 < power < 1.

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
    if abs(mean) <= 1e-12 * max(1.0, scale):
        return ItemsNeeded(n, mean, sd, alpha, power, None, None, "the mean paired difference is 0")
    if sd <= 1e-12 * max(1.0, scale):
        return ItemsNeeded(n, mean, sd, alpha, power, None, None, "every paired difference is the same")
    z = float(norm.ppf(1 - alpha / 2) + norm.ppf(power))
    total = math.ceil((z * sd / abs(mean)) ** 2)
    return ItemsNeeded(n, mean, sd, alpha, power, total, max(0, total - n))
