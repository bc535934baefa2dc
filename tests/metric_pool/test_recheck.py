"""--recheck: stored SciAidanBench acceptances re-decided with the run's embedder, against a
fixed embedder and hand-computed novelties."""

from __future__ import annotations

import numpy as np
import pytest

from sgieval.core import Response
from sgieval.metric_pool.recheck import ranking_changes, recheck

VEC = {
    "x": (1, 0, 0),
    "y": (0, 1, 0),
    "z": (0, 0, 1),
    "w": (0.6, 0, 0.8),
    "p": (1, 0, 0),
    "q": (0.8, 0.6, 0),
    "t": (0, 0, 1),
}


def embed(texts):
    return np.array([VEC[t] for t in texts], dtype=float)


def rec(answer, stored_novelty, stop=None, coherence=80):
    return {
        "answer": answer,
        "coherence_score": coherence,
        "embedding_dissimilarity_score": stored_novelty,
        "stopping_condition": stop,
    }


M1 = [  # list 1: x, y accepted; the repeat of x rejected by both (recomputed novelty 1 - 1 = 0)
    [rec("x", 1.0), rec("y", 0.9), rec("x", 0.05, "embedding_dissimilarity_threshold")],
    # list 2: z accepted; w: cos(w, z) = 0.8 -> novelty 0.2 >= 0.15, accepted by the recheck, rejected stored (0.1)
    [rec("z", 1.0), rec("w", 0.1, "embedding_dissimilarity_threshold")],
]
M2 = [[rec("p", 1.0), rec("q", 0.3), rec("q", 0.2), rec("t", 0.5), rec("p", 0.01, "embedding_dissimilarity_threshold")]]


def responses():
    return [
        Response(item_id=f"q{i}", model=m, metadata={"records": recs})
        for m, lists in (("replay:m1", M1), ("replay:m2", M2))
        for i, recs in enumerate(lists)
    ]


def test_recheck_by_hand():
    rows = {r.model: r for r in recheck(responses(), embed)}
    m1 = rows["replay:m1"]
    # non-first answers: recomputed (1 - 0 = 1.0, 1 - 1 = 0.0, 1 - 0.8 = 0.2) vs stored (0.9, 0.05, 0.1):
    # ranks (3, 1, 2) and (3, 1, 2) -> rho 1; decisions at 0.15: (keep, reject, keep) vs (keep, reject, reject) -> 2/3
    assert (m1.n_questions, m1.n_answers) == (2, 3)
    assert m1.rho == pytest.approx(1.0) and m1.same_share == pytest.approx(2 / 3)
    # accepted: stored 2 + 1 = 3; re-decided 2 + 2 = 4 (w accepted, then the list ends)
    assert (m1.stored_accepted, m1.recheck_accepted) == (3, 4)
    m2 = rows["replay:m2"]
    # p accepted; q: cos(q, p) = 0.8 -> 0.2, accepted; q again: novelty 0 -> the recheck stops there
    assert (m2.stored_accepted, m2.recheck_accepted) == (4, 2)
    # recomputed (0.2, 0.0, 1.0, 0.0) vs stored (0.3, 0.2, 0.5, 0.01): decisions (k, r, k, r) vs (k, k, k, r) -> 3/4
    assert m2.same_share == pytest.approx(0.75)
    stored, ours, changed = ranking_changes(list(rows.values()))
    assert stored == ["replay:m2", "replay:m1"] and ours == ["replay:m1", "replay:m2"] and changed


def test_low_stored_coherence_still_stops_the_recheck():
    lists = [[rec("x", 1.0), rec("y", 0.9, "coherence_threshold", coherence=15)]]
    [row] = recheck([Response(item_id="q", model="m", metadata={"records": lists[0]})], embed)
    assert (row.stored_accepted, row.recheck_accepted) == (1, 1)  # coherence 15 <= 15 stops both (B.5)


def test_responses_without_records_are_left_out():
    assert recheck([Response(item_id="q", model="m", text="a")], embed) == []


@pytest.mark.slow
def test_minilm_recheck_of_openai_4o_reproduces_the_known_agreement(sciaidan_dir):
    """MiniLM on openai/4o, all 155 questions: Spearman 0.784, 92.3% same decisions."""
    from sgieval.benchmarks.sciaidanbench import load_stored_answers
    from sgieval.metric_pool.embeddings import get_embedder

    (store,) = load_stored_answers(sciaidan_dir / "responses" / "openai_4o.json")
    resps = [
        Response(item_id=str(q), model="replay:openai/4o", metadata={"records": e["records"]})
        for q, e in store.by_question.items()
    ]
    [row] = recheck(resps, get_embedder("minilm"))
    assert (row.n_questions, row.n_answers) == (155, 1737 - 155)
    assert round(row.rho, 3) == 0.784 and round(row.same_share, 3) == 0.923
