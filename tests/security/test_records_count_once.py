"""Each record counts once: on read, a repeated (item, model, metric) record that is identical counts once; two
that differ are an error naming both lines.  The report and the export count the same records.  Nothing is
written outside the run folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app
from sgieval.core import InputError, RunStore
from sgieval.tests.security.run_folders import jsonl_lines, one_error_line, snapshot

runner = CliRunner()


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-000000000000000000000")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SGIEVAL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def wrong_run(tmp_path) -> Path:
    """A finished run of 10 items whose replies are all wrong (exact match 0 on each), then one right answer
    planted as a second score line of item q0."""
    p = tmp_path / "bench" / "sums.jsonl"
    p.parent.mkdir(parents=True)
    p.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "prompt": f"What is {i} + {i}?", "reference": str(2 * i)}) + "\n"
            for i in range(10)
        )
    )
    out = tmp_path / "runs"
    with MockOpenAI(replies=lambda body, i: "no idea") as mock:
        res = runner.invoke(
            app,
            ["ask", "", "-b", str(p), "-m", "openai:gpt-4o-mini", "--base-url", mock.url, "--tools", "", "--yes"]
            + ["--out", str(out)],
        )
        assert res.exit_code == 0, res.output
    (run,) = out.iterdir()
    return run


def em_lines(run: Path) -> list[tuple[int, dict]]:
    rows = [(n, json.loads(x)) for n, x in enumerate((run / "scores.jsonl").read_text().split("\n"), 1) if x.strip()]
    return [(n, r) for n, r in rows if r["item_id"] != "*" and r["metric"] == "exact_match"]


def ranking_values(run: Path) -> dict:
    (v,) = json.loads((run / "report.json").read_text())["ranking"]["values"]
    return v


def test_a_duplicated_score_line_counts_once_in_the_report_and_the_export(tmp_path, wrong_run):
    run = wrong_run
    em = em_lines(run)
    assert len(em) == 10 and {r["value"] for _, r in em} == {0.0}
    assert ranking_values(run)["n"] == 10 and ranking_values(run)["mean"] == 0.0
    # the finding: the same score line twice made 11 items of 10
    lines = (run / "scores.jsonl").read_text().split("\n")
    dup = lines[em[3][0] - 1]
    (run / "scores.jsonl").write_text("\n".join(lines[:-1] + [dup, ""]))
    before = snapshot(tmp_path, skip=run)
    res = runner.invoke(app, ["report", str(run)])
    assert res.exit_code == 0, res.output
    assert ranking_values(run)["n"] == 10 and ranking_values(run)["mean"] == 0.0
    assert "| 1 | openai:gpt-4o-mini | 0.00 |" in (run / "report.md").read_text()
    res = runner.invoke(app, ["export", str(run), "-f", "jsonl"])
    assert res.exit_code == 0, res.output
    exported = [r for r in jsonl_lines(run / "export" / "scores.jsonl") if r["metric"] == "exact_match"]
    assert len(exported) == 10 and len({r["item_id"] for r in exported}) == 10
    store = RunStore(run)
    assert len([s for s in store.read("scores") if s.metric == "exact_match"]) == 10
    n_dup = len((run / "scores.jsonl").read_text().split("\n")) - 1
    assert store.problems == [
        f"{run / 'scores.jsonl'} line {n_dup}: repeats line {em[3][0]} (the same Score record); counted once"
    ]
    store.close()
    assert snapshot(tmp_path, skip=run) == before


def test_two_different_records_of_one_key_name_both_lines(tmp_path, wrong_run):
    # variant: the repeated line differs (a value moved from 0 to 1: the mean would move 0.00 -> 0.09)
    run = wrong_run
    em = em_lines(run)
    first_n, first = em[0]
    changed = {**first, "value": 1.0, "rationale": "right after all"}
    with (run / "scores.jsonl").open("a") as f:
        f.write(json.dumps(changed) + "\n")
    n = len((run / "scores.jsonl").read_text().split("\n")) - 1
    before = snapshot(tmp_path, skip=run)
    expected = (
        f"error: {run / 'scores.jsonl'}: lines {first_n} and {n} hold two different Score records for item_id "
        f"{first['item_id']!r}, model 'openai:gpt-4o-mini', metric 'exact_match'. Fix: keep the right one of the "
        "two lines and delete the other, then retry"
    )
    for cmd in (["report", str(run)], ["export", str(run), "-f", "csv"], ["view", str(run)]):
        assert one_error_line(runner.invoke(app, cmd)) == expected, cmd
    from sgieval import load_run

    with pytest.raises(InputError, match=f"lines {first_n} and {n} hold two different Score records"):
        load_run(run)
    assert snapshot(tmp_path, skip=run) == before


def test_a_duplicated_response_line_counts_once_and_resume_asks_nothing(tmp_path, wrong_run):
    # variant: a response line repeated (a file concatenated twice, a copy merged by hand)
    run = wrong_run
    text = (run / "responses.jsonl").read_text()
    (run / "responses.jsonl").write_text(text + text.split("\n")[0] + "\n")
    store = RunStore(run)
    assert len(store.read("responses")) == 10
    store.close()
    lines = (run / "responses.jsonl").read_text()
    res = runner.invoke(app, ["resume", str(run), "--yes"])  # nothing left to ask: no call, nothing appended
    assert res.exit_code == 0, res.output
    assert (run / "responses.jsonl").read_text() == lines
    assert ranking_values(run)["n"] == 10
