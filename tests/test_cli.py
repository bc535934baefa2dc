"""The sgieval command through typer's runner: the main job and every bad-input case."""

from __future__ import annotations

import json
import shutil

from typer.testing import CliRunner

from sgieval.cli import app

runner = CliRunner()
CHEM = "Which model is the most creative in chemistry?"


def test_ask_writes_report_and_runs_lists_it(tmp_path):
    res = runner.invoke(app, ["ask", CHEM, "--yes", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    report = (run_dir / "report.md").read_text()
    assert "| 1 | replay:o1-mini | 11.84 |" in report and "| 296 | 25 | 0 |" in report
    listing = runner.invoke(app, ["runs", "--out", str(tmp_path)])
    assert run_dir.name[:20] in listing.output and "complete" in listing.output
    # re-rendering from records gives the same report
    (run_dir / "report.md").unlink()
    again = runner.invoke(app, ["report", run_dir.name, "--out", str(tmp_path)])
    assert again.exit_code == 0 and (run_dir / "report.md").read_text() == report


def test_confirmation_prompt_yes_and_no(tmp_path):
    yes = runner.invoke(app, ["ask", CHEM, "--k", "3", "--out", str(tmp_path / "a")], input="y\n")
    assert yes.exit_code == 0, yes.output
    assert "ranking by: aidan_accepted_answers" in yes.output
    no = runner.invoke(app, ["ask", CHEM, "--k", "3", "--out", str(tmp_path / "b")], input="n\n")
    assert no.exit_code == 3 and "cancelled at the metric confirmation" in no.output
    assert "no run folder was kept" in no.output
    # nothing was evaluated: no run folder is left for `runs` to list as resumable
    assert not (tmp_path / "b").exists() or list((tmp_path / "b").iterdir()) == []
    assert "no runs in" in runner.invoke(app, ["runs", "--out", str(tmp_path / "b")]).output


def test_catalog_counts():
    res = runner.invoke(app, ["catalog", "--json"])
    assert res.exit_code == 0
    data = json.loads(res.output)
    assert data["items"] == 155 and data["facets"]["discipline"]["Chemistry"] == 25
    assert "sgi-bench" in data["unavailable"]


def test_missing_data_folder(tmp_path):
    res = runner.invoke(app, ["ask", CHEM, "--yes", "--data-dir", str(tmp_path / "nope"), "--out", str(tmp_path)])
    assert res.exit_code == 2
    assert f"--data-dir {tmp_path / 'nope'}: folder does not exist" in res.output
    assert "sgieval data pull" in res.output
    assert not any(tmp_path.iterdir())


def _copy_data(sciaidan_dir, tmp_path):
    dest = tmp_path / "data" / "sciaidanbench"
    shutil.copytree(sciaidan_dir, dest)
    return dest


def test_malformed_responses_file(tmp_path, sciaidan_dir):
    dest = _copy_data(sciaidan_dir, tmp_path)
    bad = dest / "responses" / "phi4_latest.json"
    bad.chmod(0o644)
    bad.write_text('{"domains": {"Chemistry": {"models": {"phi4": {"0.7": {"Q": [{"answer_num": 1}]}}}}}}')
    res = runner.invoke(
        app, ["ask", CHEM, "--yes", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "runs")]
    )
    assert res.exit_code == 2
    assert str(bad) in res.output and "lacks field 'answer'" in res.output
    bad.write_text("{broken")
    res = runner.invoke(
        app, ["ask", CHEM, "--yes", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "runs")]
    )
    assert res.exit_code == 2 and "invalid JSON at line 1" in res.output
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").glob("*/report.md"))


def test_unknown_model_string(tmp_path):
    res = runner.invoke(app, ["ask", CHEM, "--yes", "--models", "gpt5", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "gpt5: unknown model string" in res.output
    res = runner.invoke(app, ["ask", CHEM, "--yes", "--models", "replay:nobody", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "no stored responses named 'nobody'" in res.output
    assert not any(tmp_path.iterdir())


def test_request_that_selects_nothing(tmp_path):
    res = runner.invoke(app, ["ask", "most creative in mathematics", "--yes", "--out", str(tmp_path)])
    assert res.exit_code == 2
    assert "the request selects no items (discipline in ['mathematics']" in res.output
    assert not any(tmp_path.iterdir())  # no half-written run


def test_data_pull_offline_fails_fast(sciaidan_dir):
    # the data is here: pulling it again is a no-op, with no network
    res = runner.invoke(app, ["data", "pull", "sciaidanbench"], env={"SGIEVAL_NETWORK": "offline"})
    assert res.exit_code == 0 and f"already present in {sciaidan_dir}" in res.output
    res = runner.invoke(app, ["data", "pull", "sciaidanbench", "--force"], env={"SGIEVAL_NETWORK": "offline"})
    assert res.exit_code == 2 and "cannot reach codeload.github.com" in res.output
