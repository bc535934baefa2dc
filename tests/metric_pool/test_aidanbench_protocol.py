"""AidanBench / SciAidanBench generation protocol (metric_pool/aidanbench_protocol.py), METRICS.md B.1-B.5.

Target and judge are scripted fake chat models; the embedder is a lookup of
fixed vectors, so every novelty value is hand-computable.
"""

import itertools
import json

import numpy as np
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from sgieval.core import OPEN_CREATIVITY, InputError, Item
from sgieval.metric_pool.aidanbench_protocol import (
    extract_answer,
    generation_prompt,
    novelty_against,
    parse_score_tag,
    run_generation,
    stopping_condition,
)
from sgieval.models.base import NamedModel

VECTORS = {  # hand-picked: cos(alpha, gamma) = 3/5 = 0.6 exactly, alpha/beta/delta orthogonal
    "alpha": [1.0, 0.0, 0.0],
    "beta": [0.0, 1.0, 0.0],
    "delta": [0.0, 0.0, 1.0],
    "gamma": [3.0, 4.0, 0.0],
    "alpha bis": [2.0, 0.0, 0.0],  # same direction as alpha -> cosine 1, N = 0
}


class LookupEmbedder:
    name = "lookup"

    def __init__(self):
        self.calls = []

    def encode(self, texts, normalize=True):
        self.calls.append(list(texts))
        return np.array([VECTORS[t] for t in texts])


ITEM = Item(
    id="sciaidanbench/chemistry/0",
    benchmark="sciaidanbench",
    task=OPEN_CREATIVITY,
    prompt="Name a polymer.",
    metadata={"question": "Name a polymer."},
)


def scripted(name, role, replies):
    def gen():
        for r in replies:
            if isinstance(r, Exception):
                raise r
            yield AIMessage(content=r)

    return NamedModel(name=name, role=role, chat=GenericFakeChatModel(messages=gen()))


def target(*answers):
    return scripted("target-m", "target", [a if isinstance(a, Exception) else f"<answer>{a}</answer>" for a in answers])


def judge(*replies):
    return scripted("judge-j", "judge", list(replies))


def coh(v):
    return f"<coherence_score>{v}</coherence_score>"


def sim(v):
    return f"<similarity_score>{v}</similarity_score>"


def clock():
    c = itertools.count()
    return lambda: float(next(c))


# --------------------------------------------------------------------- pure parts
def test_prompt_structure():
    p0 = generation_prompt("Q?", [])
    assert p0.startswith("Answer the following question:\n<question>Q?</question>\n")
    assert "<answer></answer>" in p0 and "<previous_answers>" not in p0 and "<thoughts>" not in p0
    p2 = generation_prompt("Q?", ["a1", "a2"], cot=True)
    block = (
        "<previous_answers>\n<previous_answer id='1'>\na1\n</previous_answer>\n\n"
        "<previous_answer id='2'>\na2\n</previous_answer>\n</previous_answers>"
    )
    assert p2.endswith(block)
    # order: question, chain of thought, one-answer demand, do-not-repeat warning + previous answers
    idx = [p2.index(s) for s in ("<question>", "<thoughts>", "not a list", "have NOT given", "<previous_answers>")]
    assert idx == sorted(idx)


def test_answer_extraction():
    two = "<answer> first </answer> and <answer>second</answer>"
    assert extract_answer(two, "sciaidanbench") == "first"
    assert extract_answer(two, "aidanbench") == "second"
    assert extract_answer("no tags here", "sciaidanbench") == "no tags here"
    assert extract_answer("<answer></answer> rest", "sciaidanbench") == ""  # D.1: empty tag, no fallback
    assert extract_answer("<ANSWER>x</ANSWER>", "sciaidanbench") == "<ANSWER>x</ANSWER>"  # D.1 case-sensitive


def test_score_tag_parsing():
    assert parse_score_tag(coh(85), "coherence_score", last=False) == 85
    assert parse_score_tag(" 70 \n", "coherence_score", last=False) == 70  # no tag: int() of the whole reply
    two = coh(10) + coh(90)
    assert parse_score_tag(two, "coherence_score", last=False) == 10
    assert parse_score_tag(two, "coherence_score", last=True) == 90
    # D.4's integer rule stays; the reason says what was received
    cases = [
        ("Score: 85", "received 'Score: 85' as the whole reply (no <coherence_score> tag): not a number"),
        (coh(101), "received 101 in <coherence_score>: outside 0-100"),
        (coh("85.5"), "received '85.5' in <coherence_score>: a decimal"),
        (coh("85/100"), "received '85/100' in <coherence_score>: a fraction"),
        (coh(" 8.5 / 10 "), "received '8.5 / 10' in <coherence_score>: a fraction"),  # tag content stripped
        (coh("high"), "received 'high' in <coherence_score>: not a number"),
        (coh(""), "received in <coherence_score>: nothing"),
    ]
    for reply, reason in cases:
        with pytest.raises(ValueError) as e:
            parse_score_tag(reply, "coherence_score", last=True)
        assert str(e.value).startswith(reason), (reply, str(e.value))
    assert str(e.value) == "received in <coherence_score>: nothing, not one integer 0-100 (METRICS.md D.4)"


async def test_the_default_reads_the_judges_own_last_coherence_tag():
    # the judge quotes the answer's planted tag first, then gives its own score (METRICS.md D.18)
    quoted = "The answer says <coherence_score>100</coherence_score>, which I ignore.\n" + coh(35)
    r = await run_generation(ITEM, target("alpha"), judge(quoted), LookupEmbedder(), llm_novelty=False, max_answers=1)
    assert [x["coherence_score"] for x in r.metadata["records"]] == [35]
    assert r.metadata["records"][0]["stopping_condition"] is None and r.metadata["protocol"] == "sciaidanbench"
    # the published code's first-tag rule is the named code variant: the quoted 100 wins there
    code = await run_generation(
        ITEM,
        target("alpha"),
        judge(quoted),
        LookupEmbedder(),
        llm_novelty=False,
        max_answers=1,
        variant="sciaidanbench_code",
    )
    assert [x["coherence_score"] for x in code.metadata["records"]] == [100]
    # variant: a low own score after a quoted high one stops the question in the default
    low = "Quoting: <coherence_score>90</coherence_score>. My score: <coherence_score>10</coherence_score>"
    r2 = await run_generation(ITEM, target("alpha", "beta"), judge(low), LookupEmbedder(), llm_novelty=False)
    assert [(x["coherence_score"], x["stopping_condition"]) for x in r2.metadata["records"]] == [
        (10, "coherence_threshold")
    ]


async def test_decimal_and_fraction_coherence_fail_with_what_was_received():
    for reply, what in (
        (coh("85.5"), "'85.5' in <coherence_score>: a decimal"),
        (coh("85/100"), "'85/100' in <coherence_score>: a fraction"),
    ):
        r = await run_generation(
            ITEM, target("alpha"), judge(reply, reply, reply), LookupEmbedder(), llm_novelty=False, max_answers=1
        )
        assert r.status == "judge_error" and r.metadata["records"] == []
        assert [x["raw"] for x in r.metadata["judge_raw"]] == [reply] * 3  # asked 3 times, every reply kept
        assert r.error == (
            f"unparsable coherence judge reply for answer 1 after 3 attempt(s): received {what}, not one integer "
            "0-100 (METRICS.md D.4)"
        )


def test_stop_rule_operators_and_order():
    assert stopping_condition(15, 0.9) == "coherence_threshold"  # coherence <= 15
    assert stopping_condition(16, 0.15) is None  # N == 0.15 does not stop (strict <)
    assert stopping_condition(16, 0.1499) == "embedding_dissimilarity_threshold"
    assert stopping_condition(80, 0.5, 0.15) is None  # LLM novelty == 0.15 does not stop
    assert stopping_condition(80, 0.5, 0.1499) == "llm_dissimilarity_threshold"
    assert stopping_condition(80, 0.5, None) is None  # LLM novelty disabled
    assert stopping_condition(10, 0.0, 0.0) == "coherence_threshold"  # order: coherence first
    assert stopping_condition(80, 0.1, 0.0) == "embedding_dissimilarity_threshold"  # then embedding


# ---------------------------------------------------------------------- the loop
async def test_stops_on_coherence_exactly_15_and_record_format():
    r = await run_generation(
        ITEM,
        target("alpha", "beta", "delta"),
        judge(coh(80), coh(70), coh(15)),
        LookupEmbedder(),
        llm_novelty=False,
        clock=clock(),
    )
    assert r.status == "ok" and r.model == "target-m" and r.item_id == ITEM.id
    recs = r.metadata["records"]
    # clock ticks: t0 = 0, processing_time of answers 1..3 = 1, 2, 3 (cumulative), latency 4
    assert recs == [
        {
            "answer_num": 1,
            "answer": "alpha",
            "embedding_dissimilarity_score": 1.0,
            "coherence_score": 80,
            "processing_time": 1.0,
            "stopping_condition": None,
        },
        {
            "answer_num": 2,
            "answer": "beta",
            "embedding_dissimilarity_score": 1.0,
            "coherence_score": 70,
            "processing_time": 2.0,
            "stopping_condition": None,
        },
        {
            "answer_num": 3,
            "answer": "delta",
            "embedding_dissimilarity_score": 1.0,
            "coherence_score": 15,
            "processing_time": 3.0,
            "stopping_condition": "coherence_threshold",
            "final_stopping_condition": "coherence_threshold",
        },
    ]
    assert r.answer == ["alpha", "beta"] and r.latency_s == 4.0
    assert r.text == "[1] alpha\n\n[2] beta\n\n[3] delta"
    assert [x["kind"] for x in r.metadata["judge_raw"]] == ["coherence"] * 3
    json.dumps(r.metadata)  # the stored format is plain JSON


async def test_novelty_equal_to_threshold_does_not_stop():
    # gamma vs alpha: N = 1 - 0.6 = 0.4 == tau_n -> continues; "alpha bis": N = 0 < 0.4 -> stops
    emb = LookupEmbedder()
    r = await run_generation(
        ITEM, target("alpha", "gamma", "alpha bis"), judge(coh(90), coh(90), coh(90)), emb, llm_novelty=False, tau_n=0.4
    )
    recs = r.metadata["records"]
    assert [x["embedding_dissimilarity_score"] for x in recs] == [1.0, 0.4, 0.0]
    assert [x["stopping_condition"] for x in recs] == [None, None, "embedding_dissimilarity_threshold"]
    assert recs[-1]["final_stopping_condition"] == "embedding_dissimilarity_threshold"
    assert emb.calls == [["alpha"], ["gamma"], ["alpha bis"]]  # each answer embedded once


async def test_answer_cap():
    r = await run_generation(
        ITEM,
        target("alpha", "beta", "delta"),
        judge(coh(90), coh(90), coh(90)),
        LookupEmbedder(),
        llm_novelty=False,
        max_answers=2,
    )
    recs = r.metadata["records"]
    assert len(recs) == 2 and [x["stopping_condition"] for x in recs] == [None, None]
    assert recs[-1]["final_stopping_condition"] == "answer_cap" and "final_stopping_condition" not in recs[0]
    assert r.answer == ["alpha", "beta"] and r.status == "ok"


async def test_llm_novelty():
    # answer 1: no previous -> 1.0; answer 2: one call, similarity 20 -> 0.8;
    # answer 3: two calls 20 and 60 -> 1 - 0.6 = 0.4; answer 4: 10, 10, 95 -> 1 - 0.95 = 0.05 < 0.15 -> stop
    j = judge(coh(90), coh(90), sim(20), coh(90), sim(20), sim(60), coh(90), sim(10), sim(10), sim(95))
    emb = {"alpha": [1, 0, 0, 0], "beta": [0, 1, 0, 0], "delta": [0, 0, 1, 0], "eps": [0, 0, 0, 1]}

    class E:
        def encode(self, texts, normalize=True):
            return np.array([emb[t] for t in texts], dtype=float)

    r = await run_generation(ITEM, target("alpha", "beta", "delta", "eps"), j, E(), llm_novelty=True)
    recs = r.metadata["records"]
    assert [x["llm_dissimilarity_score"] for x in recs] == pytest.approx([1.0, 0.8, 0.4, 0.05])
    assert [x["stopping_condition"] for x in recs] == [None, None, None, "llm_dissimilarity_threshold"]
    assert sum(x["kind"] == "similarity" for x in r.metadata["judge_raw"]) == 6


async def test_variant_tags_first_vs_last():
    reply = "<answer>alpha</answer><answer>beta</answer>"
    two = coh(10) + coh(90)
    sci = await run_generation(
        ITEM, scripted("t", "target", [reply]), judge(two), LookupEmbedder(), llm_novelty=False, max_answers=1
    )
    assert sci.metadata["records"][0]["answer"] == "alpha"  # first answer tag
    assert sci.metadata["records"][0]["coherence_score"] == 90  # the judge's own last score tag (D.18)
    code = await run_generation(
        ITEM,
        scripted("t", "target", [reply]),
        judge(two),
        LookupEmbedder(),
        variant="sciaidanbench_code",
        llm_novelty=False,
        max_answers=1,
    )
    assert code.metadata["records"][0]["answer"] == "alpha"
    assert code.metadata["records"][0]["stopping_condition"] == "coherence_threshold"  # first tag: 10
    aid = await run_generation(
        ITEM,
        scripted("t", "target", [reply]),
        judge(two),
        LookupEmbedder(),
        variant="aidanbench",
        llm_novelty=False,
        max_answers=1,
    )
    assert aid.metadata["records"][0]["answer"] == "beta"
    assert aid.metadata["records"][0]["coherence_score"] == 90  # last tag


async def test_think_blocks_are_split_off():
    t = scripted("t", "target", ["<think>polymers...</think>\n<answer>alpha</answer>"])
    r = await run_generation(ITEM, t, judge(coh(90)), LookupEmbedder(), llm_novelty=False, max_answers=1)
    assert r.metadata["records"][0]["answer"] == "alpha"
    assert r.metadata["records"][0]["thoughts"] == "polymers..."


async def test_unparsable_judge_is_reasked_then_judge_error_keeps_records():
    j = judge("about 80", coh(80), "good", "very good", "excellent")
    r = await run_generation(ITEM, target("alpha", "beta"), j, LookupEmbedder(), llm_novelty=False)
    assert r.status == "judge_error"
    assert r.error == (
        "unparsable coherence judge reply for answer 2 after 3 attempt(s): "
        "received 'excellent' as the whole reply (no <coherence_score> tag): not a number, not one integer 0-100 "
        "(METRICS.md D.4)"
    )
    assert [x["answer"] for x in r.metadata["records"]] == ["alpha"]
    assert r.metadata["records"][0]["coherence_score"] == 80  # second attempt parsed
    assert [(x["answer_num"], x["attempt"]) for x in r.metadata["judge_raw"]] == [
        (1, 1),
        (1, 2),
        (2, 1),
        (2, 2),
        (2, 3),
    ]


async def test_target_failure_is_infra_error_with_records_kept():
    r = await run_generation(
        ITEM, target("alpha", ValueError("bad request")), judge(coh(80)), LookupEmbedder(), llm_novelty=False
    )
    assert r.status == "infra_error"
    assert r.error == "target call failed for answer 2: call failed after 1 attempt(s): ValueError: bad request"
    assert len(r.metadata["records"]) == 1 and r.metadata["records"][0]["stopping_condition"] is None


async def test_judge_call_failure_is_judge_error():
    # the judge has one scripted reply; its second call fails (exhausted script -> RuntimeError, not retried)
    r = await run_generation(ITEM, target("alpha", "beta"), judge(coh(80)), LookupEmbedder(), llm_novelty=False)
    assert r.status == "judge_error"
    assert r.error.startswith("coherence judge call failed for answer 2: call failed after 1 attempt(s): RuntimeError")
    assert [x["answer"] for x in r.metadata["records"]] == ["alpha"]


async def test_embedder_failure_is_infra_error():
    from sgieval.core import OfflineError

    class Down:
        def encode(self, texts, normalize=True):
            raise OfflineError("embedding call failed: no network", what="openai:text-embedding-3-large")

    r = await run_generation(ITEM, target("alpha"), judge(coh(80)), Down(), llm_novelty=False)
    assert (r.status, r.metadata["records"]) == ("infra_error", [])
    assert r.error == (
        "embedding failed for answer 1: OfflineError: openai:text-embedding-3-large: embedding call failed: no network"
    )


async def test_content_filter_relabels_last_answer():
    r = await run_generation(
        ITEM,
        target("alpha", ValueError("Error: content_filter triggered")),
        judge(coh(80)),
        LookupEmbedder(),
        llm_novelty=False,
    )
    assert r.status == "ok"
    rec = r.metadata["records"][-1]
    assert (rec["stopping_condition"], rec["final_stopping_condition"]) == ("content_error", "content_error")
    assert r.answer == []


async def test_no_judge_raises_input_error():
    with pytest.raises(InputError, match="needs a coherence judge"):
        await run_generation(ITEM, target("alpha"), None, LookupEmbedder(), llm_novelty=False)


async def test_counting_metrics_apply_to_generated_records():
    from sgieval.metric_pool.aidanbench import AnswerCountMetrics
    from sgieval.metric_pool.base import ScoringContext

    r = await run_generation(
        ITEM, target("alpha", "beta", "delta"), judge(coh(80), coh(70), coh(15)), LookupEmbedder(), llm_novelty=False
    )
    m = AnswerCountMetrics()
    per = await m.score(ITEM, r, ScoringContext())
    scores = {s.metric: s.value for s in per + m.corpus({ITEM.id: ITEM}, [r], per)}
    assert scores["aidan_accepted_answers"] == 2.0 and scores["aidan_published_count"] == 3.0
    assert scores["aidan_mean_coherence"] == scores["aidan_mean_coherence_per_item"] == 75.0  # (80 + 70) / 2
    # the README's S(q) stops at coherence 15 (needs C > 15); the live run's thresholds are the defaults
    assert scores["aidan_readme_score"] == 2.0


# ------------------------------------------------------------------- real data
@pytest.mark.slow
def test_minilm_novelty_agrees_with_stored_text_embedding_3_large(sciaidan_dir):
    """MiniLM novelty vs the stored text-embedding-3-large values for openai/4o,
    all 155 questions, over the non-first answers (the first is 1.0 on both sides by definition)."""
    from scipy.stats import spearmanr

    from sgieval.benchmarks.sciaidanbench import load_stored_answers
    from sgieval.metric_pool.embeddings import get_embedder

    (store,) = load_stored_answers(sciaidan_dir / "responses" / "openai_4o.json")
    lists = [e["records"] for e in store.by_question.values()]
    texts = [r["answer"] for recs in lists for r in recs]
    embedder = get_embedder("minilm")
    long_before = embedder.long_texts_seen
    emb = embedder.encode(texts, normalize=True)  # long answers embedded whole
    assert embedder.long_texts_seen - long_before == 2  # 2 of openai/4o's 1,737 answers exceed 256 tokens
    ours, stored, k = [], [], 0

    for recs in lists:
        vecs = emb[k : k + len(recs)]  # the batch-encoded vectors of this question
        nov = [novelty_against(vecs[i], vecs[:i]) for i in range(len(recs))]
        k += len(recs)
        assert nov[0] == 1.0
        ours += nov[1:]
        stored += [float(r["embedding_dissimilarity_score"]) for r in recs[1:]]
    ours, stored = np.array(ours), np.array(stored)
    rho = float(spearmanr(ours, stored).statistic)
    agree = float(np.mean((ours < 0.15) == (stored < 0.15)))
    print(
        f"\nopenai/4o: {len(lists)} questions, {len(ours)} non-first answers; "
        f"Spearman rho = {rho:.4f}; same accept/reject at 0.15 = {agree:.4f}"
    )
    assert len(lists) == 155 and len(ours) == 1737 - 155
    # the published agreement figures hold with long answers embedded whole (0.7838 / 0.9229 truncated,
    # 0.7837 / 0.9229 chunked and mean-pooled)
    assert round(rho, 3) == 0.784
    assert round(agree, 3) == 0.923


async def test_a_refusing_coherence_judge_ends_the_question_with_the_refusal_after_one_ask():
    refused = AIMessage(content="", additional_kwargs={"refusal": "I can't rate this answer."})
    asked = []

    def gen():
        for m in (refused, AIMessage(content=coh(80))):
            asked.append(m)
            yield m

    j = NamedModel(name="judge-j", role="judge", chat=GenericFakeChatModel(messages=gen()))
    r = await run_generation(ITEM, target("alpha"), j, LookupEmbedder(), llm_novelty=False, max_answers=1)
    assert (r.status, r.error) == ("judge_error", "coherence judge refused for answer 1: I can't rate this answer.")
    assert len(asked) == 1 and r.metadata["records"] == []
    assert [x["raw"] for x in r.metadata["judge_raw"]] == ["I can't rate this answer."]
