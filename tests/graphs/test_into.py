"""``sgieval ask ... --into RUN``: add target models (or a ranking metric) to a finished run (judges:
tests/graphs/test_into_judge.py), reusing every record
already there, with each record naming the invocation that made it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import sgieval
from sgieval.cli import app
from sgieval.core import InputError, RunStore

CHEM = "Which model is the most creative in chemistry?"
runner = CliRunner()


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _per_invocation(run_dir: Path, name: str) -> Counter:
    return Counter((r["model"], r.get("invocation")) for r in _rows(run_dir / f"{name}.jsonl"))


def test_into_adds_a_target_and_reuses_every_record(tmp_path):
    first = sgieval.evaluate(
        CHEM, models="replay:o1-mini,replay:phi4", out_dir=tmp_path, run_id="A", bootstrap_resamples=999
    )
    run_dir = first.run_dir
    scores_before = (run_dir / "scores.jsonl").read_text().splitlines()
    responses_before = (run_dir / "responses.jsonl").read_text().splitlines()
    (ask,) = _rows(run_dir / "invocations.jsonl")
    assert ask["kind"] == "ask" and ask["options"]["models"] == ["replay:o1-mini", "replay:phi4"]

    res = runner.invoke(app, ["ask", "--models", "replay:openai/4o", "--into", "A", "--out", str(tmp_path), "--yes"])
    assert res.exit_code == 0, res.output
    ask_again, into = _rows(run_dir / "invocations.jsonl")
    assert ask_again == ask and into["kind"] == "into" and into["id"] != ask["id"]
    assert into["options"]["models"] == ["replay:o1-mini", "replay:phi4", "replay:openai/4o"]
    assert into["time"].endswith("+00:00")

    # nothing the run had was made again: its lines are an untouched prefix, and every record of o1-mini and
    # phi4 comes from the first invocation; 4o's 25 responses and 6 x 25 + 4 scores from the second
    assert (run_dir / "responses.jsonl").read_text().splitlines()[: len(responses_before)] == responses_before
    assert (run_dir / "scores.jsonl").read_text().splitlines()[: len(scores_before)] == scores_before
    assert _per_invocation(run_dir, "responses") == {
        ("replay:o1-mini", ask["id"]): 25,
        ("replay:phi4:latest", ask["id"]): 25,
        ("replay:openai/4o", into["id"]): 25,
    }
    assert _per_invocation(run_dir, "scores") == {
        ("replay:o1-mini", ask["id"]): 154,
        ("replay:phi4:latest", ask["id"]): 154,
        ("replay:openai/4o", into["id"]): 154,
    }

    # the report now ranks the three models (accepted answers on the 25 chemistry questions: 296, 274, 200)
    report = json.loads((run_dir / "report.json").read_text())
    rows = report["ranking"]["rows"]
    assert [(r["model"], r["total"]) for r in rows] == [
        ("replay:o1-mini", "296"),
        ("replay:openai/4o", "274"),
        ("replay:phi4:latest", "200"),
    ]
    md = (run_dir / "report.md").read_text()
    assert f"ask --into, invocation {into['id']}): replay:openai/4o" in md

    # 4o's figures equal those of a fresh run of 4o alone
    fresh = sgieval.evaluate(CHEM, models="replay:openai/4o", out_dir=tmp_path, run_id="fresh", bootstrap_resamples=999)
    mine = {(s.item_id, s.metric): (s.value, s.status) for s in RunStore(run_dir).read("scores") if "4o" in s.model}
    theirs = {(s.item_id, s.metric): (s.value, s.status) for s in fresh.scores}
    assert mine == theirs and len(mine) == 154
    fresh_rows = json.loads((fresh.run_dir / "report.json").read_text())["ranking"]["rows"]
    assert {k: v for k, v in fresh_rows[0].items() if k != "rank"} == {k: v for k, v in rows[1].items() if k != "rank"}

    # a resume of the grown run recomputes nothing (the second invocation's records stay the only ones)
    res = runner.invoke(app, ["resume", "A", "--out", str(tmp_path), "--yes"])
    assert res.exit_code == 0, res.output
    assert sum(_per_invocation(run_dir, "responses").values()) == 75


def test_into_refuses_what_would_change_the_runs_items_or_add_nothing(tmp_path):
    sgieval.evaluate(CHEM, models="replay:o1-mini", out_dir=tmp_path, run_id="A", k=3, bootstrap_resamples=99)
    with pytest.raises(InputError, match="chosen with k 3; this invocation gives 5") as e:
        sgieval.evaluate(models="replay:phi4", into=tmp_path / "A", k=5)
    assert "leave out" in e.value.fix
    with pytest.raises(InputError, match="nothing to add"):
        sgieval.evaluate(models="replay:o1-mini", into=tmp_path / "A")
    with pytest.raises(InputError, match="no such run"):
        sgieval.evaluate(models="replay:phi4", into=tmp_path / "nope")
    # the chemistry run's metrics are all objective: a judge added to it would have nothing to score
    config = (tmp_path / "A" / "config.json").read_text()
    with pytest.raises(InputError, match="the run has no judge or rubric metric for a judge to score") as e:
        sgieval.evaluate(judge="openai:gpt-4.1", into=tmp_path / "A", base_url="http://127.0.0.1:9/v1")
    assert "--metric" in e.value.fix
    assert (tmp_path / "A" / "config.json").read_text() == config
    assert not (tmp_path / "A" / "added_judge_scores.jsonl").exists()
    # the run folder is unchanged by the refused invocations: one invocation, three items, one model
    assert len(_rows(tmp_path / "A" / "invocations.jsonl")) == 1
    assert {r["model"] for r in _rows(tmp_path / "A" / "responses.jsonl")} == {"replay:o1-mini"}

    # a ranking metric the run already scored: the report ranks by it, and no record is made
    scores = (tmp_path / "A" / "scores.jsonl").read_text()
    sgieval.evaluate(metric="aidan_mean_novelty_per_item", into=tmp_path / "A", bootstrap_resamples=99)
    assert (tmp_path / "A" / "scores.jsonl").read_text() == scores
    assert (
        json.loads((tmp_path / "A" / "report.json").read_text())["ranking"]["metric"] == "aidan_mean_novelty_per_item"
    )
    assert [r["kind"] for r in _rows(tmp_path / "A" / "invocations.jsonl")] == ["ask", "into"]


def test_into_through_the_api_and_records_without_invocation_stay_readable(tmp_path):
    sgieval.evaluate(CHEM, models="replay:o1-mini", out_dir=tmp_path, run_id="A", k=3, bootstrap_resamples=99)
    run_dir = tmp_path / "A"
    # a run folder written before invocations were kept: no invocation field, no invocations.jsonl
    for name in ("responses", "scores"):
        rows = _rows(run_dir / f"{name}.jsonl")
        (run_dir / f"{name}.jsonl").write_text(
            "".join(json.dumps({k: v for k, v in r.items() if k != "invocation"}) + "\n" for r in rows)
        )
    (run_dir / "invocations.jsonl").unlink()
    grown = sgieval.evaluate(models="replay:phi4", into=str(run_dir), bootstrap_resamples=99)
    assert grown.run_dir == run_dir
    (into,) = _rows(run_dir / "invocations.jsonl")
    assert into["kind"] == "into" and into["argv"] is None
    assert _per_invocation(run_dir, "responses") == {("replay:o1-mini", None): 3, ("replay:phi4:latest", into["id"]): 3}
    assert {r.model for r in grown.responses} == {"replay:o1-mini", "replay:phi4:latest"}
