"""CLI input validation and run lookup (new-user trial findings): bad option values are
rejected with one InputError line (exit 2, no run folder), `runs` survives a corrupt
config.json, `report`/`resume` accept the printed path forms, a run with no target model
is refused, and `resume --budget` continues a run stopped at its budget."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.core import RunConfig, RunStore
from sgieval.tests.conftest import FIXTURES

runner = CliRunner()
CHEM = "creative in chemistry"


def _ask(tmp_path, *opts):
    return runner.invoke(app, ["ask", CHEM, "--yes", "--out", str(tmp_path / "runs"), *opts])


def _assert_rejected(res, tmp_path, line):
    assert res.exit_code == 2, res.output
    assert f"error: {line}" in res.output
    assert "Traceback" not in res.output and "errors.pydantic.dev" not in res.output
    assert not (tmp_path / "runs").exists()  # rejected before the run folder is made


@pytest.mark.parametrize("k", ["0", "-3"])
def test_k_must_be_positive(tmp_path, k):
    _assert_rejected(
        _ask(tmp_path, "--k", k),
        tmp_path,
        f"--k: must be a positive integer (number of items to sample), got {k}. "
        "Fix: pass --k 1 or more, or leave --k out to evaluate every matching item",
    )


def test_max_concurrency_must_be_positive(tmp_path):
    _assert_rejected(
        _ask(tmp_path, "--max-concurrency", "0"),
        tmp_path,
        "--max-concurrency: must be a positive integer (model calls in flight), got 0. "
        "Fix: pass --max-concurrency 1 or more (default 16)",
    )


def test_negative_budget(tmp_path):
    _assert_rejected(
        _ask(tmp_path, "--budget", "-1"),
        tmp_path,
        "--budget: must be >= 0 USD, got -1.0. Fix: pass a non-negative amount in USD, "
        "or leave --budget out for no limit",
    )


def test_unknown_sandbox_and_tools(tmp_path):
    _assert_rejected(
        _ask(tmp_path, "--sandbox", "foo"),
        tmp_path,
        "--sandbox: unknown sandbox backend 'foo'. Fix: use one of auto, bubblewrap, bwrap, e2b, unsafe-local, local",
    )
    _assert_rejected(
        _ask(tmp_path, "--sandbox", "unsafe-local"),
        tmp_path,
        "--sandbox unsafe-local: the unsafe local backend runs model code without isolation. "
        "Fix: add --unsafe-local-exec to allow it explicitly",
    )
    _assert_rejected(
        _ask(tmp_path, "--tools", "foo"),
        tmp_path,
        "--tools: unknown tool(s) 'foo'. Fix: give a comma-separated list of search, pdf, python "
        "(e.g. --tools search,pdf)",
    )
    # one bad name in a comma-separated list is enough
    _assert_rejected(_ask(tmp_path, "--tools", "search,bar"), tmp_path, "--tools: unknown tool(s) 'bar'.")
    _assert_rejected(
        _ask(tmp_path, "--executor", "foo"), tmp_path, "--executor: unknown executor 'foo'. Fix: use one of local, ray"
    )


def test_runs_lists_a_corrupt_config_as_unreadable(tmp_path):
    RunStore(tmp_path / "a-good").write_config(RunConfig(run_id="a-good", request="q"))
    (tmp_path / "b-bad").mkdir()
    (tmp_path / "b-bad" / "config.json").write_text("{bad")
    res = runner.invoke(app, ["runs", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    # rich expands the tabs to spaces: compare with runs of whitespace folded to one space
    lines = [" ".join(line.split()) for line in res.output.splitlines()]
    started = lines[1].split()[1:3]  # the config file's time: no log, no time stamp in the run id
    assert lines == [
        "a-good incomplete (sgieval resume) responses=0 scores=0 'q'",
        f"started {' '.join(started)} UTC; benchmark unknown; target models: none; judge: none",
        "winner: no report; cost (USD): 0 (no model calls)",
        f"b-bad unreadable: {tmp_path / 'b-bad' / 'config.json'}: Invalid JSON: key must be a string at line 1 column 2",
    ]
    # resume/report of that run fail with the same reason, exit 2
    res = runner.invoke(app, ["resume", "b-bad", "--out", str(tmp_path)])
    assert res.exit_code == 2
    assert (
        f"error: {tmp_path / 'b-bad' / 'config.json'}: unreadable run config (Invalid JSON: key must be a string "
        "at line 1 column 2). Fix: restore the file, or start a new run with `sgieval ask`"
    ) in res.output


def test_report_and_resume_accept_the_printed_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["ask", CHEM, "--k", "1", "--yes"])
    assert res.exit_code == 0, res.output
    (run_dir,) = list((tmp_path / "runs").iterdir())
    printed = f"runs/{run_dir.name}/report.md"
    assert f"report: {printed}" in res.output
    report = (run_dir / "report.md").read_text()
    for form in (run_dir.name, f"runs/{run_dir.name}", f"runs/{run_dir.name}/", printed, str(run_dir)):
        (run_dir / "report.md").unlink()
        res = runner.invoke(app, ["report", form])
        assert res.exit_code == 0, (form, res.output)
        assert (run_dir / "report.md").read_text() == report
    res = runner.invoke(app, ["resume", printed])  # complete already: nothing to do, same report
    assert res.exit_code == 0 and f"report: {printed}" in res.output
    res = runner.invoke(app, ["report", "runs/nope"])
    assert res.exit_code == 2
    assert (
        "error: runs/nope: no such run. Fix: give a run id listed by `sgieval runs --out runs`, the run folder, "
        "or its report.md"
    ) in res.output


def test_no_target_models_is_refused(tmp_path, sciaidan_dir):
    data = tmp_path / "x" / "sciaidanbench"
    data.mkdir(parents=True)
    shutil.copy(sciaidan_dir / "questions.json", data)
    res = _ask(tmp_path, "--data-dir", str(tmp_path / "x"))
    _assert_rejected(
        res,
        tmp_path,
        f"--models: no target models were given and no stored responses were found in "
        f"{data / 'responses'}. Fix: pass --models replay:<name|file> or openai:<model> (comma-separated), "
        "or put stored responses in <data>/sciaidanbench/responses/",
    )


def test_resume_with_a_larger_budget_continues_a_budget_stopped_run(tmp_path, monkeypatch):
    from sgieval.bench.mock_openai import MockOpenAI

    monkeypatch.setenv("OPENAI_API_KEY", "test")
    data = tmp_path / "data" / "sfbench"
    data.mkdir(parents=True)
    shutil.copy(FIXTURES / "sfbench" / "claims.jsonl", data)  # 10 claims
    with MockOpenAI(replies=[json.dumps({"score": 0, "explanation": "- x"})]) as mock:
        res = runner.invoke(
            app,
            [
                "ask",
                "feasibility of claims",
                "-b",
                "sfbench",
                "--data-dir",
                str(tmp_path / "data"),
                "--yes",
                "--models",
                "openai:gpt-4o-mini",
                "--base-url",
                mock.url,
                "--budget",
                "0",
                "--out",
                str(tmp_path / "runs"),
                "--no-cache",
                "--max-concurrency",
                "1",
            ],
        )
        assert res.exit_code == 0, res.output
        (run_dir,) = list((tmp_path / "runs").iterdir())
        # budget 0: spent 0 >= 0 refuses the first call, so nothing was asked
        assert mock.stats()["requests"] == 0 and not (run_dir / "responses.jsonl").exists()
        assert "The run stopped at its budget" in (run_dir / "report.md").read_text()
        listing = runner.invoke(app, ["runs", "--out", str(tmp_path / "runs")]).output
        assert "stopped at its budget (sgieval resume <run> --budget USD)" in " ".join(listing.split())
        # resuming without a new budget says how to continue, and calls nothing
        res = runner.invoke(app, ["resume", str(run_dir)])
        assert res.exit_code == 0 and mock.stats()["requests"] == 0
        assert (
            f"this run stopped at its budget (0.0 USD); to evaluate the rest, pass a larger one: "
            f"`sgieval resume {run_dir} --budget <USD>`"
        ) in res.output
        res = runner.invoke(app, ["resume", str(run_dir / "report.md"), "--budget", "5"])
        assert res.exit_code == 0, res.output
        assert "continuing the run stopped at its budget with a budget of 5.0 USD" in res.output
        assert f"report: {run_dir / 'report.md'}\n" in res.output  # one line, never wrapped, for scripts
        # the 10 claims not reached are now asked, once each
        assert mock.stats()["requests"] == 10
    assert len((run_dir / "responses.jsonl").read_text().splitlines()) == 10
    assert json.loads((run_dir / "config.json").read_text())["budget_usd"] == 5.0
    report = (run_dir / "report.md").read_text()
    assert "The run stopped at its budget" not in report and "Budget 5.0 USD; spent" in report
    res = runner.invoke(app, ["resume", str(run_dir), "--budget", "-2"])
    assert res.exit_code == 2 and "error: --budget: must be >= 0 USD, got -2.0." in res.output
