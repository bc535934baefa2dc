"""Retrieval novelty on "How novel are these ideas compared with my papers?" on a JSONL benchmark
with --corpus and replayed ideas ranks by retrieval_novelty, offline, with the retrieved papers per item."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from sgieval.metric_pool.registry import find as find_metric
from sgieval.tests.metric_pool.test_retrieval_novelty import PAPERS


def literature_novelty(request: str) -> bool:
    """Whether the request names the quality the registered retrieval_novelty metric measures."""
    return bool(find_metric(("*", "retrieval_novelty")).asked(request))


def test_literature_novelty_requests():
    assert literature_novelty("How novel are these ideas compared with my papers?")
    assert literature_novelty("Which model's ideas are most original against the literature?")
    assert literature_novelty("rank novelty relative to prior work")
    assert not literature_novelty("Which model writes the most novel ideas?")
    assert not literature_novelty("Compare the models against these papers' accuracy")  # no novelty asked


@pytest.mark.slow
def test_ask_ranks_by_retrieval_novelty_with_the_retrieved_papers(tmp_path):
    (tmp_path / "papers").mkdir()
    for name, text in PAPERS.items():
        (tmp_path / "papers" / name).write_text(text)
    rows = [
        {"id": "i1", "prompt": "Propose a research idea about water.", "task": "idea", "discipline": "materials"},
        {"id": "i2", "prompt": "Propose a research idea about cells.", "task": "idea", "discipline": "biology"},
    ]
    (tmp_path / "ideas.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ideas = {
        "close": ["Graphene membranes filter seawater salt.", "Enzymes fold proteins."],
        "far": ["Enzymes could power tiny submarines.", "Graphene sails catch solar wind."],
    }
    for model, texts in ideas.items():
        (tmp_path / f"{model}.jsonl").write_text(
            "".join(json.dumps({"item_id": f"jsonl:ideas/{r['id']}", "text": t}) + "\n" for r, t in zip(rows, texts))
        )
    # the real command, offline (SGIEVAL_NETWORK=offline: no web search is even tried)
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "sgieval.cli",
            "ask",
            "How novel are these ideas compared with my papers?",
            "-b",
            "ideas.jsonl",
            "--corpus",
            "papers",
            "--models",
            "replay:close.jsonl,replay:far.jsonl",
            "--yes",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        env={**os.environ, "SGIEVAL_NETWORK": "offline"},
    )
    assert res.returncode == 0, res.stderr[-3000:]
    report = next((tmp_path / "runs").glob("*/report.md")).read_text()
    assert "## Ranking by retrieval_novelty (scale 0-10, higher is better)" in report
    # every paper is ranked for each idea (MiniLM similarity fused with BM25), so each idea has its n = 4 nearest
    # papers, with MiniLM cosine similarities; S_inn = clip(10 (1 - mean), 0, 10) by hand from the listed ones:
    # close/i1 10 (1 - (0.919 + 0.854 + 0.655 + 0.485) / 4) = 2.7175 -> 2.72; close/i2 10 (1 - (0.877 + 0.447 +
    # 0.160 + 0.131) / 4) = 5.9625 -> 5.96; far/i1 10 (1 - (0.403 + 0.395 + 0.307 + 0.268) / 4) = 6.5675 -> 6.57;
    # far/i2 10 (1 - (0.452 + 0.426 + 0.104 + 0.053) / 4) = 7.4125 -> 7.41
    for row in (
        "| jsonl:ideas/i1 | replay:close | 2.72 | Graphene filters (0.919); Graphene desalination (0.854); Salt "
        "membranes (0.655); Membrane fouling (0.485) | Graphene membranes filter seawater salt. Propose a research "
        "idea about water. |",
        "| jsonl:ideas/i2 | replay:close | 5.96 | Protein folding (0.877); Enzyme kinetics (0.447); Salt membranes "
        "(0.160); Graphene desalination (0.131) | Enzymes fold proteins. Propose a research idea about cells. |",
        "| jsonl:ideas/i1 | replay:far | 6.57 | Enzyme kinetics (0.403); Protein folding (0.395); Membrane fouling "
        "(0.307); Salt membranes (0.268) | Enzymes could power tiny submarines. Propose a research idea about water. |",
        "| jsonl:ideas/i2 | replay:far | 7.41 | Graphene filters (0.452); Graphene desalination (0.426); Salt "
        "membranes (0.104); Membrane fouling (0.053) | Graphene sails catch solar wind. Propose a research idea about "
        "cells. |",
    ):
        assert row in report, row
    # ranking: far (6.5675 + 7.4125) / 2 = 6.99 over close (2.7175 + 5.9625) / 2 = 4.34
    assert "| 1 | replay:far | 6.99 |" in report and "| 2 | replay:close | 4.34 |" in report
    assert (
        "No model is established as first by retrieval_novelty on 2 items (whole catalog): replay:far leads with mean "
        "6.99 per item (95% CI 6.57 to 7.41), but the paired test does not separate it from replay:close "
        "(p = 0.5000)." in report
    )
    assert "(nearest by embedding similarity, fused with BM25)" in report and str(tmp_path / "papers") in report
