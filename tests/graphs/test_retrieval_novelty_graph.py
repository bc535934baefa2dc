"""Issue 12 "Done when", third point: "How novel are these ideas compared with my papers?" on a JSONL benchmark
with --corpus and replayed ideas ranks by retrieval_novelty, offline, with the retrieved papers per item."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sgieval.agents.customisation import literature_novelty
from sgieval.cli import app
from sgieval.tests.metric_pool.test_retrieval_novelty import PAPERS


def test_literature_novelty_requests():
    assert literature_novelty("How novel are these ideas compared with my papers?")
    assert literature_novelty("Which model's ideas are most original against the literature?")
    assert literature_novelty("rank novelty relative to prior work")
    assert not literature_novelty("Which model writes the most novel ideas?")
    assert not literature_novelty("Compare the models against these papers' accuracy")  # no novelty asked


def test_ask_ranks_by_retrieval_novelty_with_the_retrieved_papers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "papers").mkdir()
    for name, text in PAPERS.items():
        (tmp_path / "papers" / name).write_text(text)
    rows = [{"id": "i1", "prompt": "Propose a research idea about water.", "task": "idea", "discipline": "materials"},
            {"id": "i2", "prompt": "Propose a research idea about cells.", "task": "idea", "discipline": "biology"}]
    (tmp_path / "ideas.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ideas = {"close": ["Graphene membranes filter seawater salt.", "Enzymes fold proteins."],
             "far": ["Enzymes could power tiny submarines.", "Graphene sails catch solar wind."]}
    for model, texts in ideas.items():
        (tmp_path / f"{model}.jsonl").write_text("".join(
            json.dumps({"item_id": f"jsonl:ideas/{r['id']}", "text": t}) + "\n" for r, t in zip(rows, texts)))
    res = CliRunner().invoke(app, ["ask", "How novel are these ideas compared with my papers?", "-b", "ideas.jsonl",
                                   "--corpus", "papers", "--models", "replay:close.jsonl,replay:far.jsonl", "--yes"])
    assert res.exit_code == 0, res.output
    report = next((tmp_path / "runs").glob("*/report.md")).read_text()
    assert "**replay:far** ranks first by retrieval_novelty on 2 items" in report
    assert "## Ranking by retrieval_novelty (scale 0-10, higher is better)" in report
    assert "## Retrieved works" in report
    close_row = next(line for line in report.splitlines() if line.startswith("| jsonl:ideas/i1 | replay:close |"))
    for title in ("Graphene filters", "Graphene desalination", "Salt membranes", "Membrane fouling"):
        assert title in close_row
    assert "(BM25)" in report and str(tmp_path / "papers") in report
