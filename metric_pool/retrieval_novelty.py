"""Retrieval-augmented novelty (METRICS.md E; SGI-Bench paper, arXiv 2512.16969, 5.1.1, eqs. 3-5): ``n`` = 4 works
retrieved (``--corpus``: :class:`sgieval.tools.retrieval.CorpusRetriever`, else ``web_search``), S_avg their mean cosine
with the idea; ``retrieval_novelty`` = clip(10 (1 - S_avg), 0, 10), ``retrieval_novelty_reward`` = [S_inn > 5],
``ttrl_reward`` = R_format + R_novelty (0-2).  No work found: ``not_run`` (never 10)."""

from __future__ import annotations

import re
from typing import Any, Callable

from ..core import Item, MetricSpec, Response, Score, as_evidence, final_text
from .base import Metric, ScoringContext, score_for
from .registry import metric

SRC = "METRICS.md E; SGI-Bench paper (arXiv 2512.16969) section 5.1.1, eqs. 3-5"
N_WORKS = 4
TAU = 5.0

NOVELTY = MetricSpec(
    name="retrieval_novelty",
    tasks=["*"],
    range=(0.0, 10.0),
    description="Innovation score S_inn = clip(10 (1 - S_avg), 0, 10), S_avg the mean cosine similarity between the "
    "idea and the n = 4 works retrieved for it (web search online; offline the --corpus works nearest by embedding "
    "similarity fused with BM25).",
    source=SRC,
)
REWARD = MetricSpec(
    name="retrieval_novelty_reward",
    tasks=["*"],
    description="R_novelty = 1 if S_inn > tau (tau = 5) else 0.",
    source=SRC,
)
TTRL = MetricSpec(
    name="ttrl_reward",
    tasks=["*"],
    range=(0.0, 2.0),
    description="R = R_format + R_novelty (0-2, unweighted as in the paper); R_format counted only where the prompt "
    "asked for <answer> tags.",
    source=SRC,
)

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S | re.I)
_SENTENCE = re.compile(r"(.+?[.!?])(\s|$)", re.S)


def idea_text(response: Response) -> str:
    """The idea: the last ``<answer>`` block of the final text (after the reasoning, D.8), else the final text."""
    text = final_text(response.text)
    found = _ANSWER.findall(text)
    return (found[-1] if found else text).strip()


def first_sentence(text: str, max_chars: int = 300) -> str:
    """The first sentence of ``text`` (up to its first ``.``, ``!`` or ``?``), at most ``max_chars``."""
    t = " ".join(text.split())
    m = _SENTENCE.match(t)
    return (m.group(1) if m else t)[:max_chars]


def query_for(item: Item, idea: str) -> str:
    """The search query: the idea's first sentence plus the item's question (its prompt's first sentence)."""
    q = item.metadata.get("question") if isinstance(item.metadata.get("question"), str) else item.prompt
    return f"{first_sentence(idea)} {first_sentence(q or '')}".strip()


LITERATURE = (
    r"(?:compared?\s+(?:with|to)|against|relative\s+to|versus|vs\.?)\s+(?:the\s+|these\s+|my\s+|our\s+|existing\s+|"
    r"prior\s+|published\s+)*(?:literature|papers?|publications?|prior\s+work|related\s+work|articles?)"
)
NOVEL = r"novel\w*|original\w*"  # with LITERATURE: a request about novelty relative to the literature


def searches(options: dict | None, tools: Any = None) -> str | None:
    """Where retrieval novelty searches in a run (the ``--corpus`` folder, else ``web_search``), or None."""
    corpus = (options or {}).get("corpus")
    if corpus:
        return f"searches the papers in {corpus} (nearest by embedding similarity, fused with BM25)"
    if tools is not None and "web_search" in (getattr(tools, "names", None) or []):
        return "searches web_search (the web; offline its local index)"
    return None


@metric(
    NOVELTY,
    REWARD,
    TTRL,
    qualities={"novelty against the literature": (NOVEL, LITERATURE)},
    offer=searches,
    unavailable="retrieval novelty needs --corpus <folder> or the search tool",
)
class RetrievalNoveltyMetric(Metric):
    """``retrieval_novelty``, ``retrieval_novelty_reward`` and ``ttrl_reward``; ``search``: (query, n) -> hits with
    ``title``, ``url``/``source`` and ``snippet`` (default: the ``--corpus`` folder, else ``web_search``)."""

    def __init__(self, *, n: int = N_WORKS, tau: float = TAU, search: Callable[[str, int], Any] | None = None):
        self.n, self.tau, self._search = n, tau, search

    @classmethod
    def from_options(cls, options: dict) -> "RetrievalNoveltyMetric":
        """With the run's ``options["retrieval_novelty"]`` ``n`` and ``tau``.

        Args:
            options: the run's metric options.

        Returns:
            The metric.
        """
        o = options.get("retrieval_novelty") or {}
        return cls(n=int(o.get("n", N_WORKS)), tau=float(o.get("tau", TAU)))

    def applies(self, item: Item) -> bool:
        return True

    def _retriever(self, attr: str, key: Any, ctx: ScoringContext, source: Callable[[], Any]) -> Any:
        """A CorpusRetriever of ``source()`` (a folder or documents) with the run's embedder, kept in ``attr`` per
        ``key`` and mode: its passages are embedded once."""
        from ..tools import CorpusRetriever

        mode = str(ctx.options.get("retrieval", "hybrid"))
        cached = getattr(self, attr, None)
        if cached is None or cached[0] != (key, mode):
            embedder = self._embedder(ctx)
            src = source()
            make = CorpusRetriever.from_folder if isinstance(src, str) else CorpusRetriever
            cached = ((key, mode), make(src, embedder, mode=mode))  # type: ignore[arg-type]
            setattr(self, attr, cached)
        return cached[1]

    @staticmethod
    def _embedder(ctx: ScoringContext) -> Any:
        """The run's embedder (``ctx.embedder``; loaded from ``ctx.options["embedding_model"]``, default MiniLM)."""
        if ctx.embedder is None:
            from .embeddings import get_embedder

            ctx.embedder = get_embedder(ctx.options.get("embedding_model", "minilm"))
        return ctx.embedder

    def _hits(self, query: str, ctx: ScoringContext) -> tuple[list[dict[str, str]], str]:
        corpus = ctx.options.get("corpus")
        if self._search is not None:
            raw, backend = self._search(query, self.n), "custom"
        elif corpus:  # the user's papers only: never the web, nor the benchmark's own items in the pool's index
            out = self._retriever("_corpus", str(corpus), ctx, lambda: str(corpus)).search(query, self.n)
            raw, backend = out.hits, out.backend
        elif ctx.tools is not None and "web_search" in getattr(ctx.tools, "names", []):
            out, _ = ctx.tools.call("web_search", query=query, max_results=self.n)
            local = getattr(ctx.tools, "search", None)
            if out.backend == "bm25" and local is not None and local.has_local_corpus:
                # offline: the pool's own texts (the catalog's, any corpus folder), every one ranked by embedding
                # similarity fused with BM25, not only those sharing a word with the query (METRICS.md E.1)
                retriever = self._retriever("_local", id(local), ctx, lambda: local.index().documents)
                out = retriever.search(query, self.n)
            raw, backend = out.hits, out.backend
        else:
            from ..tools import WebSearch

            out = WebSearch("auto").search(query, self.n)
            raw, backend = out.hits, out.backend
        hits = []
        for h in list(raw)[: self.n]:
            get = (lambda k, h=h: h.get(k)) if isinstance(h, dict) else (lambda k, h=h: getattr(h, k, None))
            hit = {"title": str(get("title") or ""), "source": str(get("url") or get("source") or "")}
            hits.append(hit | {"snippet": str(get("snippet") or "")})
        return hits, backend

    async def score(self, item: Item, response: Response, ctx: ScoringContext) -> list[Score]:
        if not response.ok:
            return self.failed(item, response, response.status, f"no response: {response.error}")
        idea = idea_text(response)
        if not idea:
            return self.failed(item, response, "parse_error", "no idea text to compare (empty <answer> or reply)")
        query = query_for(item, idea)
        try:
            hits, backend = self._hits(query, ctx)
        except Exception as e:  # noqa: BLE001 - any search failure is an infra_error with its reason (E.5)
            return self.failed(item, response, "infra_error", f"search failed: {type(e).__name__}: {e}")
        embedder_name = getattr(ctx.embedder, "name", None) or ctx.options.get("embedding_model", "minilm")
        evidence: dict[str, Any] = {"tool": "web_search", "kind": "retrieval", "query": query, "backend": backend}
        evidence |= {"embedder": str(embedder_name), "n_requested": self.n, "n_found": len(hits)}
        evidence["works"] = [{"title": h["title"], "source": h["source"]} for h in hits]
        if not hits:
            why = f"no related work found for the query {query!r} ({backend}); novelty not scored"
            fields = {"details": {"not_applicable": True}, "evidence": [as_evidence(evidence)]}
            return [score_for(item, response, s.name, None, status="not_run", error=why, **fields) for s in self.specs]
        loaded = ctx.embedder is None
        try:  # cos(idea, work) for each work found (title and snippet), with the run's embedder
            # imported here, not at import: the metric registry imports this module for every run
            from .embeddings import cosine_matrix

            embedder = self._embedder(ctx)
            if loaded:
                evidence["embedder"] = str(getattr(embedder, "name", evidence["embedder"]))
            emb = embedder([idea] + [f"{h['title']}. {h['snippet']}".strip() for h in hits])
            sims = [float(c) for c in cosine_matrix(emb[:1], emb[1:])[0]]
        except Exception as e:  # noqa: BLE001
            return self.failed(
                item, response, "infra_error", f"embedding failed: {type(e).__name__}: {e}", evidence=[evidence]
            )
        for w, s in zip(evidence["works"], sims):
            w["similarity"] = round(s, 6)
        s_avg = sum(sims) / len(sims)  # E.2, E.3
        s_inn = min(10.0, max(0.0, 10.0 * (1.0 - s_avg)))
        r_nov = 1.0 if s_inn > self.tau else 0.0
        # R_format (E.4): a closed reasoning block and a non-empty <answer>; None when the prompt asked for no tags
        closed = bool(response.reasoning and response.reasoning.strip()) or "</think>" in (response.text or "")
        tagged = _ANSWER.findall(final_text(response.text))
        r_fmt = int(closed and bool(tagged) and bool(tagged[-1].strip())) if "<answer>" in (item.prompt or "") else None
        found = f"{len(hits)} of {self.n} works found" if len(hits) < self.n else f"{len(hits)} works"
        works = "; ".join(f"{w['title']} ({w['similarity']:.3f})" for w in evidence["works"])
        base = f"S_avg = {s_avg:.4f} over {found} ({works}); S_inn = clip(10 (1 - S_avg), 0, 10) = {s_inn:.4f}"
        details = {"s_avg": s_avg, "s_inn": s_inn, "n_found": len(hits), "r_format": r_fmt, "tau": self.tau}
        ttrl = r_nov + (r_fmt or 0)
        fmt_note = (
            "R_format not counted: the prompt did not ask for <answer> tags" if r_fmt is None else f"R_format = {r_fmt}"
        )
        rationales = {
            NOVELTY.name: (s_inn, base),
            REWARD.name: (r_nov, f"{base}; S_inn {'>' if r_nov else '<='} tau = {self.tau:g}"),
            TTRL.name: (float(ttrl), f"R = R_format + R_novelty = {ttrl:g} ({fmt_note}; R_novelty = {r_nov:g})"),
        }
        ev = [as_evidence(evidence)]
        return [
            score_for(item, response, name, value, rationale=why, evidence=ev, details=details)
            for name, (value, why) in rationales.items()
        ]
