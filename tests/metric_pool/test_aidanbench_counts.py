"""The four SciAidanBench count metrics record by record (METRICS.md B.6, D.6, D.7): values, statuses,
rationales and reasons are part of the Score contract, so each path is asserted whole."""

from __future__ import annotations

from sgieval.core import OPEN_CREATIVITY, Item, Response
from sgieval.metric_pool.aidanbench import AnswerCountMetrics
from sgieval.metric_pool.base import ScoringContext

ITEM = Item(id="sciaidanbench/chemistry/7", benchmark="sciaidanbench", task=OPEN_CREATIVITY, prompt="q")
NAMES = [
    "aidan_accepted_answers",
    "aidan_published_count",
    "aidan_readme_score",
    "aidan_leaderboard_score",
    "aidan_mean_coherence_per_item",
    "aidan_mean_novelty_per_item",
]


async def _score(resp: Response):
    return await AnswerCountMetrics().score(ITEM, resp, ScoringContext())


JUDGED_BY = {
    "coherence": "o1-mini",
    "novelty": "text-embedding-3-large",
    "origin": "stored",
    "source": "the SciAidanBench definition, METRICS.md B.2-B.3: the stored records do not name them",
}


def _view(scores):
    """Each score as a tuple; who judged (the same on every score of stored records) is checked
    and left out of the details compared."""
    out = []
    for s in scores:
        details = dict(s.details)
        details.pop("answers", None)  # the per-answer marks: test_answer_marks_of_the_stored_list
        judged = details.pop("judged_by", None)
        assert judged in (None, JUDGED_BY)
        out.append((s.item_id, s.model, s.metric, s.value, s.status, s.error, s.rationale, s.judge, details))
    return out


async def test_failed_response_gives_one_failure_per_metric_with_its_reason():
    resp = Response(item_id=ITEM.id, model="replay:m", error="timeout after 3 attempts", status="infra_error")
    assert _view(await _score(resp)) == [
        (ITEM.id, "replay:m", n, None, "infra_error", "no response: timeout after 3 attempts", "", "objective", {})
        for n in NAMES
    ]


async def test_response_without_records_is_a_parse_error_naming_what_is_missing():
    resp = Response(item_id=ITEM.id, model="openai:m", text="an answer")
    why = (
        "response has no answer records (metadata['records']); the open-creativity metrics need the "
        "generation protocol or a SciAidanBench replay"
    )
    assert _view(await _score(resp)) == [
        (ITEM.id, "openai:m", n, None, "parse_error", why, "", "objective", {}) for n in NAMES
    ]


async def test_counts_rationales_and_the_final_stopping_condition():
    records = [
        {"answer": "a", "coherence_score": 80, "embedding_dissimilarity_score": 0.5, "stopping_condition": None},
        {"answer": "b", "coherence_score": 60, "embedding_dissimilarity_score": 0.3, "stopping_condition": None},
        {
            "answer": "c",
            "coherence_score": 10,
            "embedding_dissimilarity_score": 0.9,
            "stopping_condition": "coherence",
            "final_stopping_condition": "coherence (score 10 <= 15)",
        },
    ]
    got = _view(await _score(Response(item_id=ITEM.id, model="replay:m", metadata={"records": records})))
    assert got == [
        (
            ITEM.id,
            "replay:m",
            "aidan_accepted_answers",
            2.0,
            "ok",
            None,
            "2 accepted of 3 stored answers; stopped by coherence (score 10 <= 15)",
            "objective",
            {},
        ),
        (
            ITEM.id,
            "replay:m",
            "aidan_published_count",
            3.0,
            "ok",
            None,
            "len(list) = 3 (includes the rejected terminating answer)",
            "objective",
            {},
        ),
        (
            ITEM.id,
            "replay:m",
            "aidan_readme_score",
            2.0,
            "ok",
            None,
            "S(q) = 2: answers before the first with coherence <= 15 or novelty <= 0.15",
            "objective",
            {},
        ),
        (
            ITEM.id,
            "replay:m",
            "aidan_leaderboard_score",
            2.0,
            "ok",
            None,
            "plot.py count = 2: answers before the first with novelty < 0.15 or coherence < 15",
            "objective",
            {"by_temperature": {"": 2}},
        ),
        (
            ITEM.id,
            "replay:m",
            "aidan_mean_coherence_per_item",
            70.0,
            "ok",
            None,
            "mean coherence_score over 2 accepted answers",
            "objective",
            {},
        ),
        (
            ITEM.id,
            "replay:m",
            "aidan_mean_novelty_per_item",
            0.3,
            "ok",
            None,
            "mean embedding_dissimilarity_score over 1 accepted answers after the first",
            "objective",
            {},
        ),
    ]


async def test_stopping_condition_is_read_when_no_final_one_is_stored():
    records = [
        {"answer": "a", "coherence_score": 50, "embedding_dissimilarity_score": 0.2, "stopping_condition": None},
        {"answer": "b", "coherence_score": 50, "embedding_dissimilarity_score": 0.01, "stopping_condition": "novelty"},
    ]
    [acc, *_] = await _score(Response(item_id=ITEM.id, model="replay:m", metadata={"records": records}))
    assert acc.rationale == "1 accepted of 2 stored answers; stopped by novelty"


async def test_no_stop_recorded_and_zero_accepted_answers_are_not_applicable_means():
    records = [
        {"answer": "a", "coherence_score": 5, "embedding_dissimilarity_score": 0.9, "stopping_condition": "coherence"}
    ]
    got = _view(await _score(Response(item_id=ITEM.id, model="replay:m", metadata={"records": records})))
    assert got[0][3:7] == (0.0, "ok", None, "0 accepted of 1 stored answers; stopped by coherence")
    assert got[4] == (
        ITEM.id,
        "replay:m",
        "aidan_mean_coherence_per_item",
        None,
        "not_run",
        "no accepted answers with a coherence_score",
        "",
        "objective",
        {"not_applicable": True},
    )
    assert got[5] == (
        ITEM.id,
        "replay:m",
        "aidan_mean_novelty_per_item",
        None,
        "not_run",
        "no accepted answers after the first with an embedding_dissimilarity_score",
        "",
        "objective",
        {"not_applicable": True},
    )
    empty = _view(await _score(Response(item_id=ITEM.id, model="replay:m", metadata={"records": []})))
    assert empty[0][3:7] == (
        0.0,
        "ok",
        None,
        "0 accepted of 0 stored answers; stopped by no stop recorded "
        "(missing: empty stored list: no answer was recorded for this question)",
    )
    assert empty[1][3] == 0.0


async def test_a_missing_score_field_is_left_out_of_the_mean():
    records = [
        {"answer": "a", "coherence_score": 90, "embedding_dissimilarity_score": None, "stopping_condition": None},
        {"answer": "b", "coherence_score": 70, "embedding_dissimilarity_score": 0.6, "stopping_condition": None},
    ]
    got = {
        s.metric: (s.value, s.rationale)
        for s in await _score(Response(item_id=ITEM.id, model="replay:m", metadata={"records": records}))
    }
    assert got["aidan_mean_coherence_per_item"] == (80.0, "mean coherence_score over 2 accepted answers")
    assert got["aidan_mean_novelty_per_item"] == (
        0.6,
        "mean embedding_dissimilarity_score over 1 accepted answers after the first",
    )
    # variant: the first answer's missing novelty and the second's are both left out: no novelty mean
    records[1]["embedding_dissimilarity_score"] = None
    again = {
        s.metric: (s.value, s.error)
        for s in await _score(Response(item_id=ITEM.id, model="replay:m", metadata={"records": records}))
    }
    assert again["aidan_mean_novelty_per_item"] == (
        None,
        "no accepted answers after the first with an embedding_dissimilarity_score",
    )


async def test_answer_marks_of_the_stored_list():
    """The accepted-answers score keeps each answer's coherence and novelty, and marks the rejected last one
    with the threshold that ended the list (METRICS.md B.5, D.6)."""
    records = [
        {"answer_num": 1, "coherence_score": 80, "embedding_dissimilarity_score": 1.0, "stopping_condition": None},
        {"answer_num": 2, "coherence_score": 60, "embedding_dissimilarity_score": 0.3, "stopping_condition": None},
        {
            "answer_num": 3,
            "coherence_score": 70,
            "embedding_dissimilarity_score": 0.1,
            "llm_dissimilarity_score": 0.4,
            "stopping_condition": "embedding_dissimilarity_threshold",
        },
    ]
    (acc,) = [
        s
        for s in await _score(Response(item_id=ITEM.id, model="replay:m", metadata={"records": records}))
        if s.metric == "aidan_accepted_answers"
    ]
    base = {"list": 0, "temperature": "", "llm_novelty": None, "rejected": False, "reason": None, "accepted": True}
    assert acc.details["answers"] == [
        {**base, "n": 1, "coherence": 80.0, "novelty": 1.0},
        {**base, "n": 2, "coherence": 60.0, "novelty": 0.3},
        {
            **base,
            "n": 3,
            "coherence": 70.0,
            "novelty": 0.1,
            "llm_novelty": 0.4,
            "accepted": False,
            "rejected": True,
            "reason": "not novel (embedding)",
        },
    ]


def test_answer_marks_reasons_and_the_aidanbench_layout():
    from sgieval.metric_pool.aidanbench import _answer_marks

    def marks(recs):
        return [(m["n"], m["accepted"], m["rejected"], m["reason"]) for m in _answer_marks([("0.7", recs)])]

    # the coherence threshold; an older file's short value names its threshold too
    assert marks(
        [{"coherence_score": 10, "embedding_dissimilarity_score": 1.0, "stopping_condition": "coherence"}]
    ) == [(1, False, True, "incoherent")]
    # an error ends the list: censored, not rejected by the stop rule
    assert marks(
        [
            {"coherence_score": 50, "embedding_dissimilarity_score": 1.0, "stopping_condition": None},
            {"coherence_score": 0, "stopping_condition": "error", "error_message": "rate limited"},
        ]
    ) == [(1, True, False, None), (2, False, False, "error: rate limited")]
    # AidanBench layout (no stopping_condition field): the last record fails the rule, in B.5's order
    # (coherence 15 <= tau_c 15 rejects even though novelty 0.1 < 0.15 fails too)
    aidan = [
        {"coherence_score": 90, "embedding_dissimilarity_score": 1.0},
        {"coherence_score": 15, "embedding_dissimilarity_score": 0.1},
    ]
    assert marks(aidan) == [(1, True, False, None), (2, False, True, "incoherent")]
    # ... novelty 0.15 is not < 0.15 (strict), LLM novelty 0.1 < 0.15 is
    aidan[1] = {"coherence_score": 40, "embedding_dissimilarity_score": 0.15, "llm_dissimilarity_score": 0.1}
    assert marks(aidan)[1] == (2, False, True, "not novel (LLM judge)")
    # a last record passing every threshold ended by the answer cap: accepted, nothing rejected
    aidan[1] = {"coherence_score": 40, "embedding_dissimilarity_score": 0.5}
    assert marks(aidan)[1] == (2, True, False, None)
