"""``sgieval ask ... --into RUN --judge J`` and ``--into RUN --metric M`` on a finished run, through the real graph,
the CLI and the openai client against the local mock server: every stored response is reused (no target call), an
added judge scores beside the run's judge (its scores name it, in added_judge_scores.jsonl; the run's scores and
ranking stay), an added metric scores only itself, and a second identical invocation calls and scores nothing.

The run: the 2 SGI-Bench idea-generation fixture items (tests/fixtures/sgi), targets ``openai:model-a`` and
``openai:model-b`` (the fixture replies of fixture-model-a / -b), judge ``openai:judge``
(:func:`tests.graphs.test_rigor_scripted.judge_text`: rubric criteria 8, 7, 8, ... for a reply over 600 characters,
else 3, 2, 3, ...; the longer hypothesis wins every pairwise dimension).  The added judge ``openai:judge2`` answers
the same, except that a rubric criterion it would give 8 gets 6 and one it would give 3 gets 5.  Per (target, item)
a judge makes 3 calls: 2 pairwise (order swapped) and 1 rigor rubric.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import sgieval
from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app
from sgieval.core import InputError, RunStore
from sgieval.models.context import current_call_context
from sgieval.tests.graphs.test_openai_server import Server, _text
from sgieval.tests.graphs.test_rigor_scripted import REQUEST, judge_text, sgi_data

runner = CliRunner()
A, B = "openai:model-a", "openai:model-b"


class Replies:
    """The mock server's replies (module docstring); ``models`` lists the model of every request, in order."""

    def __init__(self, data: Path):
        self.targets = Server(data)
        self.models: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict, index: int):
        with self.lock:
            self.models.append(body["model"])
        msgs = body["messages"]
        system = "\n".join(_text(m.get("content")) for m in msgs if m["role"] == "system")
        user = "\n".join(_text(m.get("content")) for m in msgs if m["role"] == "user")
        judging = 'against the rubric "' in system or "<<<HYPOTHESIS_A>>>" in user
        if not judging:
            return self.targets(body, index)  # the targets' fixture replies
        text = judge_text(system, user)
        if body["model"] == "judge2":
            text = text.replace('"score": 8', '"score": 6').replace('"score": 3', '"score": 5')
        return text

    def since(self, n: int) -> Counter:
        return Counter(self.models[n:])


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _section(report: dict, key: str) -> dict:
    return next(s for s in report["sections"] if s["key"] == key)


def _table(section: dict, name: str) -> list[list]:
    return next(b["rows"] for b in section["blocks"] if b.get("kind") == "table" and b.get("name") == name)


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A finished run ``A`` made on the mock server; yields (run folder, mock, replies, CLI --into prefix)."""
    data = sgi_data(tmp_path)
    replies = Replies(data)
    monkeypatch.setattr(current_call_context(), "use_cache", False)  # every call must reach the server
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with MockOpenAI(replies=replies) as mock:
        sgieval.evaluate(
            REQUEST,
            models=f"{A},{B}",
            judge="openai:judge",
            benchmark="sgi-bench",
            data_dir=str(data),
            out_dir=tmp_path / "runs",
            run_id="A",
            base_url=mock.url,
            bootstrap_resamples=999,
        )
        # 2 items x 2 targets: 4 target calls and 4 x 3 = 12 judge calls
        assert replies.since(0) == {"model-a": 2, "model-b": 2, "judge": 12}
        assert mock.stats()["served"] == 16
        into = ["ask", "--into", "A", "--out", str(tmp_path / "runs"), "--base-url", mock.url, "--yes"]
        yield tmp_path / "runs" / "A", mock, replies, into


@pytest.mark.slow
def test_into_adds_a_judge_beside_the_runs_judge_and_calls_no_target(served):
    run_dir, mock, replies, into = served
    scores_before = (run_dir / "scores.jsonl").read_bytes()
    responses_before = (run_dir / "responses.jsonl").read_bytes()
    report_before = json.loads((run_dir / "report.json").read_text())

    # the prompt shows the run's live models (billed to the user's key) and the user confirms them
    res = runner.invoke(app, [*into, "--judge", "openai:judge2"], input="y\n")
    assert res.exit_code == 0, res.output
    # only the added judge was called: 4 (target, item) pairs x 3 calls, no target call, no call of the run's judge
    assert replies.since(16) == {"judge2": 12}
    assert mock.stats()["served"] == 28
    ask, added = _rows(run_dir / "invocations.jsonl")
    assert added["kind"] == "into" and added["options"]["added_judges"] == ["openai:judge2"]
    assert added["options"]["judges"] == ["openai:judge"]
    # the run's records are untouched (byte for byte); the added judge's 10 judged metrics x 2 items x 2 targets are apart
    assert (run_dir / "scores.jsonl").read_bytes() == scores_before
    assert (run_dir / "responses.jsonl").read_bytes() == responses_before
    rows = _rows(run_dir / "added_judge_scores.jsonl")
    assert Counter((r["model"], r["judge"], r["invocation"]) for r in rows) == {
        (A, "openai:judge2", added["id"]): 20,
        (B, "openai:judge2", added["id"]): 20,
    }
    assert not {r["metric"] for r in rows} & {"idea_novelty_obj", "idea_feasibility_obj"}  # objective: not judged
    # rigor by the added judge: 10 x mean(6, 7, 6, 7, 6, 7) = 65 for model-a, 10 x mean(5, 2, 5, 2, 5, 2) = 35 for
    # model-b; by the run's judge still 75 and 25
    store = RunStore(run_dir)
    by_j2 = {(s.model, s.item_id): s.value for s in store.read("added_judge_scores") if s.metric == "rigor"}
    by_j1 = {(s.model, s.item_id): s.value for s in store.read("scores") if s.metric == "rigor"}
    assert sorted(by_j2.values()) == [35.0, 35.0, 65.0, 65.0] and sorted(by_j1.values()) == [25.0, 25.0, 75.0, 75.0]

    report = json.loads((run_dir / "report.json").read_text())
    # the ranking stays on the run's judge: the same rows as before the judge was added
    assert report["ranking"]["rows"] == report_before["ranking"]["rows"]
    assert [(r["model"], r["mean"]) for r in report["ranking"]["rows"]] == [(A, "75.00"), (B, "25.00")]
    section = _section(report, "added_judges")
    assert [r for r in _table(section, "added_judges") if r[0] == "rigor (ranking)"] == [
        ["rigor (ranking)", "0-100", A, "75.00 (2)", "65.00 (2)"],
        ["rigor (ranking)", "0-100", B, "25.00 (2)", "35.00 (2)"],
    ]
    assert _section(report, "added_judges")["blocks"][1]["headers"][3:] == [
        "openai:judge (run's judge) mean (n)",
        "openai:judge2 mean (n)",
    ]
    assert "keep the run's own judge (openai:judge)" in section["blocks"][0]["text"]
    # judge reliability compares the two judges on rigor: interval alpha with D_o = 100 (each unit's two values 10
    # apart) and D_e = 2 x 8 x 3400 / (8 x 7) = 971.4 (the 8 values 75, 75, 25, 25, 65, 65, 35, 35 around 50):
    # 1 - 100 / 971.4 = 0.897; without either judge model-a stays first
    rel = _section(report, "reliability")
    heads = [b["text"] for b in rel["blocks"] if b["kind"] == "heading"]
    i = heads.index("rigor")
    agreement = [b for b in rel["blocks"] if b.get("name") == "agreement"][i]["rows"]
    assert agreement[0][2:5] == ["openai:judge, openai:judge2", "4", "0.90"]
    loo = [b for b in rel["blocks"] if b.get("name") == "leave_one_out"][i]["rows"]
    assert loo == [
        ["openai:judge", f"{A} > {B}", "no", "no"],
        ["openai:judge2", f"{A} > {B}", "no", "no"],
    ]
    md = (run_dir / "report.md").read_text()
    assert (
        "| judge | openai:judge (the run's judge: the ranking uses its scores); added by ask --into: openai:judge2"
        in md
    )
    assert f"(ask --into, invocation {added['id']}): judge openai:judge2 (40 scores)" in md
    assert f"openai:judge2: {mock.url}" in md  # the model servers line names the added judge's server
    assert (
        "openai:judge2 was added after the run finished (ask --into) and scored beside the run's judge "
        "(openai:judge); the ranking uses openai:judge's scores (see Added judges)."
    ) in md

    # the runs index names the added judge beside the run's, and what the --into added
    res = runner.invoke(app, ["runs", "--out", str(run_dir.parent), "--json"])
    (entry,) = json.loads(res.output)
    assert (entry["judges"], entry["added_judges"]) == (["openai:judge"], ["openai:judge2"])
    assert entry["added"][0]["judges"] == ["openai:judge2"] and entry["added"][0]["models"] == []
    res = runner.invoke(app, ["runs", "--out", str(run_dir.parent)], terminal_width=400)
    when = added["time"].replace("T", " ")[:16]
    assert f"openai:judge (+ openai:judge2 added by ask --into at {when} UTC)" in res.output

    # a re-rendered report (no model call) is the same report
    (run_dir / "report.md").unlink()
    res = runner.invoke(app, ["report", str(run_dir)])
    assert res.exit_code == 0, res.output
    assert (run_dir / "report.md").read_text() == md and mock.stats()["served"] == 28

    loaded = sgieval.load_run(run_dir)  # the Python API keeps them apart too
    assert len(loaded.added_judge_scores) == 40 and {s.judge for s in loaded.added_judge_scores} == {"openai:judge2"}
    assert len(loaded.scores) == 56 and "openai:judge2" not in {s.judge for s in loaded.scores}

    # the same judge again: nothing to add, nothing called, nothing recorded
    res = runner.invoke(app, [*into, "--judge", "openai:judge2"], input="y\n")
    assert res.exit_code == 2 and "nothing to add" in res.output
    # a resume of the grown run calls and scores nothing either
    res = runner.invoke(app, ["resume", str(run_dir), "--base-url", mock.url, "--yes"], input="y\n")
    assert res.exit_code == 0, res.output
    assert mock.stats()["served"] == 28
    assert len(_rows(run_dir / "added_judge_scores.jsonl")) == 40
    assert (run_dir / "scores.jsonl").read_bytes() == scores_before


@pytest.mark.slow
def test_into_adds_a_metric_scored_by_every_judge_of_the_run_on_the_stored_responses(served):
    run_dir, mock, replies, into = served
    res = runner.invoke(app, [*into, "--judge", "openai:judge2"], input="y\n")
    assert res.exit_code == 0, res.output
    scores_before = (run_dir / "scores.jsonl").read_text().splitlines()
    # a saved rubric the run did not score: one rubric call per (target, item) by the run's judge and by the
    # added one, and no target call
    res = runner.invoke(app, [*into, "--metric", "feasibility"], input="y\n")
    assert res.exit_code == 0, res.output
    assert replies.since(28) == {"judge": 4, "judge2": 4}
    assert mock.stats()["served"] == 36
    third = _rows(run_dir / "invocations.jsonl")[2]
    assert third["kind"] == "into" and third["options"]["metric"] == "feasibility"
    lines = (run_dir / "scores.jsonl").read_text().splitlines()
    assert lines[: len(scores_before)] == scores_before  # the run's scores are an untouched prefix
    new = [json.loads(x) for x in lines[len(scores_before) :]]
    assert Counter((r["metric"], r["model"], r["judge"], r["invocation"]) for r in new) == {
        ("feasibility", A, "openai:judge", third["id"]): 2,
        ("feasibility", B, "openai:judge", third["id"]): 2,
    }
    added = [r for r in _rows(run_dir / "added_judge_scores.jsonl") if r["invocation"] == third["id"]]
    assert Counter((r["metric"], r["model"], r["judge"]) for r in added) == {
        ("feasibility", A, "openai:judge2"): 2,
        ("feasibility", B, "openai:judge2"): 2,
    }
    report = json.loads((run_dir / "report.json").read_text())
    assert report["ranking"]["metric"] == "feasibility"
    md = (run_dir / "report.md").read_text()
    assert (
        f"(ask --into, invocation {third['id']}): judge openai:judge2 (4 scores), metric feasibility (4 scores)" in md
    )


def test_a_judge_that_is_a_target_does_not_score_its_own_responses(served):
    run_dir, mock, replies, into = served
    res = runner.invoke(app, [*into, "--judge", A], input="y\n")
    assert res.exit_code == 0, res.output
    # the self-judge guard: model-a judges model-b's 2 responses (3 calls each) and not its own
    assert replies.since(16) == {"model-a": 6}
    rows = _rows(run_dir / "added_judge_scores.jsonl")
    assert Counter((r["model"], r["status"]) for r in rows) == {(A, "not_run"): 20, (B, "ok"): 20}
    assert all(r["judge"] == A for r in rows)
    own = next(r for r in rows if r["model"] == A)
    assert "are the target model openai:model-a" in own["error"]
    section = _section(json.loads((run_dir / "report.json").read_text()), "added_judges")
    texts = " ".join(b["text"] for b in section["blocks"] if b["kind"] == "text")
    assert "openai:model-a made no value for 20 score(s) (20 not_run)" in texts


def test_into_with_a_judge_refuses_other_items_before_anything_is_written(served):
    run_dir, mock, replies, into = served
    config = (run_dir / "config.json").read_text()
    with pytest.raises(InputError, match="chosen with k None; this invocation gives 1"):
        sgieval.evaluate(judge="openai:judge2", into=run_dir, k=1, base_url=mock.url)
    with pytest.raises(
        InputError, match=r"chosen with benchmark \['sgi-bench'\]; this invocation gives \['sciaidanbench'\]"
    ):
        sgieval.evaluate(judge="openai:judge2", into=run_dir, benchmark="sciaidanbench", base_url=mock.url)
    with pytest.raises(InputError, match="nothing to add"):
        sgieval.evaluate(judge="openai:judge", into=run_dir, base_url=mock.url)  # the run's own judge
    assert mock.stats()["served"] == 16
    assert (run_dir / "config.json").read_text() == config
    assert len(_rows(run_dir / "invocations.jsonl")) == 1
    assert not (run_dir / "added_judge_scores.jsonl").exists()


def test_a_judge_added_to_a_run_without_one_scores_apart_and_the_ranking_stays(tmp_path, monkeypatch):
    data = sgi_data(tmp_path)
    replies = Replies(data)
    monkeypatch.setattr(current_call_context(), "use_cache", False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with MockOpenAI(replies=replies) as mock:
        first = sgieval.evaluate(
            REQUEST,
            models=f"{A},{B}",
            metric="idea_effectiveness_obj",  # objective: the run can rank without a judge
            benchmark="sgi-bench",
            data_dir=str(data),
            out_dir=tmp_path / "runs",
            run_id="A",
            base_url=mock.url,
            bootstrap_resamples=999,
        )
        assert replies.since(0) == {"model-a": 2, "model-b": 2}
        rigor = [s for s in first.scores if s.metric == "rigor"]
        assert [s.status for s in rigor] == ["not_run"] * 4
        grown = sgieval.evaluate(judge="openai:judge2", into=first.run_dir, base_url=mock.url, bootstrap_resamples=999)
        assert replies.since(4) == {"judge2": 12}
    # the run's not-run records stay (never overwritten); the added judge's rigor is beside them
    assert [s.status for s in grown.scores if s.metric == "rigor"] == ["not_run"] * 4
    assert sorted(s.value for s in grown.added_judge_scores if s.metric == "rigor") == [35.0, 35.0, 65.0, 65.0]
    report = json.loads((first.run_dir / "report.json").read_text())
    assert report["ranking"]["metric"] == "idea_effectiveness_obj"
    section = _section(report, "added_judges")
    assert "The run had no judge of its own: its judge metrics stay not run" in section["blocks"][0]["text"]
    assert ["rigor", "0-100", A, "n/a (0)", "65.00 (2)"] in _table(section, "added_judges")


def test_an_added_judge_stopped_by_the_budget_is_finished_by_resume_without_scoring_twice(served):
    run_dir, mock, replies, into = served
    # 1 USD per 1M tokens: each judge call is ~800 tokens, so the 4th call of the added judge finds the 0.002 USD
    # budget spent (one call at a time: max concurrency 1) and is refused
    prices = [x for m in (A, B, "openai:judge", "openai:judge2") for x in ("--price", f"{m}=1,1")]
    args = [*into, "--judge", "openai:judge2", "--budget", "0.002", *prices, "--max-concurrency", "1"]
    res = runner.invoke(app, args, input="y\n")
    assert res.exit_code == 0, res.output
    assert replies.since(16) == {"judge2": 3}  # the first (target, item) pair's 3 calls
    assert len(_rows(run_dir / "added_judge_scores.jsonl")) == 10
    report = (run_dir / "report.md").read_text()
    assert "The run stopped at its budget before every item was evaluated" in report
    res = runner.invoke(app, ["resume", str(run_dir), "--budget", "10", "--base-url", mock.url, "--yes"], input="y\n")
    assert res.exit_code == 0, res.output
    # the other 3 pairs' 9 calls, and nothing of the first pair again; still no target call
    assert replies.since(16) == {"judge2": 12}
    rows = _rows(run_dir / "added_judge_scores.jsonl")
    assert len(rows) == 40 and len({(r["item_id"], r["model"], r["metric"], r["judge"]) for r in rows}) == 40


def test_one_into_adds_a_target_and_a_judge(served):
    run_dir, mock, replies, into = served
    res = runner.invoke(app, [*into, "--models", "openai:model-c", "--judge", "openai:judge2"], input="y\n")
    assert res.exit_code == 0, res.output
    # the new target answers its 2 items; the run's judge scores only those 2 responses (3 calls each); the added
    # judge scores all 3 targets' 6 responses (3 calls each)
    assert replies.since(16) == {"model-c": 2, "judge": 6, "judge2": 18}
    (_, added) = _rows(run_dir / "invocations.jsonl")
    rows = _rows(run_dir / "added_judge_scores.jsonl")
    assert Counter(r["model"] for r in rows) == {A: 20, B: 20, "openai:model-c": 20}
    assert {r["invocation"] for r in rows} == {added["id"]}
    scores = _rows(run_dir / "scores.jsonl")
    assert Counter((r["model"], r["judge"]) for r in scores if r["invocation"] == added["id"]) == {
        ("openai:model-c", "objective"): 8,
        ("openai:model-c", "openai:judge"): 20,
    }


def test_a_dry_run_of_an_added_judge_estimates_its_calls_and_adds_nothing(served):
    run_dir, mock, replies, into = served
    config = (run_dir / "config.json").read_text()
    est = sgieval.evaluate(judge="openai:judge2", into=run_dir, base_url=mock.url, dry_run=True).estimate
    # the added judge's pass: 4 (target, item) pairs x 3 calls
    assert [r["calls"] for r in est["rows"] if r["model"] == "openai:judge2" and r["role"] == "judge"] == [12]
    assert [(r["model"], r["role"]) for r in est["rows"]] == [("openai:judge2", "judge")]  # the run's: all done
    assert any(n.startswith("ask --into: the 4 responses and 56 scores the run holds are reused") for n in est["notes"])
    assert mock.stats()["served"] == 16
    assert (run_dir / "config.json").read_text() == config  # the judge is not recorded as added
    assert [r["kind"] for r in _rows(run_dir / "invocations.jsonl")] == ["ask"]
    assert not (run_dir / "added_judge_scores.jsonl").exists()
    # so the real invocation adds it
    grown = sgieval.evaluate(judge="openai:judge2", into=run_dir, base_url=mock.url, bootstrap_resamples=999)
    assert replies.since(16) == {"judge2": 12} and len(grown.added_judge_scores) == 40
