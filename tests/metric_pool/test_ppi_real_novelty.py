"""PPI on real data: the stored SciAidanBench novelty (text-embedding-3-large, the original run's) stands for the
human label, the bundled MiniLM's novelty of the same answers for the judge. With labels on a seeded 10% of each
model's answers, the PPI++ interval of at least 5 of the 6 models covers the mean over all labels, and the PPI++
order agrees with the all-label order wherever the all-label intervals do not overlap."""

from __future__ import annotations

import numpy as np
import pytest

from sgieval.metric_pool.ppi import classical_mean, ppi_mean


@pytest.mark.minilm
def test_ppi_with_ten_percent_of_stored_novelties_recovers_the_all_label_means(sciaidan_dir):
    from sgieval.benchmarks.sciaidanbench import load_stored_answers
    from sgieval.metric_pool.embeddings import get_embedder
    from sgieval.metric_pool.recheck import recheck_lists

    embedder = get_embedder("minilm")
    rng = np.random.default_rng(2026)
    full, ppi = {}, {}
    for path in sorted((sciaidan_dir / "responses").glob("*.json")):
        (store,) = load_stored_answers(path)
        lists = [e["records"] for e in store.by_question.values()]
        judge, label, _, _ = recheck_lists(lists, embedder)
        judge, label = np.array(judge), np.array(label)
        idx = rng.permutation(label.size)
        n = int(round(0.10 * label.size))
        lab, rest = idx[:n], idx[n:]
        full[path.stem] = classical_mean(label)
        ppi[path.stem] = ppi_mean(label[lab], judge[lab], judge[rest])
    assert len(full) == 6
    covered = [m for m in full if ppi[m].low <= full[m].mean <= ppi[m].high]
    assert len(covered) >= 5, {m: (full[m].mean, ppi[m].low, ppi[m].high) for m in full}
    for a in full:
        for b in full:
            if full[a].low > full[b].high:  # a above b, the all-label intervals apart
                assert ppi[a].mean > ppi[b].mean, (a, b)
