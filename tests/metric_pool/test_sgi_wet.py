"""SGI-Bench Wet Experiment: protocol parsing (A.4, D.2), SS, PA, final score, the
permutation-equivalent, code and soft (A.4b) variants."""

import pytest

from sgieval.core import Item, Response
from sgieval.metric_pool.sgi.wet_experiment import (
    Step,
    WetExperimentMetric,
    independent_groups,
    parameter_accuracy,
    parameter_accuracy_perm,
    parse_protocol,
    split_pairs,
    parse_protocol_code,
    sequence_similarity,
    sequence_similarity_perm,
    soft_scores,
)

REF = '''Protocol:
a = <Thaw cells>(
    cells="PBMC vial",
    temp = 37
)
b = <Wash cells>(
    cells=a,
    buffer="PBS (1x)",
)
c = <Count cells>(
    cells=b
)'''


def steps(*specs):
    """steps(("A", {"x": "1"}, "a"), ...) -> tuple of Step."""
    return tuple(Step(action=a, params=dict(p), output=o) for a, p, o in specs)


def test_parse_multiline_reference():
    got = parse_protocol(REF)
    assert got == steps(
        ("Thaw cells", {"cells": "PBMC vial", "temp": "37"}, "a"),  # quotes removed, spaces around =
        ("Wash cells", {"cells": "a", "buffer": "PBS (1x)"}, "b"),
        ("Count cells", {"cells": "b"}, "c"),
    )
    assert parse_protocol_code(REF) == got  # the code agrees on well-formed multi-line protocols


def test_single_line_call_is_one_step_but_code_swallows_next():
    text = "x = <A>(k=1)\ny = <B>(\n  m=x\n)"
    assert parse_protocol(text) == steps(("A", {"k": "1"}, "x"), ("B", {"m": "x"}, "y"))
    # code: the lazy block runs to the next bare ")" line -> one step whose lines are
    # "k=1)" -> k: "1)", "y = <B>(" -> y: "<B>(", "m=x" -> m: "x"
    assert parse_protocol_code(text) == steps(("A", {"k": "1)", "y": "<B>(", "m": "x"}, "x"))


def test_params_on_opening_line_and_two_params_on_one_line():
    assert parse_protocol("x = <A>(k=1,\n  m = \"v\"\n)") == steps(("A", {"k": "1", "m": "v"}, "x"))
    # D.2 as amended: several pairs on one line are split on commas outside quotes and brackets
    assert parse_protocol("x = <A>(\n  a=1, b=2\n)") == steps(("A", {"a": "1", "b": "2"}, "x"))
    assert parse_protocol("x = <A>(a=1, b=2)") == steps(("A", {"a": "1", "b": "2"}, "x"))
    # the published code's parser keeps A.4: one key whose value holds the comma
    assert parse_protocol_code("x = <A>(\n  a=1, b=2\n)") == steps(("A", {"a": "1, b=2"}, "x"))


@pytest.mark.parametrize(
    "line, pieces",
    [
        ("a=1, b=2", ["a=1", " b=2"]),
        ('a="x, y", b=2', ['a="x, y"', " b=2"]),  # comma inside double quotes
        ("a='x, y=1', b=2", ["a='x, y=1'", " b=2"]),  # inside single quotes
        ("a=[1, 2], b=f(3, c=4)", ["a=[1, 2]", " b=f(3, c=4)"]),  # inside brackets
        ("cond=37 C, 5% CO2", ["cond=37 C, 5% CO2"]),  # no 'key =' after the comma: one value
        ("a=1,", ["a=1,"]),
    ],
)
def test_split_pairs(line, pieces):
    assert split_pairs(line) == pieces


def test_one_line_call_equals_the_multi_line_call():
    # The same call on one line and over four lines gives PA 1.0
    one = "a = <X>(p=1, q=2)"
    four = "a = <X>(\n    p=1,\n    q=2\n)"
    assert parse_protocol(one) == parse_protocol(four) == steps(("X", {"p": "1", "q": "2"}, "a"))
    assert parameter_accuracy(parse_protocol(four), parse_protocol(one)) == (1.0, [])
    # variant: quoted values with commas and a wired input, two steps
    ref = 'a = <Mix>(\n  buffer="PBS, pH 7.4",\n  volume=10\n)\nb = <Spin>(\n  sample=a,\n  g=300\n)'
    pred = 'a = <Mix>(buffer="PBS, pH 7.4", volume=10)\nb = <Spin>(sample=a, g=300)'
    assert parameter_accuracy(parse_protocol(ref), parse_protocol(pred)) == (1.0, [])


def test_parse_details():
    assert parse_protocol("x = <A>(\n)") == steps(("A", {}, "x"))  # empty call
    assert parse_protocol("x = <A>(\n k='v',\n k=2\n)") == steps(("A", {"k": "2"}, "x"))  # last value wins
    assert parse_protocol("x = <A>(\n k='v'\n)") == steps(("A", {"k": "'v'"}, "x"))  # single quotes kept
    assert parse_protocol("x = <A>(\n k=1,\n not a param\n m=2)") == steps(("A", {"k": "1", "m": "2"}, "x"))
    # an unclosed call ends at the next step's header
    assert parse_protocol("x = <A>(\n k=1\ny = <B>(\n)") == steps(("A", {"k": "1"}, "x"), ("B", {}, "y"))
    assert parse_protocol("no protocol here") == ()


@pytest.mark.parametrize(
    "gt,pred,expected",
    [
        (["A", "B", "C"], ["A", "B", "C"], 1.0),
        (["A", "B", "C"], ["C", "B", "A"], 0.0),  # 3 of 3 pairs inverted
        (["A", "B", "C"], ["A", "C", "B"], 1 - 1 / 3),  # only pair (1,2) inverted: B<C vs C>B
        (["A", "B", "C"], ["A", "B"], 0.0),  # different lengths
        (["A"], ["Z"], 1.0),
        ([], [], 1.0),  # n <= 1
        (["A", "B", "C"], ["X", "X", "X"], 1.0),  # repeating one name: equal names never invert
    ],
)
def test_sequence_similarity(gt, pred, expected):
    assert sequence_similarity(gt, pred) == pytest.approx(expected)


GT = steps(("A", {"x": "s"}, "a"), ("B", {"y": "a"}, "b"), ("C", {"z": "b"}, "c"))


def test_pa_wiring_through_renamed_outputs():
    pred = steps(("A", {"x": "t"}, "p"), ("B", {"y": "p"}, "q"), ("C", {"z": "q"}, "r"))
    assert parameter_accuracy(GT, pred) == (1.0, [])  # literals may differ; p->a, q->b map correctly


def test_pa_wrong_wiring():
    pred = steps(("A", {"x": "t"}, "p"), ("B", {"y": "p"}, "q"), ("C", {"z": "p"}, "r"))
    pa, errors = parameter_accuracy(GT, pred)
    assert pa == pytest.approx(1 - 1 / 3)  # step 3: p maps to a, reference expects b
    assert errors == ["step 3: z: expected output of 'b', got 'p' (maps to 'a')"]


def test_pa_type_mismatch_breaks_later_mapping():
    pred = steps(("A", {"x": "t"}, "p"), ("B", {"y": "lit"}, "q"), ("C", {"z": "q"}, "r"))
    pa, errors = parameter_accuracy(GT, pred)
    # step 2: literal vs generated -> error, so q is not mapped; step 3: q maps to None != b -> error
    assert pa == pytest.approx(1 - 2 / 3)
    assert errors[0] == "step 2: y: expected generated variable, got literal"


def test_pa_action_and_key_mismatch_and_lengths():
    pred = steps(("A", {"x": "t", "w": "1"}, "p"), ("Z", {"y": "p"}, "q"))
    pa, errors = parameter_accuracy(GT, pred)
    # step 1 keys differ, step 2 action differs, +1 missing step -> 3 errors / max(3, 2) -> 0
    assert pa == 0.0
    assert errors == [
        "step 1: parameter keys mismatch: expected ['x'], got ['w', 'x']",
        "step 2: action mismatch: expected 'B', got 'Z'",
        "1 missing step(s)",
    ]
    pa2, _ = parameter_accuracy(GT, GT[:2])
    assert pa2 == pytest.approx(1 - 1 / 3)  # 0 step errors + 1 length error over 3


def test_pa_zero_steps():
    with pytest.raises(ValueError, match=r"both parse to 0 protocol steps \(METRICS.md D.2\)"):
        parameter_accuracy((), ())
    assert parameter_accuracy(GT, ())[0] == 0.0  # 1 - 3/3


# permutation-equivalent: two independent preparations then a step using both
GT_PAR = steps(
    ("Prepare buffer", {"v": "1"}, "a"), ("Prepare cells", {"n": "2"}, "b"), ("Mix", {"x": "a", "y": "b"}, "c")
)
PRED_SWAPPED = steps(
    ("Prepare cells", {"n": "2"}, "q"), ("Prepare buffer", {"v": "1"}, "p"), ("Mix", {"x": "p", "y": "q"}, "r")
)


def test_independent_groups():
    assert independent_groups(GT_PAR) == [(0, 2), (2, 3)]
    assert independent_groups(GT) == [(0, 1), (1, 2), (2, 3)]  # a chain: singletons
    assert independent_groups(()) == []


def test_perm_variants_forgive_swapped_independent_steps():
    names_gt, names_pred = [s.action for s in GT_PAR], [s.action for s in PRED_SWAPPED]
    # positional: pair (0,1) inverted ("Prepare buffer" < "Prepare cells" vs the opposite) -> 1 - 1/3
    assert sequence_similarity(names_gt, names_pred) == pytest.approx(2 / 3)
    # positional PA: steps 1, 2 action mismatch; step 3: p unmapped -> 3 errors -> 0
    assert parameter_accuracy(GT_PAR, PRED_SWAPPED)[0] == 0.0
    # perm: pair (0,1) lies in group (0,2) -> no inversion; matching gt0<->pred1, gt1<->pred0 -> no errors
    assert sequence_similarity_perm(GT_PAR, PRED_SWAPPED) == 1.0
    assert parameter_accuracy_perm(GT_PAR, PRED_SWAPPED) == (1.0, [])


def test_perm_equals_positional_on_chains():
    pred = steps(("A", {"x": "t"}, "p"), ("B", {"y": "lit"}, "q"), ("C", {"z": "q"}, "r"))
    assert (
        parameter_accuracy_perm(GT, pred)[0] == pytest.approx(parameter_accuracy(GT, pred)[0]) == pytest.approx(1 / 3)
    )
    assert sequence_similarity_perm(GT, pred) == 1.0


def test_soft_scores():
    pred = steps(("a", {"x": "t"}, "p"), (" c ", {"z": "p"}, "r"))
    ss, pa, d = soft_scores(GT, pred)
    # LCS of [a, b, c] and [a, c] (normalised) = 2 -> soft SS = (2/3) * (2/2)
    assert d["aligned"] == [(0, 0), (2, 1)]
    assert ss == pytest.approx(2 / 3)
    # pair (0,0): key 1 x value 1 (both literals) = 1; pair (2,1): z: p maps to a, gt b -> value 0 -> 0
    # soft PA = 1^2 / (3 * 2)
    assert pa == pytest.approx(1 / 6)
    assert soft_scores(GT, ())[:2] == (0.0, 0.0)


def test_soft_partial_keys():
    g = steps(("A", {"x": "1", "y": "2"}, "a"))
    p = steps(("A", {"x": "9"}, "p"))
    # key score = 2*1/(2+1) = 2/3, value score = 1/1 -> pair 2/3 -> soft PA = (2/3)^2 / 1
    assert soft_scores(g, p)[1] == pytest.approx(4 / 9)


# ------------------------------------------------------------------ the metric
def wet_item(answer=REF):
    return Item(
        id="sgi-bench/SGI_WetExperiment_0000",
        benchmark="sgi-bench",
        task="wet_experiment",
        discipline="life",
        prompt="p",
        reference={"answer": answer, "action_pool": "..."},
    )


def score_all(text, answer=REF):
    out = WetExperimentMetric().score_sync(wet_item(answer), Response(item_id="x", model="m", text=text))
    return {s.metric: s for s in out}


def test_metric_perfect_prediction_in_answer_tags():
    s = score_all("Plan:\n<answer>\n" + REF.replace("Protocol:\n", "") + "\n</answer>")
    for name in (
        "wet_sequence_similarity",
        "wet_parameter_accuracy",
        "wet_final_score",
        "wet_final_score_perm",
        "wet_final_score_code",
        "wet_soft_sequence_similarity",
        "wet_soft_parameter_accuracy",
    ):
        assert s[name].value == 1.0, name


def test_metric_single_line_prediction_default_vs_code():
    pred = (
        'a = <Thaw cells>(\ncells="v",\ntemp=37\n)\n'
        'b = <Wash cells>(cells=a,\nbuffer=PBS\n)\n'  # params start on the "(" line
        'c = <Count cells>(cells=b)'
    )  # one-line call, no closing line
    s = score_all(pred)
    # default parser: 3 steps, all correct -> SS 1, PA 1
    assert (s["wet_sequence_similarity"].value, s["wet_parameter_accuracy"].value, s["wet_final_score"].value) == (
        1,
        1,
        1,
    )
    # code parser: the one-line call has no closing ")" line and is lost -> 2 steps vs 3:
    # SS 0 (lengths differ); PA: 0 step errors + 1 missing -> 1 - 1/3; final (0 + 2/3)/2 = 1/3
    assert s["wet_sequence_similarity_code"].value == 0.0
    assert s["wet_parameter_accuracy_code"].value == pytest.approx(2 / 3)
    assert s["wet_final_score_code"].value == pytest.approx(1 / 3)


def test_metric_final_is_mean_of_ss_and_pa():
    pred = REF.replace("cells=b", "cells=a")  # step 3 wired to the wrong step
    s = score_all(pred)
    # SS 1 (same actions), PA 1 - 1/3 -> final (1 + 2/3)/2 = 5/6
    assert s["wet_final_score"].value == pytest.approx(5 / 6)
    assert s["wet_final_score"].details == {
        "ss": 1.0,
        "pa": pytest.approx(2 / 3),
        "errors": ["step 3: cells: expected output of 'b', got 'a' (maps to 'a')"],
    }


def test_metric_zero_steps_both_sides_fails_pa_only():
    s = score_all("I cannot write a protocol.", answer="no steps")
    assert s["wet_sequence_similarity"].value == 1.0  # n = 0 <= 1
    for name in (
        "wet_parameter_accuracy",
        "wet_final_score",
        "wet_parameter_accuracy_perm",
        "wet_soft_parameter_accuracy",
        "wet_parameter_accuracy_code",
    ):
        assert s[name].status == "parse_error" and s[name].value is None, name
        assert s[name].error == (
            "parameter accuracy is undefined: the reference and the prediction both parse "
            "to 0 protocol steps (METRICS.md D.2)"
        )


def test_metric_empty_reply_scores_zero_against_reference():
    s = score_all("")  # "None" -> 0 steps vs 3
    assert (s["wet_sequence_similarity"].value, s["wet_parameter_accuracy"].value) == (0.0, 0.0)


def test_metric_missing_reference_is_input_error():
    it = Item(id="w", benchmark="sgi-bench", task="wet_experiment", prompt="p", reference={})
    out = WetExperimentMetric().score_sync(it, Response(item_id="w", model="m", text=REF))
    assert {s.status for s in out} == {"input_error"} and len(out) == 11


def test_wet_metric_reads_the_protocol_after_the_reasoning():
    # D.8 also when a metric is called directly (API, `sgieval metric test`), not through the evaluation agent
    ref = "a = <X>(\n    p=1,\n    q=2\n)"
    it = Item(id="w", benchmark="sgi-bench", task="wet_experiment", prompt="?", reference={"answer": ref})
    draft = "<think>b = <Y>(r=3)\nc = <Z>(s=4)</think>\n"
    scores = {
        s.metric: s.value
        for s in WetExperimentMetric().score_sync(
            it, Response(item_id="w", model="m", text=draft + "a = <X>(p=1, q=2)")
        )
    }
    assert scores["wet_parameter_accuracy"] == 1.0 and scores["wet_sequence_similarity"] == 1.0
    empty = WetExperimentMetric().score_sync(it, Response(item_id="w", model="m", text=draft))
    assert {s.status for s in empty} == {"empty"}
