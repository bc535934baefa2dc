"""Coverage of prediction-powered intervals on a simulated population with a biased, noisy judge.

Run: ``.venv/bin/python -m sgieval.bench.ppi_coverage [--reps 1000] [--items 1000] [--labels 50] [--seed 0]``

Each repetition draws a population of ``--items`` units with a true score ``Y ~ N(5, 2^2)`` and a judge score
``Ŷ = Y + bias + N(0, noise^2)`` (bias 0.7, noise 1.0 by default), labels ``--labels`` units drawn uniformly at
random, and forms three 95% intervals for the mean of Y (the target, 5): PPI++ (labels + the judge on the rest),
labels only, and judge only. It prints, for each, the share of repetitions whose interval covers the target and
the mean width, then the ratio of PPI++'s mean width to the labels-only one. Never asserts (the test
``tests/metric_pool/test_ppi_coverage.py`` checks the same on fewer repetitions).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from ..metric_pool.ppi import classical_mean, ppi_mean

TRUE_MEAN = 5.0


@dataclass(frozen=True)
class Coverage:
    """Per interval kind: share of repetitions covering the true mean, and mean width."""

    ppi: tuple[float, float]
    labels: tuple[float, float]
    judge: tuple[float, float]


def simulate(
    reps: int = 1000, items: int = 1000, labels: int = 50, bias: float = 0.7, noise: float = 1.0, seed: int = 0
) -> Coverage:
    """Run the simulation of the module docstring.

    Args:
        reps: repetitions (>= 1).
        items: units per population (> labels).
        labels: labelled units per repetition (>= 2).
        bias: the judge's systematic offset, on the score's scale.
        noise: the standard deviation of the judge's error.
        seed: seed of the random generator.

    Returns:
        :class:`Coverage` (coverage in [0, 1], widths on the score's scale).
    """
    rng = np.random.default_rng(seed)
    hits = {"ppi": 0, "labels": 0, "judge": 0}
    widths: dict[str, list[float]] = {"ppi": [], "labels": [], "judge": []}
    for _ in range(reps):
        y = rng.normal(TRUE_MEAN, 2.0, items)
        yhat = y + bias + rng.normal(0.0, noise, items)
        idx = rng.permutation(items)
        lab, rest = idx[:labels], idx[labels:]
        for name, est in (
            ("ppi", ppi_mean(y[lab], yhat[lab], yhat[rest])),
            ("labels", classical_mean(y[lab])),
            ("judge", classical_mean(yhat, method="judge")),
        ):
            hits[name] += int(est.low <= TRUE_MEAN <= est.high)
            widths[name].append(est.width)
    return Coverage(*((hits[k] / reps, float(np.mean(widths[k]))) for k in ("ppi", "labels", "judge")))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=1000)
    p.add_argument("--items", type=int, default=1000)
    p.add_argument("--labels", type=int, default=50)
    p.add_argument("--bias", type=float, default=0.7)
    p.add_argument("--noise", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    c = simulate(a.reps, a.items, a.labels, a.bias, a.noise, a.seed)
    print(f"{a.reps} repetitions, {a.labels} labels of {a.items} items, judge bias {a.bias}, noise {a.noise}")
    for name, (cov, width) in (("PPI++", c.ppi), ("labels only", c.labels), ("judge only", c.judge)):
        print(f"{name:12s} coverage {cov:.3f}  mean width {width:.3f}")
    print(f"width ratio PPI++ / labels only: {c.ppi[1] / c.labels[1]:.3f}")


if __name__ == "__main__":
    main()
