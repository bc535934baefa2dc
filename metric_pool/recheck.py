"""Stored judgements checked: re-decide stored SciAidanBench acceptances with the run's embedder.

A replayed SciAidanBench answer list was accepted or stopped by the original run's judges: its stored coherence scores
(the o1-mini judge in the published run) and its stored embedding novelty (text-embedding-3-large,
``embedding_dissimilarity_score``).  ``--recheck`` recomputes the novelty of every stored answer with the run's own
embedder (METRICS.md B.3: 1 - max cosine against the earlier answers of the list, the first answer 1.0) and compares,
per target model, over the non-first answers:

- Spearman's rho between the recomputed and the stored novelty (scipy.stats.spearmanr);
- the share of answers with the same novelty decision at tau_n = 0.15 (novelty < 0.15 rejects, B.5);
- the re-decided accepted count: each list re-walked with the B.5 stop rule on the stored coherence and the recomputed
  novelty, stopping at the first answer it rejects (an answer the stored run rejected but the recheck accepts ends the
  list too: what the model would have said next was never generated, so the count is a lower bound there), summed over
  the questions, next to the stored accepted count;
- whether the ranking of the target models by accepted answers changes.
The coherence decisions stay the stored judge's (a live judge re-deciding coherence is not implemented).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..core import Response
from .aidanbench_protocol import TAU_N, _encode, novelty_against, stopping_condition


@dataclass(frozen=True)
class RecheckRow:
    """One target model: ``n_answers`` non-first stored answers compared; ``rho`` Spearman (None when undefined);
    ``same_share`` 0-1; accepted counts summed over ``n_questions`` lists (stored, re-decided)."""

    model: str
    n_questions: int
    n_answers: int
    rho: float | None
    same_share: float | None
    stored_accepted: int
    recheck_accepted: int


def recheck_lists(
    lists: Sequence[list[dict[str, Any]]], embedder: Any, *, tau_n: float = TAU_N
) -> tuple[list[float], list[float], int, int]:
    """(recomputed novelties, stored novelties) of the non-first answers of ``lists`` with a stored
    ``embedding_dissimilarity_score``, and the (stored, re-decided) accepted counts summed over the lists."""
    ours: list[float] = []
    stored: list[float] = []
    n_stored = n_recheck = 0
    texts = [str(r.get("answer", "")) for recs in lists for r in recs]
    emb = _encode(embedder, texts) if texts else np.zeros((0, 1))
    k = 0
    for recs in lists:
        vecs = emb[k : k + len(recs)]
        k += len(recs)
        novelty = [novelty_against(vecs[i], vecs[:i]) for i in range(len(recs))]
        n_stored += sum(1 for r in recs if r.get("stopping_condition") is None)
        for i, r in enumerate(recs):
            coh = r.get("coherence_score")
            if stopping_condition(float(coh) if coh is not None else math.inf, novelty[i], tau_n=tau_n) is not None:
                break
            n_recheck += 1  # accepted by the recheck (past the stored stop, the list simply ends: a lower bound)
        for i, r in enumerate(recs[1:], 1):
            s = r.get("embedding_dissimilarity_score")
            if s is not None:
                ours.append(novelty[i])
                stored.append(float(s))
    return ours, stored, n_stored, n_recheck


def recheck(responses: Sequence[Response], embedder: Any, *, tau_n: float = TAU_N) -> list[RecheckRow]:
    """One :class:`RecheckRow` per target model whose responses carry stored SciAidanBench records
    (``metadata["records"]``); [] when none does."""
    from scipy.stats import spearmanr

    by_model: dict[str, list[list[dict[str, Any]]]] = {}
    for r in responses:
        recs = r.metadata.get("records") if r.metadata else None
        if isinstance(recs, list) and recs and all(isinstance(x, dict) for x in recs):
            by_model.setdefault(r.model, []).append(recs)
    rows = []
    for model, lists in by_model.items():
        ours, stored, n_stored, n_recheck = recheck_lists(lists, embedder, tau_n=tau_n)
        rho = None
        if len(ours) >= 3 and len(set(ours)) > 1 and len(set(stored)) > 1:
            rho = float(spearmanr(ours, stored).statistic)
        same = float(np.mean((np.array(ours) < tau_n) == (np.array(stored) < tau_n))) if ours else None
        rows.append(RecheckRow(model, len(lists), len(ours), rho, same, n_stored, n_recheck))
    return rows


def ranking_changes(rows: Sequence[RecheckRow]) -> tuple[list[str], list[str], bool]:
    """(order by stored accepted answers, order by re-decided ones, whether they differ); best first, ties by name."""
    stored = [r.model for r in sorted(rows, key=lambda r: (-r.stored_accepted, r.model))]
    ours = [r.model for r in sorted(rows, key=lambda r: (-r.recheck_accepted, r.model))]
    return stored, ours, stored != ours


__all__ = ["RecheckRow", "ranking_changes", "recheck", "recheck_lists"]
