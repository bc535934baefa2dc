"""Offline retrieval that ranks every work of a corpus (METRICS.md E.1; BM25 alone returns only works sharing a word).

``dense``: a work's similarity is the cosine of its best passage with the query. ``hybrid`` (default): reciprocal
rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009) of the dense and BM25 rankings, ``RRF(d) = sum_r 1 / (rrf_k +
rank_r(d))``, ``rrf_k = 60``; ties by dense similarity, then corpus order.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, Literal

import numpy as np

from ..core import InputError
from .search import BM25Index, SearchResults, load_corpus

__all__ = ["CorpusRetriever", "RRF_K", "RetrievalMode", "rrf_scores"]

RRF_K = 60
"""The reciprocal-rank-fusion constant k of Cormack et al. (2009)."""

RetrievalMode = Literal["dense", "hybrid"]


def rrf_scores(rankings: list[list[int]], n: int, k: int = RRF_K) -> list[float]:
    """Reciprocal rank fusion of ``rankings`` over ``n`` documents.

    Args:
        rankings: document indices (0 <= i < n) per ranking, best first.
        n: number of documents.
        k: the RRF constant (60 in Cormack, Clarke and Buettcher, SIGIR 2009).

    Returns:
        ``n`` fused scores, ``sum_r 1 / (k + rank_r(d))`` with ranks from 1; 0 for a document no ranking holds.
    """
    out = [0.0] * n
    for ranking in rankings:
        for rank, d in enumerate(ranking, 1):
            out[d] += 1.0 / (k + rank)
    return out


class CorpusRetriever:
    """Rank every document of a corpus (as for BM25Index) for a query (module docstring); ``embed(texts) -> array
    (len(texts), d)`` runs once over every passage, then once per query; ``warnings`` (skipped files) go on every
    result; InputError for an unknown ``mode``."""

    def __init__(
        self,
        documents: Iterable[Any],
        embed: Callable[[list[str]], Any],
        *,
        mode: RetrievalMode = "hybrid",
        warnings: list[str] | None = None,
    ):
        if mode not in ("dense", "hybrid"):
            raise InputError(f"unknown retrieval mode {mode!r}", what="retrieval", fix="use dense or hybrid")
        self.mode = mode
        self.embed = embed
        self.bm25 = BM25Index(documents, warnings=warnings)
        self._vectors: np.ndarray | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_folder(
        cls, folder: Any, embed: Callable[[list[str]], Any], *, mode: RetrievalMode = "hybrid", **kw: Any
    ) -> "CorpusRetriever":
        """The retriever of a corpus folder (:func:`~.search.load_corpus`).

        Args:
            folder: the corpus folder.
            embed: as for :class:`CorpusRetriever`.
            mode: ``"hybrid"`` or ``"dense"``.
            kw: further :class:`CorpusRetriever` options.

        Returns:
            The retriever.
        """
        docs, warnings = load_corpus(folder)
        return cls(docs, embed, mode=mode, warnings=warnings, **kw)

    def __len__(self) -> int:
        return len(self.bm25.documents)

    @property
    def backend(self) -> str:
        return "bm25+dense" if self.mode == "hybrid" else "dense"

    def _passage_vectors(self) -> np.ndarray:
        """Unit vectors of every passage (title + passage text), computed once."""
        with self._lock:
            if self._vectors is None:
                texts = [f"{self.bm25.documents[di].title}. {text}".strip() for di, text in self.bm25.passages]
                v = np.asarray(self.embed(texts), dtype=np.float64).reshape(len(texts), -1)
                norms = np.linalg.norm(v, axis=1, keepdims=True)
                self._vectors = v / np.where(norms == 0, 1.0, norms)
            return self._vectors

    def _dense(self, query: str) -> list[tuple[int, float, int]]:
        """Every document as (index, cosine of its best passage with ``query``, that passage), best first."""
        if not self.bm25.passages:
            return []
        vectors = self._passage_vectors()
        q = np.asarray(self.embed([query]), dtype=np.float64).reshape(-1)
        qn = float(np.linalg.norm(q))
        sims = vectors @ (q / qn) if qn else np.zeros(len(vectors))
        best = self.bm25._best_passages(enumerate(sims.tolist()))
        return sorted(((di, s, pi) for di, (s, pi) in best.items()), key=lambda x: (-x[1], x[0]))

    def search(self, query: str, max_results: int = 5) -> SearchResults:
        """The ``max_results`` best documents for ``query`` (every document when the corpus has fewer).

        Args:
            query: the search text.
            max_results: how many works to return (>= 1).

        Returns:
            SearchResults, backend ``"dense"`` or ``"bm25+dense"``; empty only for an empty corpus or query.
        """
        if not query.strip() or not len(self):
            return SearchResults(query=query, backend=self.backend, warnings=list(self.bm25.warnings))
        dense = self._dense(query)
        sim = {di: s for di, s, _ in dense}
        passage = {di: pi for di, _, pi in dense}
        if self.mode == "hybrid":
            index = {d.id: i for i, d in enumerate(self.bm25.documents)}
            lexical = [index[h.doc_id] for h in self.bm25.search(query, k=len(self)) if h.doc_id in index]
            fused = rrf_scores([[di for di, _, _ in dense], lexical], len(self))
            order = sorted(range(len(self)), key=lambda d: (-fused[d], -sim.get(d, 0.0), d))
            score = fused
        else:
            order = [di for di, _, _ in dense]
            score = [sim.get(d, 0.0) for d in range(len(self))]
        top = order[: max(1, int(max_results))]
        hits = [self.bm25._hit(rank, di, passage[di], self.backend, score[di]) for rank, di in enumerate(top, 1)]
        return SearchResults(query=query, backend=self.backend, hits=hits, warnings=list(self.bm25.warnings))
