"""The report's ranking helpers asserted exactly (reports/ranking.py): order by mean in
either direction with ties by name, CI cells and overlap at the edges, the adjacent-pair entry, item values and
the number formats the ranking table prints."""

from __future__ import annotations

import math

from sgieval.core import Score
from sgieval.metric_pool.stats import PairedResult, Summary
from sgieval.metric_pool.base import CORPUS
from sgieval.reports import (
    ModelStat,
    ci_overlap,
    ci_text,
    fmt,
    fmt2,
    fmt_p,
    fmt_total,
    has_ci,
    item_values,
    order_stats,
    pair_entry,
)

NAN = math.nan


def _s(mean, lo=0.0, hi=1.0, method="bca", note=""):
    return Summary(n=4, mean=mean, total=4 * mean, std=0.1, ci_low=lo, ci_high=hi, method=method, note=note)


def test_order_by_mean_in_either_direction_ties_by_name_unranked_last():
    stats = [
        ModelStat("m-b", _s(0.5), 0),
        ModelStat("none-1", None, 3),
        ModelStat("m-a", _s(0.5), 0),
        ModelStat("m-c", _s(0.9), 0),
        ModelStat("m-d", _s(0.1), 1),
        ModelStat("none-0", None, 2),
    ]
    assert [s.model for s in order_stats(stats, True)] == ["m-c", "m-a", "m-b", "m-d", "none-1", "none-0"]
    assert [s.model for s in order_stats(stats, False)] == ["m-d", "m-a", "m-b", "m-c", "none-1", "none-0"]


def test_an_unranked_model_has_no_stats():
    import pytest

    with pytest.raises(ValueError, match="^m has no ok score: it is not ranked$"):
        _ = ModelStat("m", None, 2).stats


def test_ci_cells():
    assert ci_text(_s(0.5, 0.25, 0.75)) == "0.25 to 0.75"
    assert (
        ci_text(_s(0.5, 0.25, 0.75, "wilson", "Wilson score interval for 2 of 4"))
        == "0.25 to 0.75 (Wilson score, 0/1 metric)"
    )
    # a zero-width interval shows no variation: it is said so, never printed as "7.00 to 7.00"
    assert ci_text(_s(7.0, 7.0, 7.0, "degenerate", "zero-width")) == "no variation over 4 items"
    assert ci_text(_s(7.0, 6.0, 8.0, "percentile", "why")) == "6.00 to 8.00 (why)"
    assert ci_text(_s(7.0, 6.0, 8.0, "percentile", "")) == "6.00 to 8.00"
    assert ci_text(_s(7.0, 6.0, 8.0, "bca", "ignored")) == "6.00 to 8.00"
    assert ci_text(_s(7.0, NAN, NAN, "none", "no CI: fewer than 2 items")) == "n/a (no CI: fewer than 2 items)"
    assert ci_text(_s(7.0, NAN, NAN, "none", "")) == "n/a"
    assert ci_text(_s(7.0, 1.0, NAN)) == "n/a"
    assert (has_ci(_s(1, 0, 1)), has_ci(_s(1, NAN, 1)), has_ci(_s(1, 0, NAN))) == (True, False, False)


def test_ci_overlap_edges():
    assert ci_overlap(_s(1, 0.0, 1.0), _s(1, 1.0, 2.0)) is True  # touching bounds overlap
    assert ci_overlap(_s(1, 1.0, 2.0), _s(1, 0.0, 1.0)) is True
    assert ci_overlap(_s(1, 0.0, 1.0), _s(1, 1.5, 2.0)) is False
    assert ci_overlap(_s(1, 1.5, 2.0), _s(1, 0.0, 1.0)) is False
    assert ci_overlap(_s(1, NAN, 1.0), _s(1, 0.0, 1.0)) is None
    assert ci_overlap(_s(1, 0.0, 1.0), _s(1, 0.0, NAN)) is None


def test_pair_entry_whole():
    hi, lo = ModelStat("A", _s(0.8, 0.6, 0.9), 0), ModelStat("B", _s(0.4, 0.2, 0.5), 0)
    assert pair_entry(hi, lo, 7, None) == {"a": "A", "b": "B", "n": 7, "p": None, "overlap": False}
    r = PairedResult(
        n=6, mean_a=0.8, mean_b=0.4, mean_diff=0.4, ci_low=0.1, ci_high=0.7, p_value=0.05, method="permutation"
    )
    assert pair_entry(hi, lo, 7, r) == {
        "a": "A",
        "b": "B",
        "n": 6,
        "p": 0.05,
        "overlap": False,
        "method": "permutation, A minus B",
        "mean_diff": "0.40",
        "ci": "0.10 to 0.70",
        "p_value": "0.0500",
        "significant": False,
    }
    r2 = PairedResult(
        n=6, mean_a=0.8, mean_b=0.4, mean_diff=0.4, ci_low=0.1, ci_high=0.7, p_value=0.04999, method="bootstrap"
    )
    assert pair_entry(hi, lo, 7, r2)["significant"] is True


def test_item_values_keep_only_ok_item_level_scores_of_the_model_and_metric():
    sc = [
        Score(item_id="i1", model="m", metric="x", value=1.0),
        Score(item_id="i2", model="m", metric="x", value=0.0),
        Score(item_id="i3", model="m", metric="x", value=None, status="judge_error", error="e"),
        Score(item_id="i4", model="other", metric="x", value=1.0),
        Score(item_id="i5", model="m", metric="y", value=1.0),
        Score(item_id=CORPUS, model="m", metric="x", value=0.7),
    ]
    assert item_values(sc, "m", "x") == {"i1": 1.0, "i2": 0.0}


def test_number_formats_of_the_ranking_table():
    from sgieval.core import MetricSpec

    assert (fmt(None), fmt(NAN), fmt(3.0), fmt(2.5), fmt(2.345, 1), fmt(7)) == ("n/a", "n/a", "3", "2.50", "2.3", "7")
    assert (fmt2(None), fmt2(NAN), fmt2(8.0), fmt2(7.756)) == ("n/a", "n/a", "8.00", "7.76")
    assert (fmt_p(None), fmt_p(NAN), fmt_p(0.00009), fmt_p(0.0001), fmt_p(0.5625)) == (
        "n/a",
        "n/a",
        "< 0.0001",
        "0.0001",
        "0.5625",
    )
    count = MetricSpec(name="c", tasks=["t"], range=(0.0, math.inf))
    share = MetricSpec(name="s", tasks=["t"], range=(0.0, 1.0))
    assert (fmt_total(12.0, count), fmt_total(12.0, share)) == ("12", "12.00")


def test_ci_cells_of_a_summary_without_method_or_note():
    from types import SimpleNamespace

    assert ci_text(SimpleNamespace(ci_low=0.25, ci_high=0.75)) == "0.25 to 0.75"
    assert ci_text(SimpleNamespace(ci_low=NAN, ci_high=0.75)) == "n/a"
