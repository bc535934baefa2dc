"""Offline corpus retrieval ranks every work: dense (embedding similarity) and fused with BM25 by reciprocal rank
(Cormack et al. 2009), with a fixed word-indicator embedder and hand-computed ranks."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sgieval.core import InputError
from sgieval.tools.retrieval import CorpusRetriever, rrf_scores

DOCS = [
    {"id": "a", "title": "Salt", "text": "salt water membranes"},
    {"id": "b", "title": "Enzymes", "text": "enzymes fold proteins"},
    {"id": "c", "title": "Stars", "text": "stars burn hydrogen"},
]
VOCAB = ["salt", "water", "membranes", "enzymes", "fold", "proteins", "stars", "burn", "hydrogen"]


def indicator(texts):
    return np.array([[1.0 if w in set(re.findall(r"[a-z]+", t.lower())) else 0.0 for w in VOCAB] for t in texts])


def test_rrf_scores_hand_computed():
    # doc 0: ranks 1 and 2 -> 1/61 + 1/62; doc 1: rank 2 only -> 1/62; doc 2: rank 3 and 1 -> 1/63 + 1/61
    got = rrf_scores([[0, 1, 2], [2, 0]], 3)
    assert got == pytest.approx([1 / 61 + 1 / 62, 1 / 62, 1 / 63 + 1 / 61])
    assert rrf_scores([], 2) == [0.0, 0.0]


def test_every_work_is_ranked_even_without_a_shared_word():
    r = CorpusRetriever(DOCS, indicator, mode="dense")
    # query {salt, membranes}: a = {salt, water, membranes} -> 2/sqrt(2*3) = 0.816497; b, c share nothing: 0, corpus order
    res = r.search("salt membranes", 3)
    assert [h.doc_id for h in res.hits] == ["a", "b", "c"]
    assert res.hits[0].score == pytest.approx(2 / np.sqrt(6), abs=1e-6) and res.hits[1].score == 0.0
    assert res.backend == "dense"
    # BM25 alone finds only a; fused, every work still has a rank: a 1/61 + 1/61, b 1/62, c 1/63
    res = CorpusRetriever(DOCS, indicator).search("salt membranes", 5)
    assert [h.doc_id for h in res.hits] == ["a", "b", "c"] and res.backend == "bm25+dense"
    assert [h.score for h in res.hits] == pytest.approx([2 / 61, 1 / 62, 1 / 63], abs=1e-6)


def test_dense_rank_moves_a_lexically_absent_work_ahead():
    # query {proteins, hydrogen, burn}: b 1/sqrt(3*3) = 0.333, c 2/sqrt(3*3) = 0.667 -> c, b, a
    assert [h.doc_id for h in CorpusRetriever(DOCS, indicator, mode="dense").search("proteins burn hydrogen").hits] == [
        "c",
        "b",
        "a",
    ]


def test_empty_corpus_and_bad_mode():
    assert CorpusRetriever([], indicator).search("salt").hits == []
    with pytest.raises(InputError, match="unknown retrieval mode"):
        CorpusRetriever(DOCS, indicator, mode="sparse")  # type: ignore[arg-type]
