"""Retrieval-augmented novelty (METRICS.md E): a generated corpus of six short papers and two ideas (one close to
the papers, one far), every paper ranked by embedding similarity fused with BM25 (so the n = 4 nearest always
exist), a fixed word-indicator embedder, hand-computed S_avg, S_inn and rewards; MiniLM ranks the two ideas the
same way."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from sgieval.core import Item, Response
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.retrieval_novelty import RetrievalNoveltyMetric, idea_text, query_for

PAPERS = {
    "p1.md": "# Graphene desalination\nGraphene membranes filter salt.",
    "p2.md": "# Graphene filters\nGraphene membranes filter seawater salt.",
    "p3.md": "# Salt membranes\nMembranes filter seawater salt.",
    "p4.md": "# Membrane fouling\nMembranes foul in seawater.",
    "p5.md": "# Protein folding\nEnzymes fold proteins.",
    "p6.md": "# Enzyme kinetics\nEnzymes catalyse reactions quickly.",
}
QUESTION = "Propose one research idea. Put your final idea in <answer></answer> after thinking in <think></think>."
ITEM = Item(id="ideas/1", benchmark="jsonl:ideas", task="generic", prompt=QUESTION)
CLOSE = Response(
    item_id="ideas/1",
    model="replay:close",
    text="<answer>Graphene membranes filter seawater salt.</answer>",
    reasoning="I thought about desalination.",
)
FAR = Response(item_id="ideas/1", model="replay:far", text="<answer>Enzymes could power tiny submarines.</answer>")


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


VOCAB = sorted(set().union(*(words(t) for t in PAPERS.values()), words(CLOSE.text), words(FAR.text), {"answer"}))


def indicator(texts: list[str]) -> np.ndarray:
    """Fixed test embedder: 1 per vocabulary word present; cosine = |A & B| / sqrt(|A| |B|)."""
    return np.array([[1.0 if w in words(t) else 0.0 for w in VOCAB] for t in texts])


@pytest.fixture
def corpus(tmp_path):
    for name, text in PAPERS.items():
        (tmp_path / name).write_text(text)
    return tmp_path


async def _score(resp, corpus, embedder=indicator):
    ctx = ScoringContext(embedder=embedder, options={"corpus": str(corpus)})
    return {s.metric: s for s in await RetrievalNoveltyMetric().score(ITEM, resp, ctx)}


async def test_close_idea_hand_computed(corpus):
    got = await _score(CLOSE, corpus)
    nov = got["retrieval_novelty"]
    # the query's words in the embedder's vocabulary are the idea's (the question's are not in it), so the dense
    # ranking is p2 > p3 > p1 > p4 > p5 = p6 (cosines below, p5 and p6 0); BM25 finds only p1-p4 (a shared word);
    # fused by reciprocal rank the four nearest are p1-p4.  Idea words {graphene, membranes, filter, seawater,
    # salt}; work = title + snippet (the file's text):
    # p1 {graphene, desalination, membranes, filter, salt}: 4 shared -> 4/sqrt(5*5) = 0.8
    # p2 {graphene, filters, membranes, filter, seawater, salt}: 5 -> 5/sqrt(5*6) = 0.912871
    # p3 {salt, membranes, filter, seawater}: 4 -> 4/sqrt(5*4) = 0.894427
    # p4 {membrane, fouling, membranes, foul, in, seawater}: 2 -> 2/sqrt(5*6) = 0.365148
    sims = [0.8, 5 / math.sqrt(30), 4 / math.sqrt(20), 2 / math.sqrt(30)]
    s_avg = sum(sims) / 4  # 0.743112
    assert nov.details["s_avg"] == pytest.approx(s_avg)
    assert nov.value == pytest.approx(10 * (1 - s_avg))  # 2.568884
    assert sorted(w["title"] for w in nov.evidence[0].works) == sorted(
        ["Graphene desalination", "Graphene filters", "Salt membranes", "Membrane fouling"]
    )
    assert nov.evidence[0].query == ("Graphene membranes filter seawater salt. Propose one research idea.")
    assert nov.evidence[0].backend == "bm25+dense" and nov.evidence[0].n_found == 4
    assert got["retrieval_novelty_reward"].value == 0.0  # 2.57 <= tau 5
    # the prompt asks for <answer>; reasoning closed and a non-empty answer: R_format 1; R = 1 + 0
    assert got["ttrl_reward"].value == 1.0


async def test_far_idea_is_scored_against_the_nearest_works_even_without_a_shared_word(corpus):
    got = await _score(FAR, corpus)
    nov = got["retrieval_novelty"]
    # idea {enzymes, could, power, tiny, submarines}: p5 {protein, folding, enzymes, fold, proteins} 1/sqrt(25) = 0.2;
    # p6 {enzyme, kinetics, enzymes, catalyse, reactions, quickly} 1/sqrt(30) = 0.182574; p1-p4 share no word: 0.
    # Dense ranks p5, p6, then p1..p4 in corpus order; BM25 finds p5 and p6 only.  RRF (k = 60): p5 and p6 get
    # 1/61 or 1/62 from each ranking, p1 1/63, p2 1/64: the four nearest are p5, p6, p1, p2.
    # S_avg = (0.2 + 0.182574 + 0 + 0) / 4 = 0.095644, S_inn = 9.043565
    s_avg = (0.2 + 1 / math.sqrt(30)) / 4
    assert nov.value == pytest.approx(10 * (1 - s_avg))
    assert [w["title"] for w in nov.evidence[0].works][2:] == ["Graphene desalination", "Graphene filters"]
    assert nov.details["n_found"] == 4 and "2 of 4 works found" not in nov.rationale
    assert got["retrieval_novelty_reward"].value == 1.0  # 9.04 > 5
    # no closed reasoning block: R_format 0; R = 0 + 1
    assert got["ttrl_reward"].value == 1.0 and "R_format = 0" in got["ttrl_reward"].rationale


async def test_fewer_works_than_n_uses_those_there_are(tmp_path):
    for name in ("p5.md", "p6.md"):
        (tmp_path / name).write_text(PAPERS[name])
    nov = (await _score(FAR, tmp_path))["retrieval_novelty"]
    assert nov.details["n_found"] == 2 and "2 of 4 works found" in nov.rationale
    assert nov.value == pytest.approx(10 * (1 - (0.2 + 1 / math.sqrt(30)) / 2))  # 8.087129


async def test_an_idea_sharing_nothing_with_the_papers_is_novel_not_unscored(corpus):
    resp = Response(item_id="ideas/1", model="replay:x", text="<answer>Quantum dots glow brightly.</answer>")
    got = await _score(resp, corpus)
    # no word in common with any paper: the four nearest works have cosine 0, S_avg 0, S_inn 10
    assert got["retrieval_novelty"].value == 10.0 and got["retrieval_novelty"].details["n_found"] == 4
    assert got["retrieval_novelty_reward"].value == 1.0


async def test_no_work_found_is_not_applicable_never_10(tmp_path):
    (tmp_path / "notes.bin").write_bytes(b"\x00")  # a folder with no readable work: an empty corpus
    got = await _score(CLOSE, tmp_path)
    assert all(
        s.value is None and s.status == "not_run" and s.details == {"not_applicable": True} for s in got.values()
    )
    assert got["retrieval_novelty"].error.startswith("no related work found for the query")


async def test_dense_mode_ranks_by_similarity_only(corpus):
    ctx = ScoringContext(embedder=indicator, options={"corpus": str(corpus), "retrieval": "dense"})
    nov = {s.metric: s for s in await RetrievalNoveltyMetric().score(ITEM, CLOSE, ctx)}["retrieval_novelty"]
    # dense order p2 (0.912871) > p3 (0.894427) > p1 (0.8) > p4 (0.365148)
    assert [w["title"] for w in nov.evidence[0].works] == [
        "Graphene filters",
        "Salt membranes",
        "Graphene desalination",
        "Membrane fouling",
    ]
    assert nov.evidence[0].backend == "dense"


async def test_search_failure_is_an_infra_error(tmp_path):
    got = await _score(CLOSE, tmp_path / "missing-folder")
    assert {s.status for s in got.values()} == {"infra_error"}
    assert got["retrieval_novelty"].error.startswith("search failed: InputError")


async def test_format_reward_is_not_counted_when_the_prompt_did_not_ask(corpus):
    item = ITEM.model_copy(update={"prompt": "Propose one research idea."})
    ctx = ScoringContext(embedder=indicator, options={"corpus": str(corpus)})
    got = {s.metric: s for s in await RetrievalNoveltyMetric().score(item, FAR, ctx)}
    assert got["ttrl_reward"].value == 1.0 and "R_format not counted" in got["ttrl_reward"].rationale


def test_idea_and_query():
    r = Response(
        item_id="i", model="m", text="<think>draft <answer>old</answer></think>Final: <answer>New idea. More.</answer>"
    )
    assert idea_text(r) == "New idea. More."
    assert query_for(ITEM, "New idea. More.") == "New idea. Propose one research idea."


@pytest.mark.slow
async def test_minilm_ranks_the_far_idea_as_more_novel(corpus):
    from sgieval.metric_pool.embeddings import get_embedder

    emb = get_embedder("minilm")
    close = (await _score(CLOSE, corpus, emb))["retrieval_novelty"].value
    far = (await _score(FAR, corpus, emb))["retrieval_novelty"].value
    assert far > close


async def test_with_a_corpus_only_the_papers_are_searched_not_the_pools_benchmark_items(corpus):
    # a run with judges or an agent has a tool pool whose offline index also holds the benchmark's own items;
    # with --corpus, "compared with my papers" searches the papers only (the close idea's item text below would
    # otherwise be a retrieved "work")
    from sgieval.tools.pool import ToolPool

    own = Item(
        id="ideas/own",
        benchmark="jsonl:ideas",
        task="generic",
        prompt="Graphene membranes filter seawater salt graphene membranes filter seawater salt.",
    )
    pool = ToolPool.from_names("search", corpus_dir=str(corpus), documents=[own], search_backend="bm25")
    ctx = ScoringContext(embedder=indicator, tools=pool, options={"corpus": str(corpus)})
    got = {s.metric: s for s in await RetrievalNoveltyMetric().score(ITEM, CLOSE, ctx)}
    nov = got["retrieval_novelty"]
    assert sorted(w["title"] for w in nov.evidence[0].works) == sorted(
        ["Graphene desalination", "Graphene filters", "Salt membranes", "Membrane fouling"]
    )
    assert nov.value == pytest.approx(10 * (1 - (0.8 + 5 / math.sqrt(30) + 4 / math.sqrt(20) + 2 / math.sqrt(30)) / 4))
    # without a corpus the pool's web_search is used, and its index holds the item
    ctx2 = ScoringContext(embedder=indicator, tools=pool, options={})
    got2 = {s.metric: s for s in await RetrievalNoveltyMetric().score(ITEM, CLOSE, ctx2)}
    assert "item:ideas/own" in [w["source"] for w in got2["retrieval_novelty"].evidence[0].works]


async def test_offline_pool_search_ranks_every_catalog_text_too():
    # no corpus folder: the tool pool's web_search answers offline from its own index (here the six papers as
    # documents, as the catalog's texts are); every text is ranked, so the far idea again has its 4 nearest works
    # (p5, p6, then p1, p2 by corpus order) and S_inn = 10 (1 - (0.2 + 1/sqrt(30)) / 4) = 9.043565
    from sgieval.tools.pool import ToolPool

    docs = [
        {"id": name, "title": text.split("\n")[0].lstrip("# "), "text": text.split("\n", 1)[1]}
        for name, text in PAPERS.items()
    ]
    pool = ToolPool.from_names("search", documents=docs, search_backend="bm25")
    ctx = ScoringContext(embedder=indicator, tools=pool, options={})
    nov = {s.metric: s for s in await RetrievalNoveltyMetric().score(ITEM, FAR, ctx)}["retrieval_novelty"]
    assert nov.details["n_found"] == 4 and nov.evidence[0].backend == "bm25+dense"
    assert nov.value == pytest.approx(10 * (1 - (0.2 + 1 / math.sqrt(30)) / 4))
