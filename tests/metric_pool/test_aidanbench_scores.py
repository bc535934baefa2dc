"""AidanBench's own per-question scores (METRICS.md B.6) and the pooled novelty and coherence means (D.6, D.15).

Hand-computed lists for the edge cases of each definition, and the real stored SciAidanBench answers
(../shared/data) for mistral's novelty with and without first answers, against values computed here
independently from the raw JSON.
"""

from __future__ import annotations

import json

import pytest

from sgieval.core import CORPUS, OPEN_CREATIVITY, Item, Response
from sgieval.metric_pool.aidanbench import AnswerCountMetrics, leaderboard_count, readme_score
from sgieval.metric_pool.base import ScoringContext


def _rec(n, c, nov, stop=None, llm=None):
    r = {
        "answer_num": n,
        "answer": f"a{n}",
        "coherence_score": c,
        "embedding_dissimilarity_score": nov,
        "stopping_condition": stop,
    }
    if llm is not None:
        r["llm_dissimilarity_score"] = llm
    return r


def _item(i=0):
    return Item(id=f"sciaidanbench/x/{i}", benchmark="sciaidanbench", task=OPEN_CREATIVITY, prompt="q")


async def _all(responses):
    """{(item_id, metric): Score} of the per-question scores and the corpus-level scores of one model."""
    m = AnswerCountMetrics()
    items = {r.item_id: _item(int(r.item_id.rsplit("/", 1)[1])) for r in responses}
    per = [s for r in responses for s in await m.score(items[r.item_id], r, ScoringContext())]
    pooled = m.corpus(items, responses, per)
    return {(s.item_id, s.metric): s for s in per + pooled}


# ------------------------------------------------------------------ B.6: README S(q) and plot.py, by hand
def test_readme_and_leaderboard_definitions_differ_where_b6_says():
    # coherence exactly 15: README needs C > 15 (stops), plot.py stops only below 15 (counts it)
    lst = [_rec(1, 80, 1.0), _rec(2, 15, 0.5, "coherence_threshold")]
    assert (readme_score(lst), leaderboard_count(lst)) == (1, 2)
    # novelty exactly 0.15: README needs N > 0.15 (stops); plot.py stops only below 0.15 (counts it)
    lst = [_rec(1, 80, 1.0), _rec(2, 70, 0.15), _rec(3, 70, 0.10, "embedding_dissimilarity_threshold")]
    assert (readme_score(lst), leaderboard_count(lst)) == (1, 2)
    # an LLM-novelty stop: both ignore LLM novelty, so the terminating answer counts in both
    lst = [_rec(1, 80, 1.0), _rec(2, 70, 0.6, "llm_dissimilarity_threshold", llm=0.05)]
    assert (readme_score(lst), leaderboard_count(lst)) == (2, 2)
    # the usual end: a novelty stop below 0.15 is not counted by either
    lst = [_rec(1, 80, 1.0), _rec(2, 70, 0.5), _rec(3, 60, 0.05, "embedding_dissimilarity_threshold")]
    assert (readme_score(lst), leaderboard_count(lst)) == (2, 2)
    # a prefix: a low answer in the middle ends the count even when later answers pass
    lst = [_rec(1, 80, 1.0), _rec(2, 10, 0.9), _rec(3, 90, 0.9)]
    assert (readme_score(lst), leaderboard_count(lst)) == (1, 1)
    assert (readme_score([]), leaderboard_count([])) == (0, 0)


async def test_leaderboard_total_is_the_largest_temperature_total():
    # two questions, each stored at temperatures 0.7 and 1.0 (one list each)
    q0 = [_rec(1, 80, 1.0), _rec(2, 80, 0.5), _rec(3, 80, 0.1, "embedding_dissimilarity_threshold")]  # 2 at 0.7
    q0b = [_rec(1, 80, 1.0), _rec(2, 15, 0.5, "coherence_threshold")]  # 2 at 1.0 (coherence 15 counts)
    q1 = [_rec(1, 80, 1.0), _rec(2, 10, 0.5, "coherence_threshold")]  # 1 at 0.7
    q1b = [_rec(1, 80, 1.0), _rec(2, 80, 0.4), _rec(3, 80, 0.3), _rec(4, 80, 0.01, "x")]  # 3 at 1.0

    def resp(i, a, b):
        lists = [{"temperature": "0.7", "start": 0, "n": len(a)}, {"temperature": "1.0", "start": len(a), "n": len(b)}]
        return Response(item_id=f"sciaidanbench/x/{i}", model="m", metadata={"records": a + b, "lists": lists})

    got = await _all([resp(0, q0, q0b), resp(1, q1, q1b)])
    # per question: by temperature, and the larger of the two (0.7: 2 + 1 = 3; 1.0: 2 + 3 = 5)
    s0, s1 = (
        got[("sciaidanbench/x/0", "aidan_leaderboard_score")],
        got[("sciaidanbench/x/1", "aidan_leaderboard_score")],
    )
    assert s0.details["by_temperature"] == {"0.7": 2, "1.0": 2} and s0.value == 2.0
    assert s1.details["by_temperature"] == {"0.7": 1, "1.0": 3} and s1.value == 3.0
    total = got[(CORPUS, "aidan_leaderboard_total")]
    assert (total.value, total.details["by_temperature"], total.details["temperature"]) == (
        5.0,
        {"0.7": 3, "1.0": 5},
        "1.0",
    )
    # README S(q) sums over the question's lists: q0 2 + 1 (C = 15 is not > 15); q1 1 + 3
    assert got[("sciaidanbench/x/0", "aidan_readme_score")].value == 3.0
    assert got[("sciaidanbench/x/1", "aidan_readme_score")].value == 4.0
    # pooled novelty leaves out each LIST's first answer, not only the question's first record:
    # accepted after the first of each list: q0 [0.5] + q0b [] + q1 [] + q1b [0.4, 0.3] -> 1.2 / 3 = 0.4
    nov = got[(CORPUS, "aidan_mean_novelty")]
    assert nov.value == pytest.approx(0.4)
    assert (nov.details["n_answers"], nov.details["n"], nov.details["n_questions"]) == (3, 2, 2)
    # with first answers: q0 [1.0, 0.5] + q0b [1.0] + q1 [1.0] + q1b [1.0, 0.4, 0.3] -> 5.2 / 7
    assert got[(CORPUS, "aidan_mean_novelty_with_first")].value == pytest.approx(5.2 / 7)
    # per-item reading: q0 0.5, q1 (0.4 + 0.3) / 2 = 0.35 -> mean of the two is 0.425, not the pooled 0.4
    per_item = [got[(f"sciaidanbench/x/{i}", "aidan_mean_novelty_per_item")].value for i in (0, 1)]
    assert per_item == [pytest.approx(0.5), pytest.approx(0.35)]
    # coherence pooled over accepted answers, first answers included: q0 80, 80; q0b 80; q1 80; q1b 80, 80, 80
    assert got[(CORPUS, "aidan_mean_coherence")].value == pytest.approx(80.0)


async def test_pooled_means_weigh_answers_not_questions_and_skip_failed_responses():
    # question 0: a short list (first answer 1.0 then 0.2); question 1: a long list at 0.5
    short = [_rec(1, 90, 1.0), _rec(2, 90, 0.2), _rec(3, 90, 0.01, "embedding_dissimilarity_threshold")]
    long = [_rec(1, 50, 1.0)] + [_rec(k, 50, 0.5) for k in range(2, 6)] + [_rec(6, 50, 0.1, "x")]
    failed = Response(item_id="sciaidanbench/x/2", model="m", status="infra_error", error="target call failed")
    got = await _all(
        [
            Response(item_id="sciaidanbench/x/0", model="m", metadata={"records": short}),
            Response(item_id="sciaidanbench/x/1", model="m", metadata={"records": long}),
            failed,
        ]
    )
    nov = got[(CORPUS, "aidan_mean_novelty")]
    # pooled: (0.2 + 4 x 0.5) / 5 = 0.44; per-item means 0.2 and 0.5 would give 0.35
    assert nov.value == pytest.approx(0.44) and nov.details["failed"] == 1 and nov.details["n_answers"] == 5
    assert nov.rationale == (
        "mean embedding_dissimilarity_score pooled over 5 accepted answers after each list's first of 2 questions"
    )
    # with first answers: (1.0 + 0.2 + 1.0 + 4 x 0.5) / 7 = 4.2 / 7 = 0.6
    assert got[(CORPUS, "aidan_mean_novelty_with_first")].value == pytest.approx(0.6)
    # coherence pooled: (2 x 90 + 5 x 50) / 7 = 430 / 7; per-item (90 + 50) / 2 = 70 would differ
    assert got[(CORPUS, "aidan_mean_coherence")].value == pytest.approx(430 / 7)
    assert got[("sciaidanbench/x/2", "aidan_accepted_answers")].status == "infra_error"


async def test_no_answer_after_the_first_is_a_failure_with_its_reason_not_a_value():
    only_first = [_rec(1, 90, 1.0), _rec(2, 10, 0.9, "coherence_threshold")]
    got = await _all([Response(item_id="sciaidanbench/x/0", model="m", metadata={"records": only_first})])
    nov = got[(CORPUS, "aidan_mean_novelty")]
    assert (nov.value, nov.status, nov.error) == (
        None,
        "not_run",
        "no accepted answers after each list's first with an embedding_dissimilarity_score in 1 questions",
    )
    assert got[(CORPUS, "aidan_mean_novelty_with_first")].value == 1.0


def test_the_scores_are_named_variants_with_their_sources():
    specs = {s.name: s for s in AnswerCountMetrics().all_specs}
    assert specs["aidan_readme_score"].variant_of == "aidan_accepted_answers"
    assert "README" in specs["aidan_readme_score"].source
    assert specs["aidan_leaderboard_score"].variant_of == "aidan_accepted_answers"
    assert "plot.py" in specs["aidan_leaderboard_total"].source
    assert specs["aidan_mean_novelty_with_first"].variant_of == "aidan_mean_novelty"
    assert specs["aidan_mean_novelty_per_item"].variant_of == "aidan_mean_novelty"
    assert specs["aidan_mean_novelty"].qualities == ["novelty"]
    assert {s.name for s in AnswerCountMetrics.corpus_specs} == {
        "aidan_mean_coherence",
        "aidan_mean_novelty",
        "aidan_mean_novelty_with_first",
        "aidan_leaderboard_total",
    }


# ------------------------------------------------------------------ the real stored answers
def _raw_lists(path):
    """Every stored list of one responses/<model>.json, walked from the raw JSON (independent of the loader)."""
    data = json.loads(path.read_text())
    out = []

    def walk(node):
        if "models" in node:
            for temps in node["models"].values():
                for questions in temps.values():
                    out.extend(questions.values())
        else:
            for child in node.values():
                walk(child)

    walk(data["domains"])
    return out


async def test_mistral_novelty_with_and_without_first_answers_on_the_stored_data(sciaidan_dir):
    from sgieval.benchmarks.sciaidanbench import load_questions
    from sgieval.agents.stored_responses import stored_models

    path = sciaidan_dir / "responses" / "mistral_latest.json"
    # independent computation from the raw JSON: accepted records, with and without each list's first answer
    lists = _raw_lists(path)
    accepted = [[(k, r) for k, r in enumerate(lst) if r.get("stopping_condition") is None] for lst in lists]
    with_first = [r["embedding_dissimilarity_score"] for a in accepted for _k, r in a]
    without = [r["embedding_dissimilarity_score"] for a in accepted for k, r in a if k > 0]
    per_q = [[r["embedding_dissimilarity_score"] for k, r in a if k > 0] for a in accepted]
    per_item = [sum(v) / len(v) for v in per_q if v]
    assert (len(lists), len(with_first), len(without), len(per_item)) == (155, 681, 526, 128)
    # the same figures to five decimals, written down once from that computation
    assert sum(with_first) / len(with_first) == pytest.approx(0.41722, abs=5e-6)
    assert sum(without) / len(without) == pytest.approx(0.24548, abs=5e-6)
    assert sum(per_item) / len(per_item) == pytest.approx(0.23968, abs=5e-6)

    items = load_questions(sciaidan_dir)
    store = next(s for s in stored_models(str(sciaidan_dir.parent)) if s.model == "mistral:latest")
    responses = [store.respond(it, "replay:mistral:latest") for it in items]
    m = AnswerCountMetrics()
    per = [s for it, r in zip(items, responses) for s in await m.score(it, r, ScoringContext())]
    pooled = {s.metric: s for s in m.corpus({it.id: it for it in items}, responses, per)}
    assert pooled["aidan_mean_novelty"].value == pytest.approx(sum(without) / len(without), abs=1e-12)
    assert pooled["aidan_mean_novelty"].details["n_answers"] == 526
    assert pooled["aidan_mean_novelty_with_first"].value == pytest.approx(sum(with_first) / len(with_first), abs=1e-12)
    mine = [s.value for s in per if s.metric == "aidan_mean_novelty_per_item" and s.ok]
    assert len(mine) == 128 and sum(mine) / len(mine) == pytest.approx(sum(per_item) / len(per_item), abs=1e-12)
    # the short lists no longer win: keeping first answers mistral is highest, without them lowest of the six
    # (other models' pooled means without first answers are 0.2514 to 0.3102)
    assert pooled["aidan_mean_novelty"].value < 0.25 < pooled["aidan_mean_novelty_with_first"].value


def test_pooled_ci_resamples_questions():
    from sgieval.metric_pool.aidanbench import pooled_ci

    # two questions: each resample draws both (0.5), or one of them twice (0.0 or 1.0): the 95% interval is 0 to 1
    assert pooled_ci([[1.0], [0.0]]) == (0.0, 1.0)
    # a three-answer question at 0.2 and a one-answer question at 0.8: resamples give 0.2, 0.8 or
    # (0.6 + 0.8) / 4 = 0.35 (each answer weighs the same), so the interval runs from 0.2 to 0.8
    assert pooled_ci([[0.2, 0.2, 0.2], [0.8]]) == pytest.approx((0.2, 0.8))
    assert pooled_ci([[0.5, 0.5], [0.5]]) is None  # no variation: no interval
    assert pooled_ci([[0.3, 0.9], []]) is None  # one question with values: no interval


async def test_pooled_mean_carries_its_ci_into_the_ranking():
    from sgieval.agents.reporting import ranking_stats

    a = [_rec(1, 80, 1.0), _rec(2, 80, 0.9), _rec(3, 80, 0.1, "embedding_dissimilarity_threshold")]
    b = [_rec(1, 80, 1.0), _rec(2, 80, 0.3), _rec(3, 80, 0.1, "embedding_dissimilarity_threshold")]
    got = await _all(
        [
            Response(item_id="sciaidanbench/x/0", model="m", metadata={"records": a}),
            Response(item_id="sciaidanbench/x/1", model="m", metadata={"records": b}),
        ]
    )
    nov = got[(CORPUS, "aidan_mean_novelty")]
    # pooled (0.9 + 0.3) / 2 = 0.6; resamples 0.9, 0.6 or 0.3
    assert nov.value == pytest.approx(0.6) and (nov.details["ci_low"], nov.details["ci_high"]) == pytest.approx(
        (0.3, 0.9)
    )
    [st] = ranking_stats(list(got.values()), "aidan_mean_novelty", ["m"], n_resamples=99, seed=0)
    assert st.corpus and (st.stats.mean, st.stats.ci_low, st.stats.ci_high) == pytest.approx((0.6, 0.3, 0.9))
