"""Judge reliability: Krippendorff's alpha, offsets, leave-one-judge-out, self-preference,
position bias and test-retest, against hand computations."""

from __future__ import annotations

from fractions import Fraction

import pytest

from sgieval.core import MetricSpec, Score
from sgieval.metric_pool.reliability import judge_values, position_flips, reliability, reliability_rows

SPEC = MetricSpec(
    name="reasoning_validity",
    tasks=["experimental_reasoning"],
    kind="judge",
    range=(0, 10),
    description="d",
    source="s",
)
A, B, C = "openai:gpt-4.1", "anthropic:claude-judge", "local:smollm2"
# (judge A, judge B, judge C) per unit; units = (item, target model)
TABLE = {("q1", "m1"): (2, 3, 4), ("q2", "m1"): (5, 5, 6), ("q1", "m2"): (8, 9, 7), ("q2", "m2"): (1, 2, 2)}


def _scores(table, judges=(A, B, C), metric="reasoning_validity"):
    return [
        Score(
            item_id=i,
            model=m,
            metric=metric,
            value=sum(v) / len(v),
            judge=",".join(judges),
            details={"per_judge": {j: {"score": x, "rationale": "r"} for j, x in zip(judges, v)}},
        )
        for (i, m), v in table.items()
    ]


def hand_alpha(units: list[list[float]]) -> Fraction:
    """Krippendorff's alpha, interval level, complete data (Krippendorff 2011, "Computing Krippendorff's
    alpha-reliability", section C):  alpha = 1 - D_o / D_e with
    D_o = 1/n * sum_u 1/(m_u - 1) * sum_{c != k in u} (c - k)^2   (ordered pairs within a unit),
    D_e = 1/(n (n - 1)) * sum_{c != k over all n values} (c - k)^2."""
    n = sum(len(u) for u in units)
    d_o = (
        sum(
            Fraction(sum((a - b) ** 2 for i, a in enumerate(u) for j, b in enumerate(u) if i != j), len(u) - 1)
            for u in units
        )
        / n
    )
    vals = [v for u in units for v in u]
    d_e = Fraction(sum((a - b) ** 2 for i, a in enumerate(vals) for j, b in enumerate(vals) if i != j), n * (n - 1))
    return 1 - d_o / d_e


def test_alpha_equals_the_hand_computation():
    # by hand: unit sums of squared differences over ordered pairs 12, 4, 12, 4, each / (3 - 1): 6+2+6+2 = 16,
    # D_o = 16 / 12 = 4/3; all 12 values: 1800 over ordered pairs, D_e = 1800 / 132 = 150/11;
    # alpha = 1 - (4/3) / (150/11) = 1 - 44/450 = 203/225 = 0.90222
    assert hand_alpha([list(v) for v in TABLE.values()]) == Fraction(203, 225)
    rel = reliability(_scores(TABLE), SPEC, n_resamples=200)
    assert rel.level == "interval" and rel.judges == sorted([A, B, C]) and rel.n_units == 4
    assert rel.alpha == pytest.approx(203 / 225)
    lo, hi = rel.alpha_ci
    assert lo <= hi <= 1.0
    # four units: the bootstrap CI reaches below 0.667, so agreement is not established despite alpha 0.90
    assert "0.90" in rel.verdict and "its CI reaches below 0.667" in rel.verdict


def test_close_agreement_on_many_units_lets_the_ranking_stand():
    table = {(f"q{q}", f"m{q % 2}"): (q % 10, q % 10 + (q % 3 == 0), q % 10) for q in range(40)}
    rel = reliability(_scores(table), SPEC, n_resamples=300)
    assert rel.alpha > 0.95 and rel.alpha_ci[0] > 0.9
    assert "agree well enough for the ranking to stand" in rel.verdict


def test_offsets_and_leave_one_judge_out():
    rel = reliability(_scores(TABLE), SPEC, n_resamples=200)
    off = {o.judge: o for o in rel.offsets}
    # unit means 3, 16/3, 8, 5/3; A's offsets -1, -1/3, 0, -2/3 -> mean -0.5
    assert off[A].mean == pytest.approx(-0.5) and off[A].n == 4
    # B: 0, -1/3, 1, 1/3 -> 0.25;  C: 1, 2/3, -1, 1/3 -> 0.25 (offsets sum to 0 on complete data)
    assert off[B].mean == pytest.approx(0.25) and off[C].mean == pytest.approx(0.25)
    # model means over judges: m1 (3 + 16/3) / 2 = 4.1667, m2 (8 + 5/3) / 2 = 4.8333 -> m2 first
    assert rel.full_order == ["m2", "m1"]
    # without C: m1 (2.5 + 5) / 2 = 3.75, m2 (8.5 + 1.5) / 2 = 5 -> same order
    loo = {x.dropped: x for x in rel.leave_one_out}
    assert loo[C].order == ["m2", "m1"] and not loo[C].top_changed and not loo[C].order_changed


def test_dropping_the_one_dissenting_judge_changes_the_top():
    table = {("q1", "m1"): (6, 6, 9), ("q2", "m1"): (6, 6, 9), ("q1", "m2"): (7, 7, 1), ("q2", "m2"): (7, 7, 1)}
    rel = reliability(_scores(table), SPEC, n_resamples=200)
    # full: m1 7, m2 5 -> m1 first; without C: m1 6, m2 7 -> m2 first
    assert rel.full_order == ["m1", "m2"]
    loo = {x.dropped: x for x in rel.leave_one_out}
    assert loo[C].order == ["m2", "m1"] and loo[C].top_changed and loo[C].order_changed
    assert not loo[A].top_changed
    assert rel.alpha < 0.667 and "do not agree enough" in rel.verdict


def test_lower_is_better_orders_ascending():
    spec = SPEC.model_copy(update={"higher_is_better": False})
    assert reliability(_scores(TABLE), spec, n_resamples=100).full_order == ["m1", "m2"]


def test_self_preference_of_a_judge_for_its_own_answers_is_detected():
    # judge A (openai:gpt-4.1) gives its own replayed answers 3 points more than the other two judges on every
    # item, and agrees with them on another OpenAI model's answers (openai:gpt-4o): only the first is a row
    table = {}
    for q in range(8):
        base = 3 + q % 4
        table[(f"q{q}", "replay:gpt-4.1")] = (base + 3, base, base)
        table[(f"q{q}", "openai:gpt-4o")] = (base, base, base + (q % 2))
    rel = reliability(_scores(table), SPEC, n_resamples=500)
    [pref] = rel.self_preference
    # judge - mean(other two) on its own answers: +3 on every item
    assert (pref.judge, pref.target, pref.model, pref.n) == (A, "replay:gpt-4.1", "gpt-4.1", 8)
    # constant differences: a CI without variation, which decides nothing; the exact sign-flip test over the
    # 2**8 = 256 sign patterns does: only all-plus reaches +3, two-sided p = 2/256 = 0.0078 < 0.05
    assert pref.diff == pytest.approx(3.0) and pref.significant
    assert pref.ci_low == pytest.approx(3.0) and pref.ci_high == pytest.approx(3.0)
    rows = reliability_rows(rel)
    assert rows["significant_self_preference"] == [
        "openai:gpt-4.1 scores replay:gpt-4.1 (the same model: gpt-4.1) 3.00 above the other judges (the same on "
        "all 8 units: no variation, so the sign-flip test decides)"
    ]
    assert rows["self_preference"][0][4] == "no variation over 8 units"


def test_a_judge_of_another_model_of_its_provider_is_not_self_preference():
    """Self-preference compares model identities, never providers: an Anthropic judge that scores a different
    Anthropic model 3 points above the panel is not a self-preference row (it is the judge's offset); the same
    judge scoring its own answers is."""
    opus, sonnet = "anthropic:claude-opus-4", "anthropic:claude-sonnet-4"
    table = {(f"q{q}", sonnet): (3 + q % 4 + 3, 3 + q % 4, 3 + q % 4) for q in range(6)}
    rel = reliability(_scores(table, judges=(opus, B, C)), SPEC, n_resamples=200)
    assert rel.self_preference == [] and reliability_rows(rel)["significant_self_preference"] == []
    own = {(item, "replay:claude-opus-4"): v for (item, _), v in table.items()}
    rel = reliability(_scores(own, judges=(opus, B, C)), SPEC, n_resamples=200)
    [pref] = rel.self_preference
    assert (pref.judge, pref.target, pref.model) == (opus, "replay:claude-opus-4", "claude-opus-4")


def test_a_judge_stricter_with_its_own_answers_is_a_negative_difference():
    table = {(f"q{q}", "replay:smollm2"): (5 + q % 3, 5 + q % 3, 4 + q % 3) for q in range(6)}
    [pref] = reliability(_scores(table), SPEC, n_resamples=300).self_preference
    # judge C (local:smollm2) on its own answers: (4 + r) - (5 + r) = -1 on every item, a constant: CI [-1, -1]
    # without variation; the exact sign-flip test over 2**6 = 64 patterns gives p = 2/64 = 0.03125 < 0.05
    assert pref.judge == C and pref.diff == pytest.approx(-1.0) and pref.significant


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("openai:gpt-4o", "replay:gpt-4o", True),
        ("replay:llama3.3:latest", "ollama:llama3.3", True),
        ("replay:openai/4o", "openai:4o", True),
        ("openai-api:vllm/Qwen2.5-7B", "replay:qwen2.5-7b", True),
        ("anthropic:claude-opus-4", "anthropic:claude-sonnet-4", False),
        ("ollama:llama3.1:8b", "ollama:llama3.1:70b", False),
        ("openai:gpt-4.1", "openai:gpt-4.1-mini", False),
    ],
)
def test_model_identity(a, b, same):
    from sgieval.core import same_model

    assert same_model(a, b) is same


def test_rubric_judge_values_are_weighted_means_x10():
    s = Score(
        item_id="q",
        model="m",
        metric="rigor",
        value=0.0,
        details={"per_judge": {"j1": {"a": 8, "b": 5}, "j2": {"a": 2, "b": 2}}, "weights": {"a": 2, "b": 1}},
    )
    # j1: (2*8 + 5) / 3 * 10 = 70; j2: 20
    assert judge_values(s) == {"j1": pytest.approx(70.0), "j2": pytest.approx(20.0)}


def test_position_bias_share_of_flipped_vote_pairs():
    def ev(judge, order, verdicts):
        return {
            "tool": "judge",
            "judge": judge,
            "order": order,
            "votes": {d: {"judgment": v, "reason": ""} for d, v in verdicts.items()},
        }

    fwd, rev = "A=reference,B=generated", "A=generated,B=reference"
    s1 = Score(
        item_id="i1",
        model="m",
        metric="novelty_win",
        value=100.0,
        evidence=[
            ev("j1", fwd, {"novelty": "win_B", "rigor": "win_A"}),
            ev("j1", rev, {"novelty": "win_B", "rigor": "win_B"}),
            ev("j2", fwd, {"novelty": "win_A", "rigor": "win_A"}),
            ev("j2", rev, {"novelty": "win_A", "rigor": "win_A"}),
        ],
    )
    # 4 pairs (j1 novelty, j1 rigor, j2 novelty, j2 rigor); only j1 rigor changed with the order -> 1/4
    assert position_flips([s1]) == (0.25, 4)
    assert position_flips([Score(item_id="i", model="m", metric="x", value=1.0)]) == (None, 0)


def test_test_retest_alpha_per_judge():
    s = [
        Score(
            item_id=f"q{i}",
            model="m",
            metric="reasoning_validity",
            value=1.0,
            details={
                "per_judge": {A: {"score": v}, B: {"score": v}},
                "judge_repeats": {A: [v, v], B: [v, v + (1 if i == 0 else 0)]},
            },
        )
        for i, v in enumerate([2, 5, 8, 3])
    ]
    rel = reliability(s, SPEC, n_resamples=50)
    assert rel.retest[A] == pytest.approx(1.0)
    # B's repeats (2,3), (5,5), (8,8), (3,3): by hand D_o = 2/8 * (1/1) = 0.25 ... alpha = 1 - D_o/D_e
    units = [[2, 3], [5, 5], [8, 8], [3, 3]]
    assert rel.retest[B] == pytest.approx(float(hand_alpha(units)))


def test_one_judge_gives_no_reliability():
    one = [
        Score(item_id="q", model="m", metric="reasoning_validity", value=3.0, details={"per_judge": {A: {"score": 3}}})
    ]
    assert reliability(one, SPEC) is None


def test_self_preference_without_differences_is_not_significant():
    table = {(f"q{q}", "replay:gpt-4.1"): (4 + q % 3 + q % 2, 5 + q % 3 - q % 2, 5 + q % 3 - q % 2) for q in range(8)}
    [pref] = reliability(_scores(table), SPEC, n_resamples=500).self_preference
    # A - mean(B, C), r = q % 3: q odd (5 + r) - (4 + r) = +1, q even (4 + r) - (5 + r) = -1 -> mean 0
    assert pref.diff == pytest.approx(0.0) and not pref.significant
