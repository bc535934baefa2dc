"""``--recheck``: re-decide stored SciAidanBench acceptances with the run's embedder (METRICS.md B.3, B.5): per target
model, Spearman's rho of recomputed vs stored novelty, the share of same decisions, the accepted count re-walked with
the stop rule on stored coherence, and whether the ranking changes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..core import Response
from .aidanbench_protocol import TAU_N, _encode, novelty_against, stopping_condition


@dataclass(frozen=True)
class RecheckRow:
    """One target model: ``n_answers`` non-first stored answers compared; accepted counts over ``n_questions`` lists."""

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
    """(recomputed, stored) novelties of the non-first answers of ``lists``, and the (stored, re-decided) accepted
    counts."""
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
    """One :class:`RecheckRow` per target model whose responses carry stored SciAidanBench records."""
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
