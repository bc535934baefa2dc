"""Who wins where, where a lead comes from, and the items that depart most from the overall order, on hand-computed
values (three models, four items in two facet values)."""

from __future__ import annotations

import pytest

from sgieval.metric_pool.differences import facet_winners, lead_sources, order_departures

# facet X: i1, i2; facet Y: i3, i4.  Overall means: A 5.0, B 3.5, C 3.5 (B and C tie)
VALUES = {
    "A": {"i1": 10.0, "i2": 8.0, "i3": 1.0, "i4": 1.0},
    "B": {"i1": 2.0, "i2": 4.0, "i3": 3.0, "i4": 5.0},
    "C": {"i1": 5.0, "i2": 5.0, "i3": 2.0, "i4": 2.0},
}
FACET = {"i1": "X", "i2": "X", "i3": "Y", "i4": "Y"}


def test_first_model_per_value_its_lead_and_the_paired_test():
    x, y = facet_winners(VALUES, FACET, "discipline", n_resamples=1000, seed=0)
    # X: A 9, C 5, B 3 -> A first, lead 4 over C; paired A - C = (5, 3): the 4 sign flips give mean differences
    # 4, 1, -1, -4, so |4| is reached by 2 of 4: p = 0.5, not separated
    assert (x.value, x.n_items, x.first, x.lead) == ("X", 2, ["A"], 4.0)
    assert [(m, mean) for m, mean, _n in x.order] == [("A", 9.0), ("C", 5.0), ("B", 3.0)]
    assert x.test.n == 2 and x.test.p_value == pytest.approx(0.5) and x.separated is False
    # Y: B 4, C 2, A 1 -> B first, lead 2; B - C = (1, 3): p = 0.5; A is third
    assert (y.first, y.lead, y.rank_of) == (["B"], 2.0, {"B": 1, "C": 2, "A": 3})
    assert y.test.p_value == pytest.approx(0.5)


def test_a_tie_for_first_is_a_tie_and_one_value_gives_no_table():
    tied = {"A": {"i1": 3.0, "i2": 3.0}, "B": {"i1": 4.0, "i2": 2.0}, "C": {"i1": 1.0, "i3": 1.0}}
    x, y = facet_winners(tied, {"i1": "X", "i2": "X", "i3": "Y", "i9": "Z"}, "task")  # Z: no scored item
    assert (y.value, y.first, y.lead) == ("Y", ["C"], None)  # one model: no lead
    assert x.first == ["A", "B"] and x.lead is None and x.test is None  # A 3 = B 3: no winner, never by name
    assert x.rank_of == {"A": 1, "B": 1, "C": 3}
    assert facet_winners(VALUES, {i: "X" for i in FACET}, "task") == []  # one value: the ranking itself


def test_lower_is_better_orders_ascending():
    x, _y = facet_winners(VALUES, FACET, "discipline", higher_is_better=False, n_resamples=100)
    assert x.first == ["B"] and x.lead == pytest.approx(3.0 - 5.0)


def test_lead_sources_split_the_overall_difference():
    # A - B per item: 8, 4, -2, -4 -> X +12, Y -6, total +6: shares 2.0 and -1.0
    shares = lead_sources(VALUES, FACET, "discipline", "A", "B")
    assert [(s.value, s.n, s.diff, s.share) for s in shares] == [("X", 2, 12.0, 2.0), ("Y", 2, -6.0, -1.0)]


def test_order_departures_rank_items_by_footrule_distance():
    # overall ranks: A 1, B 2.5, C 2.5.  i1, i2: A > C > B -> |1-1| + |3-2.5| + |2-2.5| = 1;
    # i3, i4: B > C > A -> |3-1| + |1-2.5| + |2-2.5| = 4
    overall = {"A": 5.0, "B": 3.5, "C": 3.5}
    got = order_departures(VALUES, overall, limit=None)
    assert [(d.item_id, d.distance) for d in got] == [("i3", 4.0), ("i4", 4.0), ("i1", 1.0), ("i2", 1.0)]
    assert got[0].ranks == {"A": 3.0, "B": 1.0, "C": 2.0}
    assert [d.item_id for d in order_departures(VALUES, overall, limit=1)] == ["i3"]
    same = {"A": {"i1": 2.0}, "B": {"i1": 1.0}}
    assert order_departures(same, {"A": 2.0, "B": 1.0}) == []  # the overall order itself departs by 0
