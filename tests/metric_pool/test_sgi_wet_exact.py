"""SGI wet experiment asserted whole (mutants test_sgi_wet.py left alive): every score record of
one item (value, rationale, details), exact error messages of PA in both directions, the permutation matching's
tie-break, the LCS alignment's tie-break and its length against an independent LCS, the soft scores' edge cases."""

from __future__ import annotations

import math
import random

import pytest

from sgieval.core import Item, Response
from sgieval.metric_pool.sgi.wet_experiment import (
    Step,
    WetExperimentMetric,
    align_actions,
    parameter_accuracy,
    parameter_accuracy_perm,
    parse_params,
    parse_protocol,
    parse_protocol_code,
    sequence_similarity,
    sequence_similarity_perm,
    soft_scores,
    split_pairs,
)


def steps(*specs):
    return tuple(Step(action=a, params=dict(p), output=o) for a, p, o in specs)


# ------------------------------------------------------------------------------------------------ parsing
@pytest.mark.parametrize(
    "line,pieces",
    [
        ("a=1,b=2", ["a=1", "b=2"]),  # no space after the comma
        ("X=1, y=2", ["X=1", " y=2"]),  # only " and ' open quotes
        ("a=f(g(1), k=2), b=3", ["a=f(g(1), k=2)", " b=3"]),  # nested brackets
        ("a=[[1], k=2], b=3", ["a=[[1], k=2]", " b=3"]),
        ("a='x, b=1', c=2", ["a='x, b=1'", " c=2"]),
    ],
)
def test_split_pairs_edges(line, pieces):
    assert split_pairs(line) == pieces


def test_parse_params_reads_every_line_and_strips_one_pair_of_double_quotes():
    block = 'a = "v"\n\n)\nnot a pair\nb = 2,\n  c="x" ,\nd = "\nq = "say "hi""'
    assert parse_params(block) == {"a": "v", "b": "2", "c": "x", "d": "", "q": 'say "hi"'}
    # the published code does not split two pairs on one line; the default parser does
    assert parse_params("a=1, b=2") == {"a": "1, b=2"}
    assert parse_params("a=1, b=2", split_commas=True) == {"a": "1", "b": "2"}


def test_parse_protocol_closes_a_call_at_its_balanced_parenthesis_outside_quotes():
    text = 'x = <A>(k=f(1), s=")")\ny = <B>(\n  m=g((2)),\n  n="(")\nz = <C>(\n)'
    assert parse_protocol(text) == steps(
        ("A", {"k": "f(1)", "s": ")"}, "x"), ("B", {"m": "g((2))", "n": "("}, "y"), ("C", {}, "z")
    )
    # a multi-line call closed on a parameter line, then plain text, then a step
    text = 'x = <A>(\n  k=(1),\n  m=2)\ntext (with parens)\ny = <B>(n=1)'
    assert parse_protocol(text) == steps(("A", {"k": "(1)", "m": "2"}, "x"), ("B", {"n": "1"}, "y"))


def test_code_parser_reads_each_multi_line_step():
    text = 'x = <A>(\n  k = "1"\n)\ny = <B>(\n  m = x\n)'
    assert parse_protocol_code(text) == steps(("A", {"k": "1"}, "x"), ("B", {"m": "x"}, "y"))


# ------------------------------------------------------------------------------------ sequence similarity
def test_sequence_similarity_counts_each_kind_of_inversion():
    assert sequence_similarity(["a", "b"], ["b", "a"]) == 0.0
    assert sequence_similarity(["b", "a"], ["a", "b"]) == 0.0
    assert sequence_similarity(["a", "a"], ["b", "a"]) == 1.0  # equal reference names never invert
    assert sequence_similarity(["a", "b"], ["a", "a"]) == 1.0  # equal predicted names neither
    assert sequence_similarity(["b", "a"], ["a", "a"]) == 1.0
    assert sequence_similarity(["a", "b", "c"], ["a", "c", "b"]) == pytest.approx(2 / 3)


GT_PAR = steps(("A", {"x": "1"}, "a"), ("B", {"y": "2"}, "b"), ("C", {"u": "a", "v": "b"}, "c"))
"""Groups [(0, 2), (2, 3)]: A and B are independent, C consumes both."""


def test_sequence_similarity_perm_values():
    swapped = steps(("B", {}, "q"), ("A", {}, "p"), ("C", {}, "r"))
    assert sequence_similarity_perm(GT_PAR, swapped) == 1.0
    # C moved first: pairs (0,2) and (1,2) cross groups and invert; (0,1) inside a group is forgiven
    assert sequence_similarity_perm(GT_PAR, steps(("C", {}, "r"), ("B", {}, "q"), ("A", {}, "p"))) == pytest.approx(
        1 - 2 / 3
    )
    assert sequence_similarity_perm(GT_PAR, swapped[:2]) == 0.0  # lengths differ
    assert sequence_similarity_perm(GT_PAR[:1], swapped[:1]) == 1.0  # n = 1
    # n = 2 in two groups (B consumes a): inverted -> 0
    chain = steps(("A", {}, "a"), ("B", {"i": "a"}, "b"))
    assert sequence_similarity_perm(chain, steps(("B", {}, "b"), ("A", {}, "a"))) == 0.0


# ------------------------------------------------------------------------------------- parameter accuracy
def test_pa_wiring_messages_in_both_directions_and_joined_per_step():
    gt = steps(("A", {}, "a"), ("B", {"i": "a", "j": "lit"}, "b"))
    pred = steps(("A", {}, "p"), ("B", {"i": "5", "j": "p"}, "q"))
    assert parameter_accuracy(gt, pred) == (
        0.5,
        ["step 2: i: expected generated variable, got literal; j: expected literal, got generated variable"],
    )


def test_pa_counts_missing_and_extra_steps_by_name():
    one = steps(("A", {}, "a"))
    two = steps(("A", {}, "a"), ("B", {}, "b"))
    assert parameter_accuracy(two, one) == (0.5, ["1 missing step(s)"])
    assert parameter_accuracy(one, two) == (0.5, ["1 extra step(s)"])
    assert parameter_accuracy((), two) == (0.0, ["2 extra step(s)"])
    assert parameter_accuracy(two, ()) == (0.0, ["2 missing step(s)"])
    assert parameter_accuracy_perm((), two) == (0.0, ["2 extra step(s)"])
    assert parameter_accuracy_perm(two, ()) == (0.0, ["2 missing step(s)"])
    assert parameter_accuracy_perm(two, one) == (0.5, ["1 missing step(s)"])
    assert parameter_accuracy_perm(one, two) == (0.5, ["1 extra step(s)"])
    with pytest.raises(ValueError, match="both parse to 0 protocol steps"):
        parameter_accuracy_perm((), ())


def test_pa_perm_stops_at_the_shorter_prediction_between_groups():
    chain = steps(("A", {}, "a"), ("B", {"i": "a"}, "b"), ("C", {"i": "b"}, "c"))
    assert parameter_accuracy_perm(chain, steps(("A", {}, "p"))) == (pytest.approx(1 / 3), ["2 missing step(s)"])


def test_pa_perm_keeps_the_positional_pairing_when_every_matching_has_the_same_errors():
    gt = steps(("A", {}, "a"), ("B", {}, "b"))
    pred = steps(("C", {}, "p"), ("D", {}, "q"))
    assert parameter_accuracy_perm(gt, pred) == (
        0.0,
        [
            "step 1 (matched to predicted step 1): action mismatch: expected 'A', got 'C'",
            "step 2 (matched to predicted step 2): action mismatch: expected 'B', got 'D'",
        ],
    )
    # a real swap is matched across positions, and numbered by reference and predicted position
    pred = steps(("B", {"z": "1"}, "q"), ("A", {}, "p"), ("C", {}, "r"))
    gt3 = steps(("A", {}, "a"), ("B", {}, "b"), ("C", {}, "c"))
    assert parameter_accuracy_perm(gt3, pred) == (
        pytest.approx(2 / 3),
        ["step 2 (matched to predicted step 1): parameter keys mismatch: expected [], got ['z']"],
    )


# ----------------------------------------------------------------------------------------------- soft (A.4b)
def _lcs_len(a, b):
    """Independent LCS length (recursion with memo)."""
    from functools import lru_cache

    @lru_cache(maxsize=None)
    def f(i, j):
        if i == len(a) or j == len(b):
            return 0
        return max(f(i + 1, j + 1) + 1 if a[i] == b[j] else 0, f(i + 1, j), f(i, j + 1))

    return f(0, 0)


def test_align_actions_is_a_longest_common_subsequence_on_300_random_pairs():
    rng = random.Random(15)
    for _ in range(300):
        g = steps(*[(rng.choice("abc"), {}, f"g{k}") for k in range(rng.randint(0, 6))])
        p = steps(*[(rng.choice("abc"), {}, f"p{k}") for k in range(rng.randint(0, 6))])
        pairs = align_actions(g, p)
        assert len(pairs) == _lcs_len(tuple(s.action for s in g), tuple(s.action for s in p))
        assert all(g[i].action == p[j].action for i, j in pairs)
        assert all(0 <= i < len(g) and 0 <= j < len(p) for i, j in pairs)
        assert all(a[0] < b[0] and a[1] < b[1] for a, b in zip(pairs, pairs[1:]))


def test_align_actions_tie_break_drops_the_reference_step_first():
    # [a, b] vs [b, a]: both LCS have length 1; at the tie the reference's last step is dropped -> a with a
    assert align_actions(steps(("a", {}, "x"), ("b", {}, "y")), steps(("b", {}, "p"), ("a", {}, "q"))) == [(0, 1)]
    g = steps(("x", {}, "1"), ("a", {}, "2"), ("b", {}, "3"))
    p = steps(("a", {}, "4"), ("b", {}, "5"), ("x", {}, "6"))
    assert align_actions(g, p) == [(1, 0), (2, 1)]


def test_action_names_are_normalised_by_case_and_whitespace():
    g = steps(("Thaw  Cells", {}, "a"), ("Straße", {}, "b"))
    p = steps((" thaw\tcells ", {}, "p"), ("STRASSE", {}, "q"))
    # lower-casing: "straße" != "strasse" (upper-casing would make both "STRASSE")
    assert align_actions(g, p) == [(0, 0)]


def test_soft_scores_edge_cases_and_details():
    ss, pa, d = soft_scores((), ())
    assert ss == 1.0 and math.isnan(pa) and d == {"aligned": []}
    assert soft_scores((), steps(("A", {}, "a"))) == (0.0, 0.0, {"aligned": []})
    # param-less steps on both sides: key score 1, value score 1
    assert soft_scores(steps(("A", {}, "a")), steps(("a", {}, "p"))) == (
        1.0,
        1.0,
        {"aligned": [(0, 0)], "pair_score_sum": 1.0},
    )
    # no shared key (one side has none): the pair scores 0; SS = (1/1) * (1/2)
    got = soft_scores(steps(("A", {"k": "1"}, "a")), steps(("A", {}, "p"), ("B", {}, "q")))
    assert got == (0.5, 0.0, {"aligned": [(0, 0)], "pair_score_sum": 0.0})
    got = soft_scores(steps(("A", {}, "a")), steps(("A", {"k": "1"}, "p")))
    assert got == (1.0, 0.0, {"aligned": [(0, 0)], "pair_score_sum": 0.0})


def test_soft_value_score_wiring():
    gt = steps(("A", {}, "a"), ("B", {"i": "a", "j": "lit", "k": "a"}, "b"))
    # i: generated on both sides and mapped (p -> a): ok; j: literal on both: ok; k: generated vs literal: not ok
    pred = steps(("A", {}, "p"), ("B", {"i": "p", "j": "other", "k": "7"}, "q"))
    ss, pa, d = soft_scores(gt, pred)
    # pair 1: 1 x 1; pair 2: key 1 x value 2/3 -> sum 5/3; soft PA = (5/3)^2 / 4
    assert (ss, d) == (1.0, {"aligned": [(0, 0), (1, 1)], "pair_score_sum": pytest.approx(5 / 3)})
    assert pa == pytest.approx(25 / 36)
    # literal in the reference, generated in the prediction: not ok
    pred = steps(("A", {}, "p"), ("B", {"i": "p", "j": "p", "k": "p"}, "q"))
    assert soft_scores(gt, pred)[2]["pair_score_sum"] == pytest.approx(1 + 2 / 3)


# ------------------------------------------------------------------------------------------- whole records
REF = 'a = <Thaw>(\n  t=37\n)\nb = <Wash>(\n  cells=a\n)\nc = <Count>(\n  cells=b\n)'
PRED = 'x = <Wash>(\n  cells=y\n)\ny = <Thaw>(\n  t=4\n)\nz = <Count>(\n  cells=x\n)'


def test_every_score_of_one_item_whole():
    item = Item(id="w1", benchmark="sgi-bench", task="wet_experiment", prompt="p", reference={"answer": REF})
    out = WetExperimentMetric().score_sync(item, Response(item_id="w1", model="m", text=PRED))
    got = {s.metric: (s.value, s.status, s.rationale, s.details) for s in out}
    e1 = "step 1: action mismatch: expected 'Thaw', got 'Wash'"
    e2 = "step 2: action mismatch: expected 'Wash', got 'Thaw'"
    e3 = "step 3: cells: expected output of 'b', got 'x' (maps to None)"
    perm3 = "step 3 (matched to predicted step 3): cells: expected output of 'b', got 'x' (maps to None)"
    acts = {"gt_actions": ["Thaw", "Wash", "Count"], "pred_actions": ["Wash", "Thaw", "Count"]}
    assert got == {
        "wet_sequence_similarity": (pytest.approx(2 / 3), "ok", "3 reference vs 3 predicted steps: SS 0.6667", acts),
        "wet_parameter_accuracy": (
            0.0,
            "ok",
            f"3 reference vs 3 predicted steps: PA 0.0000; errors: {e1} | {e2} | {e3}",
            {"errors": [e1, e2, e3]},
        ),
        "wet_final_score": (
            pytest.approx(1 / 3),
            "ok",
            "(SS 0.6667 + PA 0.0000) / 2",
            {"ss": pytest.approx(2 / 3), "pa": 0.0, "errors": [e1, e2, e3]},
        ),
        "wet_sequence_similarity_perm": (
            pytest.approx(2 / 3),
            "ok",
            "3 reference vs 3 predicted steps, groups [(0, 1), (1, 2), (2, 3)]: SS_perm 0.6667",
            {"groups": [(0, 1), (1, 2), (2, 3)]},
        ),
        "wet_parameter_accuracy_perm": (
            0.0,
            "ok",
            "3 reference vs 3 predicted steps: PA 0.0000; errors: "
            + " | ".join(
                [
                    e1.replace("step 1:", "step 1 (matched to predicted step 1):"),
                    e2.replace("step 2:", "step 2 (matched to predicted step 2):"),
                    perm3,
                ]
            ),
            {
                "errors": [
                    e1.replace("step 1:", "step 1 (matched to predicted step 1):"),
                    e2.replace("step 2:", "step 2 (matched to predicted step 2):"),
                    perm3,
                ]
            },
        ),
        "wet_final_score_perm": (
            pytest.approx(1 / 3),
            "ok",
            "(SS 0.6667 + PA 0.0000) / 2",
            {
                "ss": pytest.approx(2 / 3),
                "pa": 0.0,
                "errors": [
                    e1.replace("step 1:", "step 1 (matched to predicted step 1):"),
                    e2.replace("step 2:", "step 2 (matched to predicted step 2):"),
                    perm3,
                ],
            },
        ),
        "wet_sequence_similarity_code": (
            pytest.approx(2 / 3),
            "ok",
            "3 reference vs 3 predicted steps: SS 0.6667",
            acts,
        ),
        "wet_parameter_accuracy_code": (
            0.0,
            "ok",
            f"3 reference vs 3 predicted steps: PA 0.0000; errors: {e1} | {e2} | {e3}",
            {"errors": [e1, e2, e3]},
        ),
        "wet_final_score_code": (
            pytest.approx(1 / 3),
            "ok",
            "(SS 0.6667 + PA 0.0000) / 2",
            {"ss": pytest.approx(2 / 3), "pa": 0.0, "errors": [e1, e2, e3]},
        ),
        # LCS of [thaw, wash, count] and [wash, thaw, count] = 2; backtracking takes count-count, then at the
        # tie drops the reference's wash: thaw-thaw -> soft SS (2/3)(2/3) = 4/9
        "wet_soft_sequence_similarity": (
            pytest.approx(4 / 9),
            "ok",
            "2 LCS-aligned actions of 3 reference / 3 predicted: soft SS 0.4444",
            {"aligned": [(0, 1), (2, 2)], "pair_score_sum": 1.0},
        ),
        # thaw(t=37) vs thaw(t=4): literals on both sides -> 1 (y -> a recorded); count(cells=b) vs
        # count(cells=x): x is not mapped -> 0; soft PA = 1^2 / 9
        "wet_soft_parameter_accuracy": (
            pytest.approx(1 / 9),
            "ok",
            "soft PA 0.1111 over 2 aligned pairs",
            {"aligned": [(0, 1), (2, 2)], "pair_score_sum": 1.0},
        ),
    }


def test_a_perfect_prediction_has_no_error_suffix():
    item = Item(id="w1", benchmark="sgi-bench", task="wet_experiment", prompt="p", reference={"answer": REF})
    out = WetExperimentMetric().score_sync(item, Response(item_id="w1", model="m", text=REF))
    got = {s.metric: (s.rationale, s.details) for s in out}
    assert got["wet_parameter_accuracy"] == ("3 reference vs 3 predicted steps: PA 1.0000", {"errors": []})


def test_soft_pa_needs_steps_on_one_side_at_least():
    item = Item(id="w1", benchmark="sgi-bench", task="wet_experiment", prompt="p", reference={"answer": REF})
    out = {
        s.metric: s for s in WetExperimentMetric().score_sync(item, Response(item_id="w1", model="m", text="no steps"))
    }
    assert (
        out["wet_soft_parameter_accuracy"].value,
        out["wet_soft_parameter_accuracy"].status,
        out["wet_soft_parameter_accuracy"].rationale,
    ) == (0.0, "ok", "soft PA 0.0000 over 0 aligned pairs")
    item0 = Item(id="w0", benchmark="sgi-bench", task="wet_experiment", prompt="p", reference={"answer": "none"})
    out = {s.metric: s for s in WetExperimentMetric().score_sync(item0, Response(item_id="w0", model="m", text=REF))}
    assert (out["wet_soft_parameter_accuracy"].value, out["wet_soft_parameter_accuracy"].status) == (0.0, "ok")


def test_pa_perm_tie_between_two_equal_matchings_keeps_the_positional_one():
    # both reference steps are A; the prediction's A is at position 2: matching ref 1 or ref 2 to it costs one
    # error either way -> the positional pairing (ref 2 with pred 2) is kept, ref 1 carries the error
    gt = steps(("A", {}, "a"), ("A", {}, "b"))
    pred = steps(("Z", {}, "p"), ("A", {}, "q"))
    assert parameter_accuracy_perm(gt, pred) == (
        0.5,
        ["step 1 (matched to predicted step 1): action mismatch: expected 'A', got 'Z'"],
    )


def test_one_sided_quotes_are_kept_and_equal_reference_names_never_invert():
    assert parse_params('k = "abc\nm = abc"') == {"k": '"abc', "m": 'abc"'}
    assert sequence_similarity(["a", "a"], ["a", "b"]) == 1.0
