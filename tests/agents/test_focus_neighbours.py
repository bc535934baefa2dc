"""A one-model request's rank among the evaluated models says whether the paired tests separate the model from
its neighbours just above and just below, on hand-computed 0/1 scores (exact permutation p-values)."""

from __future__ import annotations

from sgieval.agents.reporting import adjacent_pair_tests, ranking_stats
from sgieval.core import Score
from sgieval.metric_pool.generic import EXACT
from sgieval.reports import order_stats, tie_groups, verdict_sentence


def _verdict(table: dict[str, list[int]], focus: str) -> str:
    scores = [
        Score(item_id=f"i{k}", model=m, metric=EXACT.name, value=float(x))
        for m, xs in table.items()
        for k, x in enumerate(xs, 1)
    ]
    stats = order_stats(ranking_stats(scores, EXACT.name, list(table), 1000, 0), EXACT.higher_is_better)
    pairs = adjacent_pair_tests(scores, EXACT.name, stats, n_resamples=1000, seed=0)
    groups = tie_groups(stats, pairs)
    n = len(next(iter(table.values())))
    return verdict_sentence(f"How good is {focus}?", stats, EXACT, n, "", groups, None, focus, pairs)


def test_a_middle_rank_says_neither_neighbour_is_separated():
    # A 1.00 > B 0.50 > C 0.00 on 4 items.  A - B = (0, 0, 1, 1): of the 16 sign flips, |mean| 0.5 needs both 1s
    # with one sign (2 ways) and the 0s flip freely (4): p = 8/16 = 0.50; B - C = (1, 1, 0, 0) likewise p = 0.50
    text = _verdict({"A": [1, 1, 1, 1], "B": [1, 1, 0, 0], "C": [0, 0, 0, 0]}, "B")
    assert "Among the 3 evaluated models it ranks 2nd; first is A (mean 1.00)." in text
    assert text.endswith(
        " By the paired tests it is not separated from A just above (p = 0.50, 4 items) and not separated from C "
        "just below (p = 0.50, 4 items); so its rank is not established."
    )


def test_the_first_model_separated_from_the_one_below():
    # A 1.00 > B 0.00 on 6 items: A - B = six 1s, only the 2 all-same-sign flips of 64 reach |mean| 1: p = 0.03125
    text = _verdict({"A": [1] * 6, "B": [0] * 6}, "A")
    assert text.endswith(
        "it ranks 1st; next is B (mean 0.00). By the paired tests it is separated from B just below (p = 0.03, 6 "
        "items)."
    )


def test_a_model_tied_with_every_other_for_first_says_so():
    # A and B answer the same items right: mean 0.50 each, A - B = (0, 0, 0, 0), p = 1.00; one tie group holds every
    # evaluated model, so there is no "next" model below the tie to name
    text = _verdict({"A": [1, 0, 1, 0], "B": [1, 0, 1, 0]}, "A")
    assert (
        "Among the 2 evaluated models it ranks joint 1st (tied with B); every evaluated model is in this tie." in text
    )
    assert text.endswith(
        " By the paired tests it is not separated from B just below (p = 1.00, 4 items); so its rank is not established."
    )


def test_three_models_all_tied_for_first_name_the_other_two():
    # means 0.50 each on 4 items; every adjacent paired test has p >= 0.05 (4 items cannot reach it here), so one
    # tie group of three; the focus model's sentence names the other two and no model below
    text = _verdict({"A": [1, 0, 1, 0], "B": [0, 1, 0, 1], "C": [1, 1, 0, 0]}, "C")
    assert (
        "Among the 3 evaluated models it ranks joint 1st (tied with A, B); every evaluated model is in this tie."
        in text
    )
