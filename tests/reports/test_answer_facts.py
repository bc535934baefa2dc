"""The Answer's facts beside the ranking (issue 17 items 1-3), on hand-made scores with hand-computed values."""

from __future__ import annotations

from sgieval.core import MetricSpec, Score
from sgieval.reports.answer import (dominant_item, flag_rows, judge_summary, judgement_sources, metric_tops,
                                    self_preference, sensitivity_sentence, tied_at_top)

ACC = MetricSpec(name="acc", tasks=["*"], range=(0, float("inf")))
NOV = MetricSpec(name="nov", tasks=["*"], range=(0, 1))
STORED = {"coherence": "o1-mini", "novelty": "text-embedding-3-large", "origin": "stored",
          "source": "the SciAidanBench definition"}


def S(item, model, value, metric="acc", **details):
    return Score(item_id=item, model=model, metric=metric, value=value, details={"judged_by": STORED, **details})


def _scores():
    # a: 10, 2, 0 (q3 empty: missing)   b: 4, 3, 4 (q2 censored)   c: 5, 5, 1
    return [S("q1", "a", 10), S("q2", "a", 2), S("q3", "a", 0, missing=True, flag_reason="empty stored list"),
            S("q1", "b", 4), S("q2", "b", 3, censored=True, flag_reason="stopped by error after 3", stop_error="boom"),
            S("q3", "b", 4), S("q1", "c", 5), S("q2", "c", 5), S("q3", "c", 1)]


def test_flag_rows_and_sensitivity_when_the_order_changes():
    scores = _scores()
    assert flag_rows(scores) == [
        {"item": "q3", "model": "a", "flag": "missing", "reason": "empty stored list", "error": ""},
        {"item": "q2", "model": "b", "flag": "censored", "reason": "stopped by error after 3", "error": "boom"}]
    # full means: a 4, b 3.67, c 3.67 -> order a > b > c (b before c by name on the tie); without q2, q3: a 10, b 4, c 5
    assert sensitivity_sentence(scores, ACC, ["a", "b", "c"]) == (
        "Sensitivity: 1 censored (stopped by an error, so the count is a lower bound) and 1 missing (an empty stored "
        "list) stored lists are counted as published (see Failures); leaving out the 2 items concerned, the order by "
        "acc changes to a > c > b.")


def test_sensitivity_unchanged_and_absent():
    scores = [S("q1", "a", 9), S("q2", "a", 8, censored=True, flag_reason="r"), S("q1", "b", 1), S("q2", "b", 2)]
    assert sensitivity_sentence(scores, ACC, ["a", "b"]) == (
        "Sensitivity: 1 censored (stopped by an error, so the count is a lower bound) stored list is counted as "
        "published (see Failures); leaving out the 1 item concerned, the order by acc does not change.")
    assert sensitivity_sentence([S("q1", "a", 9), S("q1", "b", 1)], ACC, ["a", "b"]) is None


def test_judges_and_self_preference():
    scores = _scores()
    src = judgement_sources(scores, ["a", "b"])
    assert src == [STORED]
    assert judge_summary(src, [], False) == (
        "none called in this run (judge metrics not run); stored judgements of the original run: coherence by "
        "o1-mini, novelty by text-embedding-3-large embeddings (from the SciAidanBench definition)")
    assert self_preference(["replay:o1-mini", "replay:phi4:latest"], src, [], False) == [
        "replay:o1-mini is ranked while o1-mini judged the coherence that decided its accepted answers (stored "
        "judgements of the original run): a judge may favour its own answers (self-preference), so its position may "
        "be overstated"]
    assert self_preference(["openai:m"], [], ["openai:m"], True) == [
        "openai:m is ranked while openai:m judged its responses (--allow-self-judge): a judge may favour its own "
        "answers (self-preference)"]
    assert self_preference(["openai:m"], [], ["openai:m"], False) == []


def test_tops_ties_and_dominance():
    scores = _scores() + [S("q1", m, v, metric="nov") for m, v in (("a", 0.25), ("b", 0.75), ("c", 0.75))]
    assert metric_tops(scores, [ACC, NOV], ["a", "b", "c"]) == {"acc": (["a"], 4.0), "nov": (["b", "c"], 0.75)}
    assert tied_at_top([("x", 80.0), ("y", 80.0), ("z", 79.5)]) == ["x", "y"]
    assert tied_at_top([("x", 80.0), ("y", 79.99)]) == ["x"]
    # a: 10 of 12 (83%) -> dominant; median of 10, 2, 0 is 2
    assert dominant_item(scores, "acc", "a") == {"item": "q1", "value": 10.0, "total": 12.0, "share": 10 / 12, "n": 3,
                                                 "mean": 4.0, "median": 2.0}
    assert dominant_item(scores, "acc", "c") is None  # 5, 5, 1: 5/11 = 45% but not twice the next item (5)
    assert dominant_item(scores, "acc", "b") is None  # 4, 3, 4: 36%
