"""aggregate.summarize (its Wilson interval) / paired_test asserted whole (the mutants that the
value-level tests left alive).  Every Summary and PairedResult is compared field by field; bootstrap bounds are
pinned from scipy 1.17 (BCa / percentile, given resamples and seed) where no closed form exists, and computed by
hand where one does (the bootstrap test's p-value of d = [0, 2], the Wilson bounds)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from sgieval.metric_pool.stats import PairedResult, Summary, paired_test, summarize

X40 = np.random.default_rng(7).normal(10.0, 2.0, size=40)
"""40 draws of N(10, 2): mean 9.20962967933308, total 368.3851871733232, population std 1.6208524278954193."""


def _approx(obj):
    """The dataclass as a tuple, floats compared to 1e-9 (NaN equal to NaN)."""
    out = []
    for v in obj.__dict__.values():
        out.append(pytest.approx(v, abs=1e-9, nan_ok=True) if isinstance(v, float) else v)
    return tuple(out)


def _t(obj):
    return tuple(obj.__dict__.values())


# ------------------------------------------------------------------------------------------ the Wilson interval
def test_wilson_interval_honours_its_confidence_level():
    # 3 of 10 at 90% (z = 1.644854): center (0.3 + z^2/20)/(1 + z^2/10) = 0.342589, half-width 0.215712
    s = summarize([1.0] * 3 + [0.0] * 7, confidence=0.90)
    assert (s.ci_low, s.ci_high) == (
        pytest.approx(0.1268765839031979, abs=1e-12),
        pytest.approx(0.5583002041301649, abs=1e-12),
    )
    # summarize passes its confidence to the Wilson interval: 2 of 10 at 90%
    s = summarize([1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], confidence=0.90)
    assert _t(s) == (
        10,
        0.2,
        2.0,
        pytest.approx(0.4),
        pytest.approx(0.06855798773753208, abs=1e-12),
        pytest.approx(0.4592071943125121, abs=1e-12),
        "wilson",
        "Wilson score interval for 2 of 10 (a 0/1 metric)",
    )


# ------------------------------------------------------------------------------------------------ summarize
def test_summarize_of_nothing_says_what_it_needs():
    with pytest.raises(ValueError, match=r"^summarize\(\) needs at least one value$"):
        summarize([])


def test_summarize_defaults_are_10000_resamples_seed_0_and_95_percent():
    got = summarize(X40)
    assert got == summarize(X40, n_resamples=10000, seed=0, confidence=0.95)
    assert _t(got) == _approx(
        Summary(
            n=40,
            mean=9.20962967933308,
            total=368.3851871733232,
            std=1.6208524278954193,
            ci_low=8.684533726264796,
            ci_high=9.700175317584991,
            method="bca",
            note="",
        )
    )
    # another seed or resample count moves the bounds in the fourth decimal: the pins above are specific
    assert summarize(X40, seed=1).ci_low == pytest.approx(8.685292463357618, abs=1e-9)
    assert summarize(X40, n_resamples=9999).ci_low == pytest.approx(8.68447641221396, abs=1e-9)


def test_two_distinct_values_get_a_bootstrap_interval_not_none():
    # n = 2 is enough for a bootstrap: resample means of {1, 3} are 1, 2 or 3
    assert _t(summarize([1.0, 3.0], n_resamples=999)) == (2, 2.0, 4.0, 1.0, 1.0, 3.0, "bca", "")


def test_a_single_non_binary_value_has_nan_bounds():
    s = summarize([7.0])
    assert (s.n, s.mean, s.total, s.std, s.method) == (1, 7.0, 7.0, 0.0, "none")
    assert math.isnan(s.ci_low) and math.isnan(s.ci_high)


def test_bca_undefined_falls_back_to_the_percentile_interval_with_its_note():
    # two resamples (seed 1) of [1, 2, 4, 8] both lie above the mean 3.75: BCa's bias correction z0 is
    # infinite, so BCa gives NaN and the percentile interval of the two resample means is used
    why = "percentile bootstrap: the BCa interval is undefined for these values"
    s = summarize([1.0, 2.0, 4.0, 8.0], n_resamples=2, seed=1)
    assert _t(s) == _approx(Summary(4, 3.75, 15.0, 2.680951323690902, 4.525, 5.475, "percentile", why))
    # the fallback keeps the confidence level (50%: the central half of the same two means)
    s50 = summarize([1.0, 2.0, 4.0, 8.0], n_resamples=2, seed=1, confidence=0.5)
    assert _t(s50) == _approx(Summary(4, 3.75, 15.0, 2.680951323690902, 4.75, 5.25, "percentile", why))
    # and its resample count and seed: three resamples with seed 1 make BCa defined again
    assert summarize([1.0, 2.0, 4.0, 8.0], n_resamples=3, seed=1).method == "bca"


def test_percentile_fallback_uses_its_seed_and_resample_count():
    s = summarize([1.0, 2.0, 4.0, 8.0], n_resamples=2, seed=2)
    assert (s.method, s.ci_low, s.ci_high) == ("percentile", 3.25, 3.25)
    s = summarize([1.0, 2.0, 4.0, 8.0], n_resamples=1, seed=4)
    assert (s.method, s.ci_low, s.ci_high) == ("percentile", 6.0, 6.0)


# ---------------------------------------------------------------------------------------------- paired_test
A20 = {f"i{k}": float((k * 7) % 11) for k in range(20)}
B20 = {f"i{k}": float((k * 3) % 5) for k in range(20)}
"""20 paired items: mean 4.9 vs 2.0 (2**20 sign flips > 10,000: the permutation test samples)."""


def test_paired_permutation_defaults_are_seed_0_and_10000_resamples():
    got = paired_test(A20, B20)
    assert got == paired_test(A20, B20, method="permutation", n_resamples=10000, seed=0, confidence=0.95)
    assert _t(got) == _approx(PairedResult(20, 4.9, 2.0, 2.9, 1.35, 4.3, 0.0027997200279972004, "permutation", ""))
    assert paired_test(A20, B20, seed=1).p_value == pytest.approx(0.003999600039996, abs=1e-12)
    assert paired_test(A20, B20, n_resamples=9999).p_value == pytest.approx(0.0028, abs=1e-12)


def test_paired_bootstrap_test_whole_result_and_confidence_level():
    got = paired_test(A20, B20, method="bootstrap")
    assert _t(got) == _approx(PairedResult(20, 4.9, 2.0, 2.9, 1.35, 4.3, 3 / 10001, "bootstrap", ""))
    at90 = paired_test(A20, B20, method="bootstrap", confidence=0.90)
    assert _t(at90) == _approx(PairedResult(20, 4.9, 2.0, 2.9, 1.6, 4.1, 3 / 10001, "bootstrap", ""))


def test_paired_bootstrap_p_value_counts_resamples_reaching_the_observed_mean_exactly():
    # d = [0, 2]: mean 1, centred [-1, 1]; a resample of both indices equal has |mean| = 1 exactly (counted,
    # ties are extreme), a mixed one 0.  seed 0 draws 55 of the 99 resamples with equal indices:
    # p = (1 + 55) / (1 + 99) = 0.56
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 2, size=(99, 2))
    assert int(np.count_nonzero(idx[:, 0] == idx[:, 1])) == 55
    got = paired_test({"a": 0.0, "b": 2.0}, {"a": 0.0, "b": 0.0}, method="bootstrap", n_resamples=99)
    assert _t(got) == (2, 1.0, 0.0, 1.0, 0.0, 2.0, pytest.approx(0.56), "bootstrap", "")


def test_paired_ci_falls_back_to_percentile_with_its_note():
    why = "percentile bootstrap: the BCa interval is undefined for these differences"
    d = {"a": 1.0, "b": 2.0, "c": 4.0, "d": 8.0}
    z = {k: 0.0 for k in d}
    got = paired_test(d, z, n_resamples=2, seed=1)
    assert _t(got) == _approx(PairedResult(4, 3.75, 0.0, 3.75, 4.525, 5.475, 2 / 3, "permutation", why))
    at50 = paired_test(d, z, n_resamples=2, seed=1, confidence=0.5)
    assert (at50.ci_low, at50.ci_high, at50.ci_note) == (pytest.approx(4.75), pytest.approx(5.25), why)
    ok = paired_test(d, z, n_resamples=3, seed=1)
    assert (ok.ci_note, ok.ci_low, ok.ci_high) == (
        "",
        pytest.approx(3.263667963500952, abs=1e-9),
        pytest.approx(5.284358337297546, abs=1e-9),
    )


def test_paired_errors_are_whole_sentences():
    with pytest.raises(
        ValueError,
        match="^" + re.escape("paired_test: the two models have no item with a finite score in common") + "$",
    ):
        paired_test({"a": 1.0}, {"a": float("inf")})
