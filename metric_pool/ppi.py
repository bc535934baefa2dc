"""Prediction-powered inference: a mean from ``n`` human labels Y and a judge's scores Ŷ on them and Ŷ' on ``N`` other
units (PPI++, Angelopoulos, Duchi and Zrnic 2024, arXiv:2311.01453, mean case; as ``ppi_py.ppi_mean_ci``):
θ̂_λ = λ·mean(Ŷ') + mean(Y − λŶ), λ̂ = cov(Y, Ŷ) / ((1 + n/N)·var(Ŷ ∪ Ŷ')) clipped to [0, 1], interval
θ̂ ± z_{1−α/2}·sqrt(var₀(λŶ')/N + var₀(Y − λŶ)/n).  λ = 1 is classic PPI, λ = 0 the labels-only mean; valid when the
labelled units are a uniform random sample (:mod:`.labels` treats each target model as its own stratum)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence, Union

import numpy as np

from .stats import z_quantile

Values = Union[Sequence[float], np.ndarray]


@dataclass(frozen=True)
class PPIEstimate:
    """A ``mean`` (labels' scale) with its two-sided ``1 - alpha`` interval; ``lam`` the power-tuning parameter (None:
    not a PPI estimate); ``method`` ``"ppi++"``, ``"ppi"``, ``"labels"`` or ``"judge"``."""

    mean: float
    low: float
    high: float
    n_labelled: int
    n_unlabelled: int
    lam: float | None
    method: str

    @property
    def width(self) -> float:
        return self.high - self.low


def _as_arrays(labels: Values, judged: Values, unlabelled: Values):
    y = np.asarray(labels, dtype=float)
    yhat = np.asarray(judged, dtype=float)
    yu = np.asarray(unlabelled, dtype=float)
    if y.shape != yhat.shape or y.ndim != 1:
        raise ValueError(
            f"labels and judge scores must be two 1-d sequences of one length, got {y.shape}, {yhat.shape}"
        )
    if y.size < 2:
        raise ValueError(f"a prediction-powered interval needs at least 2 labelled units, got {y.size}")
    if yu.ndim != 1 or yu.size < 1:
        raise ValueError("a prediction-powered estimate needs at least 1 unit with a judge score only")
    if not (np.isfinite(y).all() and np.isfinite(yhat).all() and np.isfinite(yu).all()):
        raise ValueError("labels and judge scores must be finite numbers")
    return y, yhat, yu


def _power_tuning(labels: Values, judged: Values, unlabelled: Values) -> float:
    """The PPI++ tuning parameter λ̂ for a mean (module docstring), clipped to [0, 1]; 0 when Ŷ does not vary."""
    y, yhat, yu = _as_arrays(labels, judged, unlabelled)
    n, big_n = y.size, yu.size
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    var = float(np.var(np.concatenate([yhat, yu]), ddof=1))
    if var <= 0:
        return 0.0
    return float(min(1.0, max(0.0, cov / ((1 + n / big_n) * var))))


def ppi_mean(
    labels: Values, judged: Values, unlabelled: Values, *, alpha: float = 0.05, lam: float | None = None
) -> PPIEstimate:
    """The prediction-powered mean of the labels and its ``1 - alpha`` interval (module docstring, PPI++).

    Args:
        labels: ``Y``, n human labels (n >= 2).
        judged: ``Ŷ``, the judge's scores on the labelled units.
        unlabelled: ``Ŷ'``, the judge's scores on the N other units (N >= 1).
        alpha: error level in (0, 1).
        lam: a fixed tuning parameter (1: classic PPI); None tunes it.

    Returns:
        A :class:`PPIEstimate` (method ``"ppi++"``, or ``"ppi"`` for a fixed λ).

    Raises:
        ValueError: as :func:`_power_tuning`, or alpha outside (0, 1).
    """
    y, yhat, yu = _as_arrays(labels, judged, unlabelled)
    tuned = lam is None
    lam = _power_tuning(y, yhat, yu) if lam is None else float(lam)
    theta = lam * float(yu.mean()) + float(np.mean(y - lam * yhat))
    se = math.sqrt(float(np.var(lam * yu)) / yu.size + float(np.var(y - lam * yhat)) / y.size)
    z = z_quantile(alpha)
    return PPIEstimate(theta, theta - z * se, theta + z * se, y.size, yu.size, lam, "ppi++" if tuned else "ppi")


def classical_mean(values: Values, *, alpha: float = 0.05, method: str = "labels") -> PPIEstimate:
    """The plain mean of ``values`` with its normal-approximation interval (z · population sd / sqrt(n)), as
    ``ppi_py.classical_mean_ci``.

    Args:
        values: n >= 2 finite numbers.
        alpha: error level in (0, 1).
        method: ``"labels"`` (the labels alone) or ``"judge"`` (the judge alone).

    Returns:
        A :class:`PPIEstimate` with ``lam`` None.

    Raises:
        ValueError: fewer than 2 values, or non-finite values.
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size < 2 or not np.isfinite(x).all():
        raise ValueError("a mean interval needs at least 2 finite values")
    m = float(x.mean())
    half = z_quantile(alpha) * float(x.std()) / math.sqrt(x.size)
    n_lab, n_unl = (x.size, 0) if method == "labels" else (0, x.size)
    return PPIEstimate(m, m - half, m + half, n_lab, n_unl, None, method)
