"""SciAidanBench count metrics: the censored/missing flags and who judged, asserted whole."""

from __future__ import annotations

import asyncio

from sgieval.core import OPEN_CREATIVITY, Item, Response
from sgieval.metric_pool.aidanbench import AnswerCountMetrics, judged_by, record_flag
from sgieval.metric_pool.base import ScoringContext

STORED = {
    "coherence": "o1-mini",
    "novelty": "text-embedding-3-large",
    "origin": "stored",
    "source": "the SciAidanBench definition, METRICS.md B.2-B.3: the stored records do not name them",
}


def _rec(n, sc=None, **kw):
    return {
        "answer_num": n,
        "answer": f"a{n}",
        "coherence_score": 80,
        "embedding_dissimilarity_score": 0.5,
        "stopping_condition": sc,
        **kw,
    }


def test_judged_by_every_origin_whole():
    assert judged_by({}) == STORED
    assert judged_by({"stored_judge": "gpt-4o", "stored_embedder": "e5"}) == {
        "coherence": "gpt-4o",
        "novelty": "e5",
        "origin": "stored",
        "source": "the stored records",
    }
    assert judged_by({"stored_judge": "gpt-4o"}) == {
        "coherence": "gpt-4o",
        "novelty": "text-embedding-3-large",
        "origin": "stored",
        "source": "the stored records",
    }
    assert judged_by({"judge": "openai:o4-mini"}) == {
        "coherence": "openai:o4-mini",
        "novelty": "unknown embedder",
        "origin": "live",
        "source": "this run's judge and embedder",
    }


def test_record_flag_variants_whole():
    assert record_flag([_rec(1, "error")]) == {
        "censored": True,
        "stop_error": "stopping_condition 'error'",
        "flag_reason": "stopped by error after 0 accepted answers (a lower bound)",
    }
    assert record_flag([_rec(1), _rec(2, "error", error_type="content_filter")]) == {
        "censored": True,
        "stop_error": "content_filter",
        "flag_reason": "stopped by error after 1 accepted answer (a lower bound)",
    }
    long = "x" * 400
    assert record_flag([_rec(1, error_message=long)])["stop_error"] == "x" * 300
    assert record_flag([_rec(1, "coherence"), _rec(2)]) == {}


def _scores(records, **meta):
    item = Item(id="sciaidanbench/x/0", benchmark="sciaidanbench", task=OPEN_CREATIVITY, prompt="q")
    resp = Response(item_id=item.id, model="m", text="t", metadata={"records": records, **meta})
    return asyncio.run(AnswerCountMetrics().score(item, resp, ScoringContext()))


def test_missing_list_scores_whole():
    got = [(s.metric, s.value, s.status, s.error, s.rationale, s.details) for s in _scores([])]
    flag = {
        "missing": True,
        "flag_reason": "empty stored list: no answer was recorded for this question",
        "judged_by": STORED,
    }
    why = (
        "0 accepted of 0 stored answers; stopped by no stop recorded (missing: empty stored list: no answer was "
        "recorded for this question)"
    )
    assert got == [
        ("aidan_accepted_answers", 0.0, "ok", None, why, {**flag, "answers": []}),
        ("aidan_published_count", 0.0, "ok", None, "len(list) = 0 (includes the rejected terminating answer)", flag),
        (
            "aidan_readme_score",
            0.0,
            "ok",
            None,
            "S(q) = 0: answers before the first with coherence <= 15 or novelty <= 0.15",
            flag,
        ),
        (
            "aidan_leaderboard_score",
            0.0,
            "ok",
            None,
            "plot.py count = 0: answers before the first with novelty < 0.15 or coherence < 15",
            {**flag, "by_temperature": {"": 0}},
        ),
        (
            "aidan_mean_coherence_per_item",
            None,
            "not_run",
            "no accepted answers with a coherence_score",
            "",
            {"not_applicable": True, **flag},
        ),
        (
            "aidan_mean_novelty_per_item",
            None,
            "not_run",
            "no accepted answers after the first with an embedding_dissimilarity_score",
            "",
            {"not_applicable": True, **flag},
        ),
    ]


MARK = {"list": 0, "temperature": "", "novelty": 0.5, "llm_novelty": None, "accepted": True, "rejected": False}
MARK |= {"reason": None}


def test_censored_list_scores_whole_and_means_skip_missing_values():
    recs = [_rec(1), {**_rec(2), "coherence_score": None}, _rec(3, "error", error_message="boom")]
    got = {s.metric: (s.value, s.status, s.rationale, s.details) for s in _scores(recs, judge="j", embedder="e")}
    flag = {
        "censored": True,
        "stop_error": "boom",
        "flag_reason": "stopped by error after 2 accepted answers (a lower bound)",
        "judged_by": {"coherence": "j", "novelty": "e", "origin": "live", "source": "this run's judge and embedder"},
    }
    assert got == {
        "aidan_accepted_answers": (
            2.0,
            "ok",
            "2 accepted of 3 stored answers; stopped by error (censored: stopped "
            "by error after 2 accepted answers (a lower bound))",
            # each answer's marks: the error record is not accepted and not rejected by the stop rule
            {
                **flag,
                "answers": [
                    {**MARK, "n": 1, "coherence": 80.0},
                    {**MARK, "n": 2, "coherence": None},
                    {**MARK, "n": 3, "coherence": 80.0, "accepted": False, "reason": "error: boom"},
                ],
            },
        ),
        "aidan_published_count": (3.0, "ok", "len(list) = 3 (includes the rejected terminating answer)", flag),
        # S(q) and plot.py stop at answer 2: its coherence is missing
        "aidan_readme_score": (
            1.0,
            "ok",
            "S(q) = 1: answers before the first with coherence <= 15 or novelty <= 0.15",
            flag,
        ),
        "aidan_leaderboard_score": (
            1.0,
            "ok",
            "plot.py count = 1: answers before the first with novelty < 0.15 or coherence < 15",
            {**flag, "by_temperature": {"": 1}},
        ),
        "aidan_mean_coherence_per_item": (80.0, "ok", "mean coherence_score over 1 accepted answers", flag),
        # the first answer is left out of the novelty mean (D.15): answer 2 only
        "aidan_mean_novelty_per_item": (
            0.5,
            "ok",
            "mean embedding_dissimilarity_score over 1 accepted answers after the first",
            flag,
        ),
    }


def test_answers_with_judge_tags_flag_every_score_with_the_judge_replies():
    recs = [_rec(1, flags=["injection_suspected"]), _rec(2), _rec(3, "coherence", flags=["injection_suspected"])]
    raw = [
        {"answer_num": 1, "raw": "r1", "flags": ["injection_suspected"]},
        {"answer_num": 2, "raw": "r2", "flags": []},
        {"answer_num": 3, "raw": "r3", "flags": ["injection_suspected"]},
        {"answer_num": 9, "raw": "r9", "flags": ["x"]},
    ]
    out = _scores(recs, judge="j", judge_raw=raw)
    assert len(out) == 6
    for s in out:
        [ev] = s.evidence
        assert (ev.judge, ev.raw, ev.attempts, ev.structured, ev.flags, ev.details) == (
            "j",
            ["r1", "r3"],
            2,
            "text",
            ["injection_suspected"],
            {"answer_nums": [1, 3]},
        )
    assert all(s.evidence == [] for s in _scores([_rec(1), _rec(2, "coherence")]))


def test_flag_evidence_of_a_replay_without_judge_name_or_raw_text():
    recs = [_rec(1, flags=["injection_suspected"]), _rec(2, "coherence")]
    out = _scores(recs, judge_raw=[{"answer_num": 1, "flags": ["injection_suspected"]}])
    ev = out[0].evidence[0]
    assert (ev.judge, ev.raw, ev.attempts) == ("", [""], 1)
