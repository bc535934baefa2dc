"""The anytime-valid stopping rule of ``--until-settled`` (metric_pool/stats.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sgieval.metric_pool.stats import HedgedCapitalCS, SettleRule


def _running(cs: HedgedCapitalCS, x: np.ndarray) -> list[tuple[float, float]]:
    out = []
    for v in x:
        cs.update([v])
        out.append(cs.interval)
    return out


def test_hedged_cs_equals_the_confseq_reference_values():
    # reference: confseq 0.0.11 betting.hedged_cs(x, alpha, N, breaks=1000, running_intersection=True) on these
    # data (run once outside the project: confseq needs a system Boost to build)
    rng = np.random.default_rng(7)
    x = np.round(rng.beta(2, 3, 120), 3)
    got = _running(HedgedCapitalCS(0.05), x)
    want = {1: (0.0, 1.0), 10: (0.18, 0.671), 40: (0.303, 0.509), 120: (0.332, 0.434)}
    for t, (lo, hi) in want.items():
        assert got[t - 1] == pytest.approx((lo, hi), abs=1e-9), t
    # sampling without replacement from 60 values: at t = 60 the interval is the population mean itself
    pop = np.round(rng.beta(5, 2, 60), 3)
    got = _running(HedgedCapitalCS(0.1, population=60), pop)
    want = {1: (0.0134, 0.996733), 10: (0.488, 0.908), 30: (0.673, 0.826), 59: (0.71, 0.726417)}
    for t, (lo, hi) in want.items():
        assert got[t - 1] == pytest.approx((lo, hi), abs=1e-6), t
    assert got[-1] == pytest.approx((pop.mean(), pop.mean()), abs=1e-9)


def test_hedged_cs_refuses_values_outside_the_unit_interval_and_too_many_draws():
    cs = HedgedCapitalCS(0.05, population=2)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        cs.update([1.5])
    cs.update([0.2, 0.4])
    with pytest.raises(ValueError, match="population of 2"):
        cs.update([0.3])


def _clear_leader(seed: int, n: int = 400) -> dict[str, np.ndarray]:
    """Per-item 0/1 correctness of three models with accuracies 0.80, 0.60 and 0.55 (independent per item)."""
    rng = np.random.default_rng(seed)
    return {name: (rng.random(n) < p).astype(float) for name, p in (("a", 0.8), ("b", 0.6), ("c", 0.55))}


def _run(pop: dict[str, np.ndarray], seed: int, chunk: int = 10, **kw):
    n = len(next(iter(pop.values())))
    order = np.random.default_rng(10_000 + seed).permutation(n)
    rule = SettleRule(list(pop), (0.0, 1.0), population=n, **kw)
    for start in range(0, n, chunk):
        for i in order[start : start + chunk]:
            rule.add({m: v[i] for m, v in pop.items()})
        s = rule.check()
        if s.settled:
            return s
    return s


def test_a_clear_leader_is_settled_early_and_right_in_at_least_95_of_100_seeds():
    stops, right = [], 0
    for seed in range(100):
        pop = _clear_leader(seed)
        best = max(pop, key=lambda m: pop[m].mean())  # the leader on the full selection of 400 items
        s = _run(pop, seed, grid=500)
        stops.append(s.items)
        right += s.settled and s.leader == best and s.items < 400
    assert right >= 95
    # measured: right in 100 of 100, median stop at 90 of the 400 items
    assert np.median(stops) <= 200


@pytest.mark.slow
def test_equal_models_are_not_separated():
    # b holds exactly a's values in another item order: equal means on the selection, so any stop is wrong
    wrong = 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        a = (rng.random(200) < 0.6).astype(float)
        pop = {"a": a, "b": rng.permutation(a), "c": (rng.random(200) < 0.3).astype(float)}
        s = _run(pop, seed, grid=500)
        wrong += s.settled
        if not s.settled:  # at the last item the difference of a and b is known exactly: 0, not above it
            assert s.items == 200
    assert wrong <= 3  # at most 5% of 60


def test_each_comparison_is_at_alpha_over_k_minus_1_on_the_native_scale_and_direction():
    # errors per item (lower is better, range 0..4): model "x" makes fewer
    rule = SettleRule(["x", "y", "z"], (0.0, 4.0), higher_is_better=False, alpha=0.1, population=6, grid=400)
    rows = [
        {"x": 0, "y": 2, "z": 4},
        {"x": 1, "y": 1, "z": 3},
        {"x": 0, "y": None, "z": 4},
        {"x": 1, "y": 3, "z": 2},
    ]
    for r in rows:
        rule.add(r)
    s = rule.check()
    assert s.leader == "x" and s.items == 4 and s.alpha == 0.1
    y, z = s.comparisons
    # y - x on the items both have: (2, 0, 2) -> mean 4/3; one item left out (y has no value)
    assert (y.model, y.n, y.left_out) == ("y", 3, 1) and y.mean == pytest.approx(4 / 3)
    assert (z.model, z.n, z.mean) == ("z", 4, pytest.approx((4 + 2 + 4 + 1) / 4))
    # the same CS by hand: level 0.1 / 2, differences rescaled (d + 4) / 8, mapped back as 8 v - 4
    cs = HedgedCapitalCS(0.05, population=6, grid=400)
    cs.update([(d + 4) / 8 for d in (4, 2, 4, 1)])
    lo, hi = cs.interval
    assert (z.low, z.high) == pytest.approx((8 * lo - 4, 8 * hi - 4))
    assert not math.isnan(y.low) and y.low <= y.mean <= y.high

    # on 40 items of an unbounded stream the level shows: the CS at 0.1 / 2, not at 0.1
    rng = np.random.default_rng(3)
    rule = SettleRule(["x", "y", "z"], (0.0, 4.0), higher_is_better=False, alpha=0.1, grid=400)
    d = []
    for _ in range(40):
        v = {"x": float(rng.integers(0, 3)), "y": float(rng.integers(1, 5)), "z": 4.0}
        rule.add(v)
        d.append((v["y"] - v["x"] + 4) / 8)
    y = rule.check().comparisons[0]
    at = {}
    for level in (0.05, 0.1):
        cs = HedgedCapitalCS(level, grid=400)
        cs.update(d)
        at[level] = tuple(8 * v - 4 for v in cs.interval)
    assert (y.low, y.high) == pytest.approx(at[0.05]) and at[0.05] != pytest.approx(at[0.1])


def test_the_rule_needs_two_models_and_a_bounded_range():
    with pytest.raises(ValueError, match="two models"):
        SettleRule(["a"], (0, 1))
    with pytest.raises(ValueError, match="finite"):
        SettleRule(["a", "b"], (0, float("inf")))
    rule = SettleRule(["a", "b"], (0, 1))
    with pytest.raises(ValueError, match="outside the metric's range"):
        rule.add({"a": 2.0, "b": 0.0})
