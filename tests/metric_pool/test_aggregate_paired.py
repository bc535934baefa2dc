"""paired_test (metric_pool/stats.py): paired permutation / bootstrap comparison of two models."""

import math

import pytest

from sgieval.metric_pool.stats import PairedResult, paired_test


def test_identical_vectors_give_zero_difference_and_p_one():
    a = {"i1": 0.2, "i2": 0.5, "i3": 0.9, "i4": 0.4}
    for method in ("permutation", "bootstrap"):
        r = paired_test(a, dict(a), method=method)
        assert isinstance(r, PairedResult)
        assert (r.n, r.mean_diff, r.p_value, r.method) == (4, 0.0, 1.0, method)
        assert r.mean_a == r.mean_b == pytest.approx(0.5)  # (0.2+0.5+0.9+0.4)/4 = 0.5
        assert (r.ci_low, r.ci_high) == (0.0, 0.0)  # all differences equal -> degenerate CI


def test_exact_permutation_p_value_n3_all_positive():
    # d = [1, 2, 3]; the 2**3 = 8 sign flips give means {±1±2±3}/3:
    # 2, 4/3, 2/3, 0, 0, -2/3, -4/3, -2; only +2 is >= 2 -> one-sided 1/8, two-sided 2/8 = 0.25
    r = paired_test({"a": 1.0, "b": 2.0, "c": 3.0}, {"a": 0.0, "b": 0.0, "c": 0.0})
    assert r.n == 3
    assert r.mean_diff == pytest.approx(2.0)
    assert (r.mean_a, r.mean_b) == (pytest.approx(2.0), 0.0)
    assert r.p_value == pytest.approx(0.25)
    assert r.ci_low <= 2.0 <= r.ci_high


def test_exact_permutation_n10_same_sign():
    # 10 positive differences: only the identity (all +) reaches the observed mean -> 2 * 1/1024
    a = {f"i{k}": float(k + 1) for k in range(10)}
    b = {f"i{k}": 0.0 for k in range(10)}
    r = paired_test(a, b)
    assert r.p_value == pytest.approx(2 / 1024)
    assert r.mean_diff == pytest.approx(5.5)  # mean of 1..10
    assert 1.0 < r.ci_low < 5.5 < r.ci_high < 10.0


def test_constant_nonzero_difference():
    # d = [1, 1]: sign flips give means {1, 0, 0, -1} -> two-sided p = 2 * 1/4 = 0.5
    r = paired_test({"x": 1.0, "y": 2.0}, {"x": 0.0, "y": 1.0})
    assert (r.mean_diff, r.p_value, r.ci_low, r.ci_high) == (1.0, 0.5, 1.0, 1.0)
    # bootstrap test: centred differences are all 0, so no resample reaches |1|: p = (1+0)/(1+99) = 0.01
    r = paired_test({"x": 1.0, "y": 2.0}, {"x": 0.0, "y": 1.0}, method="bootstrap", n_resamples=99)
    assert r.p_value == pytest.approx(0.01)


def test_only_common_finite_items_are_used():
    a = {"i1": 1.0, "i2": 3.0, "only_a": 100.0, "nan": float("nan")}
    b = {"i1": 0.0, "i2": 1.0, "only_b": -100.0, "nan": 5.0}
    r = paired_test(a, b)
    assert r.n == 2
    assert (r.mean_a, r.mean_b, r.mean_diff) == (2.0, 0.5, 1.5)  # (1+3)/2, (0+1)/2


def test_single_common_item_has_no_ci():
    r = paired_test({"i": 3.0}, {"i": 1.0})
    assert r.n == 1 and r.mean_diff == 2.0
    assert math.isnan(r.ci_low) and math.isnan(r.ci_high)
    assert r.p_value == 1.0  # flips of one item: {+2, -2}; two-sided 2 * 1/2 = 1


def test_bootstrap_is_deterministic_and_detects_a_shift():
    a = {f"i{k}": 0.5 + 0.01 * (k % 7) for k in range(40)}
    b = {f"i{k}": 0.3 + 0.01 * (k % 5) for k in range(40)}
    r1 = paired_test(a, b, method="bootstrap", seed=3)
    r2 = paired_test(a, b, method="bootstrap", seed=3)
    assert r1 == r2
    assert r1.ci_low < r1.mean_diff < r1.ci_high
    assert r1.ci_low > 0
    assert r1.p_value == pytest.approx(1 / 10001)  # centred resample means never reach the ~0.21 shift


def test_errors():
    with pytest.raises(ValueError, match="unknown method 'ttest'; use 'permutation' or 'bootstrap'"):
        paired_test({"a": 1.0}, {"a": 1.0}, method="ttest")
    with pytest.raises(ValueError, match="no item with a finite score in common"):
        paired_test({"a": 1.0}, {"b": 1.0})


# ------------------------------------------------- Intervals at the edges say what they are
def test_binary_metric_gets_a_wilson_interval_not_one_to_one():
    from sgieval.metric_pool.stats import summarize

    s = summarize([1.0] * 8)
    # Wilson, z = 1.95996: center (1 + z^2/16) / (1 + z^2/8) = 0.83780, half-width 0.16220
    assert (s.method, round(s.ci_low, 4), s.ci_high) == ("wilson", 0.6756, 1.0)
    assert s.note == "Wilson score interval for 8 of 8 (a 0/1 metric)"
    # variants: 0 of 8 mirrors it; 3 of 10 by hand: center 0.36821, half-width 0.26040
    assert (summarize([0.0] * 8).ci_low, round(summarize([0.0] * 8).ci_high, 4)) == (0.0, 0.3244)
    s3 = summarize([1.0] * 3 + [0.0] * 7)
    assert (round(s3.ci_low, 4), round(s3.ci_high, 4)) == (0.1078, 0.6032)
    # a single binary value still has an interval
    assert round(summarize([1.0]).ci_low, 4) == 0.2065
    # forced off: the bootstrap path (equal values: zero width, with the reason)
    b = summarize([1.0] * 8, binary=False)
    assert (b.method, b.ci_low, b.ci_high) == ("degenerate", 1.0, 1.0)
    assert b.note == "zero-width interval: all 8 values equal 1, so every bootstrap resample does"


def test_every_degenerate_interval_says_why():
    from sgieval.metric_pool.stats import paired_test, summarize

    one = summarize([7.0])
    assert (one.method, one.note) == ("none", "no CI: fewer than 2 items")
    same = summarize([7.0, 7.0, 7.0])
    assert (same.ci_low, same.ci_high, same.method) == (7.0, 7.0, "degenerate")
    assert same.note == "zero-width interval: all 3 values equal 7, so every bootstrap resample does"
    spread = summarize([1.0, 2.0, 4.0, 8.0], n_resamples=999)
    assert (spread.method, spread.note) == ("bca", "")
    pr = paired_test({"a": 3.0, "b": 5.0}, {"a": 1.0, "b": 3.0}, n_resamples=999)
    assert (pr.ci_low, pr.ci_high) == (2.0, 2.0)
    assert (
        pr.ci_note
        == "zero-width interval: the difference is 2 on all 2 common items, so every bootstrap resample gives it"
    )
    assert paired_test({"a": 1.0}, {"a": 0.0}).ci_note == "no CI: fewer than 2 common items"
