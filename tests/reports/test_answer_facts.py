"""The Answer's facts beside the ranking, on hand-made scores with hand-computed values."""

from __future__ import annotations

from sgieval.core import MetricSpec, Score
from sgieval.reports import (
    dominant_item,
    flag_rows,
    judge_summary,
    judgement_sources,
    metric_tops,
    self_preference,
    sensitivity_sentence,
)
from sgieval.metric_pool.stats import Summary
from sgieval.reports import ModelStat, order_with_ties, rank_labels, tie_groups

ACC = MetricSpec(name="acc", tasks=["*"], range=(0, float("inf")))
NOV = MetricSpec(name="nov", tasks=["*"], range=(0, 1))
STORED = {
    "coherence": "o1-mini",
    "novelty": "text-embedding-3-large",
    "origin": "stored",
    "source": "the SciAidanBench definition",
}


def S(item, model, value, metric="acc", **details):
    return Score(item_id=item, model=model, metric=metric, value=value, details={"judged_by": STORED, **details})


def _scores():
    # a: 10, 2, 0 (q3 empty: missing)   b: 4, 3, 4 (q2 censored)   c: 5, 5, 1
    return [
        S("q1", "a", 10),
        S("q2", "a", 2),
        S("q3", "a", 0, missing=True, flag_reason="empty stored list"),
        S("q1", "b", 4),
        S("q2", "b", 3, censored=True, flag_reason="stopped by error after 3", stop_error="boom"),
        S("q3", "b", 4),
        S("q1", "c", 5),
        S("q2", "c", 5),
        S("q3", "c", 1),
    ]


def test_flag_rows_and_sensitivity_when_the_order_changes():
    scores = _scores()
    assert flag_rows(scores) == [
        {"item": "q3", "model": "a", "flag": "missing", "reason": "empty stored list", "error": ""},
        {"item": "q2", "model": "b", "flag": "censored", "reason": "stopped by error after 3", "error": "boom"},
    ]
    # full means: a 4, b 3.67, c 3.67 -> order a > b = c (a tie: name order ranks nothing); without q2, q3: a 10,
    # b 4, c 5
    assert sensitivity_sentence(scores, ACC, ["a", "b", "c"]) == (
        "Sensitivity: 1 censored (stopped by an error, so the count is a lower bound) and 1 missing (an empty stored "
        "list) stored lists are counted as published (see Failures); leaving out the 2 items concerned, the order by "
        "acc changes to a > c > b."
    )


def test_sensitivity_unchanged_and_absent():
    scores = [S("q1", "a", 9), S("q2", "a", 8, censored=True, flag_reason="r"), S("q1", "b", 1), S("q2", "b", 2)]
    assert sensitivity_sentence(scores, ACC, ["a", "b"]) == (
        "Sensitivity: 1 censored (stopped by an error, so the count is a lower bound) stored list is counted as "
        "published (see Failures); leaving out the 1 item concerned, the order by acc does not change."
    )
    assert sensitivity_sentence([S("q1", "a", 9), S("q1", "b", 1)], ACC, ["a", "b"]) is None


def test_sensitivity_states_ties_as_ties():
    # full means a 0.6, b 0.6 (a tie); leaving out the censored q2: a 0.6, b 0.6 -> the order (a tie) does not change
    tie = [S("q1", "a", 0.6), S("q2", "a", 0.6, censored=True, flag_reason="r"), S("q1", "b", 0.6), S("q2", "b", 0.6)]
    assert sensitivity_sentence(tie, ACC, ["b", "a"]).endswith("the order by acc does not change.")
    scores = [
        S("q1", "a", 0.2),
        S("q2", "a", 0.8, censored=True, flag_reason="r"),
        S("q1", "b", 0.4),
        S("q2", "b", 0.4),
        S("q1", "c", 0.4),
        S("q2", "c", 0.2),
    ]
    # full: a 0.5, b 0.4, c 0.3 -> a > b > c; without q2: a 0.2, b 0.4, c 0.4 -> b = c > a
    assert sensitivity_sentence(scores, ACC, ["a", "b", "c"]).endswith("the order by acc changes to b = c > a.")


def test_judges_and_self_preference():
    scores = _scores()
    src = judgement_sources(scores, ["a", "b"])
    assert src == [STORED]
    assert judge_summary(src, [], False) == (
        "none called in this run (judge metrics not run); stored judgements of the original run: coherence by "
        "o1-mini, novelty by text-embedding-3-large embeddings (from the SciAidanBench definition)"
    )
    assert self_preference(["replay:o1-mini", "replay:phi4:latest"], src, [], False) == [
        "replay:o1-mini is ranked while o1-mini judged the coherence that decided its accepted answers (stored "
        "judgements of the original run): a judge may favour its own answers (self-preference), so its position may "
        "be overstated"
    ]
    assert self_preference(["openai:m"], [], ["openai:m"], True) == [
        "openai:m is ranked while openai:m judged its responses (--allow-self-judge): a judge may favour its own "
        "answers (self-preference)"
    ]
    assert self_preference(["openai:m"], [], ["openai:m"], False) == []


def test_a_judge_of_another_model_of_its_provider_is_not_called_self_preference():
    """With --allow-self-judge, an Anthropic judge scoring a different Anthropic model is not self-preference
    (model identities are compared, never provider prefixes); the same judge scoring its own answers is, also
    when they are replayed; and the guard that keeps a model from judging itself sees the same identities."""
    from sgieval.metric_pool.base import ScoringContext
    from sgieval.models.base import NamedModel

    opus, sonnet = "anthropic:claude-opus-4", "anthropic:claude-sonnet-4"
    assert self_preference([sonnet], [], [opus], True) == []
    assert self_preference(["replay:claude-opus-4"], [], [opus], True) == [
        "replay:claude-opus-4 is ranked while anthropic:claude-opus-4 judged its responses (--allow-self-judge): a "
        "judge may favour its own answers (self-preference)"
    ]
    ctx = ScoringContext(judges=[NamedModel(name=opus, role="judge")])
    assert [j.name for j in ctx.judges_for(sonnet)] == [opus]  # another model: it may judge
    assert ctx.judges_for("replay:claude-opus-4") == []  # itself: not without --allow-self-judge


def test_tops_ties_and_dominance():
    scores = _scores() + [S("q1", m, v, metric="nov") for m, v in (("a", 0.25), ("b", 0.75), ("c", 0.75))]
    assert metric_tops(scores, [ACC, NOV], ["a", "b", "c"]) == {"acc": (["a"], 4.0), "nov": (["b", "c"], 0.75)}
    # ties (METRICS.md D.16): equal at the printed precision and not separated by the paired test
    st = [
        ModelStat(m, Summary(n=4, mean=v, total=4 * v, std=1.0, ci_low=0.0, ci_high=99.0), 0)
        for m, v in (("x", 80.0), ("y", 80.004), ("z", 79.5), ("w", 79.5))
    ]
    untested = {"p": None}
    g = tie_groups(st, [untested, untested, {"p": 0.5, "significant": False}])
    assert [[s.model for s in grp] for grp in g] == [["x", "y"], ["z", "w"]]
    assert rank_labels(g) == {"x": "1=", "y": "1=", "z": "3=", "w": "3="}
    assert order_with_ties(g) == "x = y > z = w" and order_with_ties(g, False) == "x = y < z = w"
    # printed alike (79.50) but separated by the paired test: not a tie
    g = tie_groups(st[2:], [{"p": 0.01, "significant": True}])
    assert rank_labels(g) == {"z": "1", "w": "2"}
    # a: 10 of 12 (83%) -> dominant; median of 10, 2, 0 is 2
    assert dominant_item(scores, "acc", "a") == {
        "item": "q1",
        "value": 10.0,
        "total": 12.0,
        "share": 10 / 12,
        "n": 3,
        "mean": 4.0,
        "median": 2.0,
    }
    assert dominant_item(scores, "acc", "c") is None  # 5, 5, 1: 5/11 = 45% but not twice the next item (5)
    assert dominant_item(scores, "acc", "b") is None  # 4, 3, 4: 36%


# ------------------------------------------------------------------ the Answer, through the real build_report
import asyncio  # noqa: E402

from sgieval.agents.reporting import build_report  # noqa: E402
from sgieval.reports import ReportContext  # noqa: E402
from sgieval.core import Item  # noqa: E402

SCORE = MetricSpec(name="score", tasks=["generic"], range=(0.0, 100.0), primary=True)
ITEMS = [Item(id=f"g/{i}", benchmark="jsonl", task="generic", discipline="physics", prompt=f"q{i}") for i in range(4)]
HEADER = {
    "run_id": "r",
    "request": "Which model is best?",
    "selection_reason": "t",
    "filters": "none",
    "k": "all",
    "n_items": 4,
    "sampling": "all",
    "seed": 0,
    "models": "m",
    "judges": "none",
    "agent": "none",
    "metrics": "score",
    "primary": "score",
    "primary_reason": "t",
    "data_source": "t",
    "tools": "none",
    "scope": "whole catalog",
    "extra": {},
}


def _answer(tmp_path, values: dict[str, list[float]], **kw) -> str:
    scores = [
        Score(item_id=it.id, model=m, metric="score", value=v[j])
        for m, v in values.items()
        for j, it in enumerate(ITEMS)
    ]
    path = asyncio.run(
        build_report(
            ReportContext(
                tmp_path,
                header=HEADER,
                items=ITEMS,
                responses=[],
                scores=scores,
                specs=[SCORE],
                primary="score",
                models=list(values),
                n_resamples=199,
                seed=0,
                **kw,
            )
        )
    )
    return path.read_text().split("## Answer", 1)[1].split("\n## ", 1)[0]


def test_exact_tie_at_the_top_is_stated_as_a_tie(tmp_path):
    # m-a 90, 70, 80, 80 and m-b 80, 80, 80, 80: both mean 80; m-c mean 50
    text = _answer(tmp_path, {"m-a": [90, 70, 80, 80], "m-b": [80, 80, 80, 80], "m-c": [50, 50, 50, 50]})
    assert (
        'To "Which model is best?": **m-a** and **m-b** tie for first by score on 4 items (whole catalog): mean '
        "80.00 per item each, so the request has no single answer on this metric."
    ) in text
    assert "ranks first" not in text and "Against the runner-up" not in text


def test_a_single_target_gets_an_absolute_score_and_a_stand_in_is_named(tmp_path):
    text = _answer(
        tmp_path,
        {"m-a": [90, 70, 80, 60]},
        stand_in="'creativity' is ranked by score instead: no creativity metric here",
    )
    # mean (90 + 70 + 80 + 60) / 4 = 75
    assert text.startswith(
        '\n\n- **Verdict:** To "Which model is best?": **m-a** scores a mean of 75.00 per item by score (scale '
        "0-100) on 4 items (whole catalog) (95% CI"
    )
    assert "No other model was evaluated, so this is an absolute score, not a ranking." in text
    assert (
        "No metric here measures the asked quality directly: 'creativity' is ranked by score instead: no "
        "creativity metric here."
    ) in text
    assert "ranks first" not in text
