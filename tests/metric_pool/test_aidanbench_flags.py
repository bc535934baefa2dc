"""Stored SciAidanBench lists that ended in an error are censored counts, an empty list is a missing observation:
the published counting stays, the scores carry the flag."""

from __future__ import annotations

import asyncio

from sgieval.benchmarks.sciaidanbench import load_questions
from sgieval.core import OPEN_CREATIVITY, Item, Response
from sgieval.metric_pool.aidanbench import AnswerCountMetrics, record_flag
from sgieval.metric_pool.base import ScoringContext
from sgieval.agents.stored_responses import stored_models


def _rec(n, sc=None, **kw):
    return {
        "answer_num": n,
        "answer": f"a{n}",
        "coherence_score": 80,
        "embedding_dissimilarity_score": 0.5,
        "stopping_condition": sc,
        **kw,
    }


def _score(records):
    item = Item(id="sciaidanbench/x/0", benchmark="sciaidanbench", task=OPEN_CREATIVITY, prompt="q")
    resp = Response(item_id=item.id, model="m", text="t", metadata={"records": records})
    return {s.metric: s for s in asyncio.run(AnswerCountMetrics().score(item, resp, ScoringContext()))}


def test_record_flags():
    ok = [_rec(1), _rec(2, "coherence_threshold")]
    assert record_flag(ok) == {}
    err = [_rec(1), _rec(2), _rec(3, "error", error_message="boom")]
    assert record_flag(err) == {
        "censored": True,
        "stop_error": "boom",
        "flag_reason": "stopped by error after 2 accepted answers (a lower bound)",
    }
    assert record_flag([_rec(1, error_type="content_filter")])["censored"] is True
    assert record_flag([]) == {
        "missing": True,
        "flag_reason": "empty stored list: no answer was recorded for this question",
    }


def test_scores_keep_published_counting_and_carry_the_flag():
    s = _score([_rec(1), _rec(2), _rec(3, "error", error_message="boom")])
    assert (s["aidan_accepted_answers"].value, s["aidan_published_count"].value) == (2.0, 3.0)
    assert all(x.ok and x.details["censored"] for x in s.values())
    assert s["aidan_accepted_answers"].rationale.endswith(
        "(censored: stopped by error after 2 accepted answers (a lower bound))"
    )
    e = _score([])
    assert (e["aidan_accepted_answers"].value, e["aidan_published_count"].value) == (0.0, 0.0)
    assert e["aidan_accepted_answers"].details["missing"] is True
    coh = e["aidan_mean_coherence_per_item"]
    assert coh.status == "not_run" and coh.details["missing"] is True
    plain = _score([_rec(1), _rec(2, "coherence_threshold")])["aidan_accepted_answers"].details
    assert "censored" not in plain and "missing" not in plain
    # who decided acceptance: stored records name no judge, so the benchmark definition does
    assert plain["judged_by"] == {
        "coherence": "o1-mini",
        "novelty": "text-embedding-3-large",
        "origin": "stored",
        "source": "the SciAidanBench definition, METRICS.md B.2-B.3: the stored records do not name them",
    }


def test_real_data_has_seven_censored_pairs_and_one_missing(sciaidan_dir):
    items = load_questions(sciaidan_dir)
    assert len(items) == 155
    flagged = {}
    for store in stored_models(str(sciaidan_dir.parent)):
        for item in items:
            resp = store.respond(item, f"replay:{store.model}")
            if not resp.ok:
                continue
            d = _score_for(item, resp)
            if d:
                flagged[(store.model, item.id)] = d
    censored = sorted(k for k, v in flagged.items() if v.get("censored"))
    missing = sorted(k for k, v in flagged.items() if v.get("missing"))
    assert len(censored) == 7 and missing == [("o1-mini", "sciaidanbench/chemistry/22")]
    assert ("openai/4o", "sciaidanbench/chemistry/2") in censored
    assert (
        flagged[("openai/4o", "sciaidanbench/chemistry/2")]["flag_reason"]
        == "stopped by error after 4 accepted answers (a lower bound)"
    )
    assert [m for m, _ in censored].count("openai/4o") == 3 and [m for m, _ in censored].count("llama3.3:latest") == 2


def _score_for(item, resp):
    scores = asyncio.run(AnswerCountMetrics().score(item, resp, ScoringContext()))
    acc = next(s for s in scores if s.metric == "aidan_accepted_answers")
    return {k: v for k, v in acc.details.items() if k in ("censored", "missing", "flag_reason")}


def test_not_applicable_reasons_use_an_before_a_vowel():
    s = _score([_rec(1, "coherence_threshold")])
    assert s["aidan_mean_novelty_per_item"].error == (
        "no accepted answers after the first with an embedding_dissimilarity_score"
    )
    assert s["aidan_mean_coherence_per_item"].error == "no accepted answers with a coherence_score"


def test_live_protocol_names_its_own_judge():
    from sgieval.metric_pool.aidanbench import judged_by

    assert judged_by({"judge": "openai:o4-mini", "embedder": "minilm"}) == {
        "coherence": "openai:o4-mini",
        "novelty": "minilm",
        "origin": "live",
        "source": "this run's judge and embedder",
    }
