"""Open creativity with a live (scripted) target: the AidanBench protocol runs inside the graph."""

from __future__ import annotations

import asyncio

import pytest
from sgieval.core import RunConfig
from sgieval.graphs.evaluate import execute, make_runtime
from sgieval.tests.conftest import routed


def test_generation_protocol_through_graph(tmp_path):
    # the target repeats itself: answer 2 is identical to answer 1, so its embedding novelty is
    # 1 - cos(a, a) = 0 < 0.15 and generation stops; the judge rates coherence 80 (> 15)
    target = routed("scripted-repeater", [], default="<answer>Use a donor-acceptor copolymer.</answer>")
    judge = routed(
        "scripted-judge",
        [("similarity", "<similarity_score>100</similarity_score>")],
        default="<coherence_score>80</coherence_score>",
        role="judge",
    )
    cfg = RunConfig(
        run_id="g",
        request="Which model is the most creative in chemistry? 2 questions",
        out_dir=str(tmp_path),
        yes=True,
        bootstrap_resamples=999,
    )
    rt = make_runtime(cfg, targets=[target], judges=[judge])
    state = asyncio.run(execute(rt))
    assert len(state["selection"]["item_ids"]) == 2
    (resp, _) = rt.store.read("responses")
    recs = resp.metadata["records"]
    assert [r["coherence_score"] for r in recs] == [80, 80]
    assert recs[0]["stopping_condition"] is None and recs[0]["embedding_dissimilarity_score"] == 1.0
    assert recs[1]["embedding_dissimilarity_score"] < 1e-5
    assert recs[1]["stopping_condition"] == "embedding_dissimilarity_threshold"
    scores = {(s.item_id, s.metric): s.value for s in rt.store.read("scores")}
    for iid in state["selection"]["item_ids"]:
        assert scores[(iid, "aidan_accepted_answers")] == 1 and scores[(iid, "aidan_published_count")] == 2
        assert scores[(iid, "aidan_mean_coherence_per_item")] == 80
    assert scores[("*", "aidan_mean_coherence")] == 80  # pooled over the 2 accepted answers (D.15)
    report = (tmp_path / "g" / "report.md").read_text()
    assert "| 1 | scripted-repeater | 1.00 |" in report and "| judge | scripted-judge |" in report


@pytest.mark.slow
def test_long_answers_are_embedded_whole_and_the_report_says_how_many(tmp_path):
    # The repeated answer is longer than MiniLM's 256-token window (2 questions x 2 answers)
    long = " ".join(f"Step {k}: dope the copolymer backbone with acceptor unit number {k}." for k in range(40))
    target = routed("scripted-long", [], default=f"<answer>{long}</answer>")
    judge = routed("scripted-judge", [], default="<coherence_score>80</coherence_score>", role="judge")
    cfg = RunConfig(
        run_id="long",
        request="Which model is the most creative in chemistry? 2 questions",
        out_dir=str(tmp_path),
        yes=True,
        bootstrap_resamples=999,
    )
    rt = make_runtime(cfg, targets=[target], judges=[judge])
    state = asyncio.run(execute(rt))
    assert state["evaluated"]["long_texts_embedded"] == 4 and state["evaluated"]["texts_embedded"] == 4
    report = (tmp_path / "long" / "report.md").read_text()
    assert (
        "4 of the 4 texts embedded with MiniLM were longer than its 256-token window; each was embedded whole, "
        "in pieces of at most 250 word pieces whose vectors were averaged."
    ) in report
