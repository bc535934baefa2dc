"""The Answer's verdict claims only what the paired tests support: a winner in bold only when the paired test
separates the leader from the runner-up at the 5% level, and in the full order '>' only between adjacent models
the test separates ('≈' elsewhere), on the real report builder.

Hand-checked values: the paired test is the exact sign-flip permutation test of the mean difference for 6 items
(2**6 flips).  Six equal differences of +2 give p = 2 / 64 = 0.03125 ("0.0312", separated); five zero
differences and one of +1 give |mean| = 1/6 under every flip, so p = 1 ("1.0000", not separated)."""

from __future__ import annotations

from sgieval.core import MetricSpec, Score
from sgieval.tests.reports.test_ties_coverage import items, report, section

SCORE = MetricSpec(name="score", tasks=["generic"], range=(0.0, 10.0), primary=True, description="points")
COST = MetricSpec(
    name="cost", tasks=["generic"], range=(0.0, 10.0), primary=True, higher_is_better=False, description="cost"
)
LEGEND = (
    "Full order (best first; '>': separated by the paired test of the adjacent pair at the 5% level, '≈': not separated"
)

NINE = [9.0] * 6
NINE_ONE_LOWER = [9.0, 9.0, 9.0, 9.0, 9.0, 8.0]  # mean 8.83: differs from NINE on one item by 1 -> p = 1
SEVEN = [7.0] * 6  # NINE minus 2 on every item -> p = 0.0312
SEVEN_ONE_LOWER = [7.0, 7.0, 7.0, 7.0, 7.0, 6.0]  # mean 6.83


def scores_of(values: dict[str, list[float]], metric: str = "score") -> list[Score]:
    return [
        Score(item_id=f"g/{i}", model=m, metric=metric, value=v, rationale="r")
        for m, vs in values.items()
        for i, v in enumerate(vs)
    ]


def answer_of(tmp_path, values: dict[str, list[float]], spec: MetricSpec = SCORE) -> str:
    return section(full_report(tmp_path, values, spec), "Answer")


def full_report(tmp_path, values: dict[str, list[float]], spec: MetricSpec = SCORE) -> str:
    return report(tmp_path, items(6), scores_of(values, spec.name), [spec], spec.name, list(values))


def test_a_leader_the_paired_test_separates_is_the_winner_in_bold(tmp_path):
    # a 9.00 vs b 7.00: +2 on every item, p = 0.0312 -> separated; b 7.00 vs c 6.83: p = 1 -> not separated
    answer = answer_of(tmp_path, {"a": NINE, "b": SEVEN, "c": SEVEN_ONE_LOWER})
    assert (
        "**a** ranks first by score on 6 items (whole catalog): mean 9.00 per item (no variation over 6 items, so "
        "no CI); the paired test separates it from the runner-up b at the 5% level (p = 0.0312). "
        f"{LEGEND}): a > b ≈ c."
    ) in answer
    assert "No model is established as first" not in answer
    assert (
        "The full order tests adjacent models only, so it does not settle the order of models further apart; its "
        "2 p-values are not adjusted for multiple comparisons."
    ) in answer


def test_nothing_separated_names_no_winner_and_orders_nothing(tmp_path):
    # a 9.00, b 8.83, c 8.67: each adjacent pair differs on one item only -> p = 1 twice
    answer = answer_of(tmp_path, {"a": NINE, "b": NINE_ONE_LOWER, "c": [9.0, 9.0, 9.0, 9.0, 8.0, 8.0]})
    assert (
        "No model is established as first by score on 6 items (whole catalog): a leads with mean 9.00 per item (no "
        "variation over 6 items, so no CI), but the paired test does not separate it from b (p = 1.0000). "
        f"{LEGEND}): a ≈ b ≈ c."
    ) in answer
    assert "**a**" not in answer and " > " not in answer.split("- **How sure:**")[0]


def test_top_two_tied_and_a_later_pair_separated_groups_exactly(tmp_path):
    # like README command (1): a 9.00 ≈ b 8.83 (p = 1), b > c 6.83 (+2 on every item, p = 0.0312),
    # c ≈ d 6.67 (p = 1)
    values = {"a": NINE, "b": NINE_ONE_LOWER, "c": [v - 2 for v in NINE_ONE_LOWER], "d": [7, 7, 7, 7, 7, 5.0]}
    text = full_report(tmp_path, values)
    answer = section(text, "Answer")
    assert (
        "No model is established as first by score on 6 items (whole catalog): a leads with mean 9.00 per item (no "
        "variation over 6 items, so no CI), but the paired test does not separate it from b (p = 1.0000). "
        f"{LEGEND}): a ≈ b > c ≈ d."
    ) in answer
    assert "**a**" not in answer
    # the pairs table behind the grouping
    assert "| a vs b | 6 | 0.17 |" in text and "| 1.0000 | not significant |" in text
    assert "| b vs c | 6 | 2.00 | no variation over 6 items | 0.0312 | significant |" in text


def test_lower_is_better_orders_with_less_than(tmp_path):
    # cost, lower is better: c 6.83 first, then b 7.00, then a 9.00
    answer = answer_of(tmp_path, {"a": NINE, "b": SEVEN, "c": SEVEN_ONE_LOWER}, COST)
    # c 6.83 vs b 7.00: one item apart -> p = 1; b 7.00 vs a 9.00: -2 on every item -> p = 0.0312
    assert (
        "No model is established as first by cost on 6 items (whole catalog): c leads with mean 6.83 per item"
    ) in answer
    assert "but the paired test does not separate it from b (p = 1.0000)." in answer
    assert (
        "Full order (lowest first; '<': separated by the paired test of the adjacent pair at the 5% level, '≈': "
        "not separated): c ≈ b < a."
    ) in answer
