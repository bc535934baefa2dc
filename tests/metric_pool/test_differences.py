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


# equal at the printed precision (2 decimals): P 0.504, Q 0.503 are one group; R 0.20 is the second group
NEAR = {
    "Q": {"j1": 0.503, "j2": 0.503},
    "P": {"j1": 0.504, "j2": 0.504},
    "R": {"j1": 0.2, "j2": 0.2},
    "S": {"j1": 0.6, "j2": 0.4, "j3": 0.9},
}
NEAR_FACET = {"j1": "U", "j2": "U", "j3": "V"}


def test_means_equal_at_two_decimals_are_one_group_never_ordered_by_name():
    u, _v = facet_winners(NEAR, NEAR_FACET, "discipline", n_resamples=1000, seed=0)
    # U: S 0.50 (0.6 and 0.4), P 0.504, Q 0.503 all round to 0.50: one first group in the order given (Q, P, S:
    # the stable order of the values, not P before Q by name), no single first, no lead; R 0.20 is the second group
    assert u.groups == [["Q", "P", "S"], ["R"]]
    assert (u.first, u.second, u.lead, u.test) == (["Q", "P", "S"], ["R"], None, None)
    assert u.rank_of == {"Q": 1, "P": 1, "S": 1, "R": 4}


def test_a_tied_second_group_is_the_second_and_the_test_is_the_least_separated():
    values = {
        "A": {"k1": 1.0, "k2": 1.0, "k3": 1.0, "k4": 1.0},
        "B": {"k1": 0.0, "k2": 0.0, "k3": 0.0, "k4": 1.0},
        "C": {"k1": 0.0, "k2": 1.0, "k3": 0.0, "k4": 0.0},
    }
    values["A"]["k5"] = values["B"]["k5"] = 0.0  # a second facet value, so there is a table
    w, _z = facet_winners(values, {"k1": "W", "k2": "W", "k3": "W", "k4": "W", "k5": "Z"}, "task")
    # W: A 1.00; B 0.25 = C 0.25 is the second group, so the lead is 0.75 over both.  A - B = (1, 1, 1, 0) and
    # A - C = (1, 0, 1, 1): of the 16 sign flips, |mean| 0.75 is reached by the 2 that keep the three 1s together
    # (the 0 flips freely: 2 x 2 = 4): p = 4/16 = 0.25 for both
    assert w is not None and (w.first, w.second, w.lead) == (["A"], ["B", "C"], 0.75)
    assert w.test.p_value == pytest.approx(0.25)


def test_an_item_every_model_scores_the_same_has_no_order():
    values = {"A": {"q1": 1.0, "q5": 0.0}, "B": {"q1": 0.0, "q5": 0.0}, "C": {"q1": 1.0, "q5": 0.0}}
    # overall A 0.50 = C 0.50 (mean rank 1.5 each), B 0 (rank 3); q1: A = C 1 (1.5), B 0 (3): distance 0; q5: all
    # 0: no order, left out (it would be |2 - 1.5| + |2 - 3| + |2 - 1.5| = 2 as a three-way tie)
    assert order_departures(values, {"A": 0.5, "B": 0.0, "C": 0.5}) == []
    values["B"]["q1"] = 1.0
    values["A"]["q1"] = 0.0
    # q1 now: B = C 1 (1.5 each), A 0 (3): |3 - 1.5| + |1.5 - 3| + |1.5 - 1.5| = 3; q5 still left out
    (d,) = order_departures(values, {"A": 0.5, "B": 0.0, "C": 0.5})
    assert (d.item_id, d.distance) == ("q1", 3.0)
