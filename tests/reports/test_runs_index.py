"""The runs index (`sgieval runs`, `--json`, the viewer's home page) on real runs of the stored SciAidanBench answers,
and run folders that cannot be read listed with their problem."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

import sgieval
from sgieval.cli import app
from sgieval.tests.served import serve_viewer

runner = CliRunner()
CHEM = "Which model is the most creative in chemistry?"


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    sgieval.evaluate(CHEM, models="replay:o1-mini,replay:phi4", out_dir=out, run_id="two", bootstrap_resamples=999)
    return out


def _json(out: Path) -> list[dict]:
    res = runner.invoke(app, ["runs", "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_runs_json_gives_date_request_items_models_judge_winner_status_cost(runs_dir):
    (e,) = _json(runs_dir)
    report = json.loads((runs_dir / "two" / "report.json").read_text())
    first_log = json.loads((runs_dir / "two" / "log.jsonl").read_text().splitlines()[0])
    assert e["run_id"] == "two" and e["request"] == CHEM and e["status"] == "complete"
    assert e["started"].startswith(first_log["timestamp"][:19])  # the run's first logged event, in UTC
    assert e["benchmarks"] == ["sciaidanbench"] and e["n_items"] == 25  # the 25 chemistry questions
    assert e["models"] == ["replay:o1-mini", "replay:phi4:latest"]  # as the records name them
    assert e["judges"] == [] and e["cost_usd"] == 0.0 and e["cost_note"] == "no model calls"
    w = e["winner"]
    # the report's own ranking and test of the top two: 296 vs 200 accepted answers, p = 0.154 (not separated)
    assert report["ranking"]["rows"][0]["rank"] == "1" and report["comparison"]["p"] == w["p"]
    assert w["models"] == ["replay:o1-mini"] and w["runner_up"] == ["replay:phi4:latest"] and not w["tie"]
    assert w["metric"] == "aidan_accepted_answers" and w["separated"] is False
    assert w["text"] == (
        f"replay:o1-mini by aidan_accepted_answers (not separated from replay:phi4:latest: paired test "
        f"p = {w['p']:.4f})"
    )
    assert e["problem"] == "" and e["responses"] == 50 and e["scores"] == 308


def test_runs_text_lists_each_run_with_its_details(runs_dir):
    res = runner.invoke(app, ["runs", "--out", str(runs_dir)])
    assert res.exit_code == 0, res.output
    lines = [" ".join(ln.split()) for ln in res.output.splitlines()]
    assert lines[0] == f"two complete responses=50 scores=308 '{CHEM}'"
    assert lines[1].endswith(
        "UTC; sciaidanbench (25 items); target models: replay:o1-mini, replay:phi4:latest; judge: none"
    )
    assert lines[2].startswith("winner: replay:o1-mini by aidan_accepted_answers (not separated from")
    assert lines[2].endswith("cost (USD): 0 (no model calls)")


def _copy(runs_dir: Path, dest: Path, name: str) -> Path:
    shutil.copytree(runs_dir / "two", dest / name, symlinks=True)
    cfg = json.loads((dest / name / "config.json").read_text())
    cfg["run_id"] = name
    (dest / name / "config.json").write_text(json.dumps(cfg))
    return dest / name


def test_a_tie_a_failure_a_cost_and_broken_folders_are_each_listed(runs_dir, tmp_path):
    out = tmp_path / "runs"
    out.mkdir()
    good = _copy(runs_dir, out, "good")
    # a tie as the report states it: rank labels "1=" (equal at the printed precision, not separated)
    tie = _copy(runs_dir, out, "tie")
    report = json.loads((tie / "report.json").read_text())
    for row in report["ranking"]["rows"]:
        row["rank"] = "1="
    report["comparison"]["p"] = 0.5
    (tie / "report.json").write_text(json.dumps(report))
    # a run that ended by an unexpected error before its report
    failed = _copy(runs_dir, out, "failed")
    (failed / "report.md").unlink()
    (failed / "report.json").unlink()
    with (failed / "log.jsonl").open("a") as f:
        f.write(json.dumps({"event": "unexpected error", "level": "error", "error": "RuntimeError: boom"}) + "\n")
    # model calls in the ledger: 0.25 + 0.5 USD known, one call without a price, one from the cache
    rows = [
        {"model": "m", "role": "target", "cost": 0.25},
        {"model": "m", "role": "judge", "cost": 0.5},
        {"model": "x", "role": "target", "cost": None},
        {"model": "m", "role": "target", "cost": None, "cached": True},
    ]
    (good / "ledger.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    # broken: a link inside, an unreadable config, a linked run folder, a report.json that is no JSON
    linked = _copy(runs_dir, out, "linked")
    os.symlink("/etc/passwd", linked / "figures" / "x.png")
    bad = out / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{bad")
    os.symlink(good, out / "alias")
    garbled = _copy(runs_dir, out, "garbled")
    (garbled / "report.json").write_text("{not json")
    unranked = _copy(runs_dir, out, "unranked")  # a report whose ranking has no ranked model
    report = json.loads((unranked / "report.json").read_text())
    for row in report["ranking"]["rows"]:
        row["rank"] = "unscored"
    (unranked / "report.json").write_text(json.dumps(report))
    # no report, and a checkpoint file that is no SQLite database; a config.json that is a FIFO
    torn = _copy(runs_dir, out, "torn")
    for name in ("report.md", "report.json", "state.sqlite-wal", "state.sqlite-shm"):
        (torn / name).unlink(missing_ok=True)
    (torn / "state.sqlite").write_bytes(b"not a database" * 100)
    fifo = out / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "config.json")

    entries = {e["folder"]: e for e in _json(out)}
    assert sorted(entries) == ["alias", "bad", "failed", "fifo", "garbled", "good", "linked", "tie", "torn", "unranked"]
    assert entries["torn"]["status"] == "incomplete" and entries["torn"]["n_items"] == 25
    assert entries["fifo"]["status"] == "broken" and "config.json" in entries["fifo"]["problem"]
    assert entries["tie"]["winner"]["models"] == ["replay:o1-mini", "replay:phi4:latest"]
    assert entries["tie"]["winner"]["tie"] is True
    assert entries["tie"]["winner"]["text"] == (
        "tie by aidan_accepted_answers: replay:o1-mini = replay:phi4:latest (paired test p = 0.5000: not separated)"
    )
    assert entries["failed"]["status"] == "failed" and entries["failed"]["winner"] is None
    assert entries["failed"]["status_detail"] == "RuntimeError: boom (see log.jsonl; sgieval resume)"
    assert entries["good"]["cost_usd"] == 0.75
    assert entries["good"]["cost_note"] == "3 calls; 1 without a known price, not counted"
    assert entries["linked"]["status"] == "broken"
    assert entries["linked"]["problem"] == "symbolic link(s) in the run folder, not followed: figures/x.png"
    assert entries["alias"]["problem"] == "a symbolic link to a folder (not followed)"
    assert entries["bad"]["status"] == "broken" and entries["bad"]["problem"].startswith(
        f"{bad / 'config.json'}: Invalid JSON"
    )
    assert entries["garbled"]["status"] == "complete" and entries["garbled"]["winner"] is None
    assert entries["unranked"]["winner"] is None and entries["unranked"]["reported"] is True
    assert entries["garbled"]["problem"].startswith("report.json not read: ")
    # the text listing shows every folder too, and exits 0
    res = runner.invoke(app, ["runs", "--out", str(out)])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "alias unreadable: a symbolic link to a folder (not followed)" in text
    assert "linked unreadable: symbolic link(s) in the run folder, not followed: figures/x.png" in text
    assert "failed failed: RuntimeError: boom" in text
    assert "cost (USD): 0.7500 (3 calls; 1 without a known price, not counted)" in text
    assert "winner: no ranked model (see its report)" in text and "winner: no report" in text


def test_view_without_a_run_writes_the_home_page_with_links(runs_dir, tmp_path):
    out = tmp_path / "runs"
    out.mkdir()
    _copy(runs_dir, out, "first")
    bad = out / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{bad")
    (out / "compare-first-x").mkdir()
    (out / "compare-first-x" / "index.html").write_text("<html></html>")
    res = runner.invoke(app, ["view", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert f"home: {out / 'index.html'} (2 runs)" in " ".join(res.output.split())
    html = (out / "index.html").read_text()
    assert (out / "first" / "viewer" / "index.html").is_file()  # the run's viewer was written for the link
    assert '<tr class="run-row" data-run-id="first" data-status="complete">' in html
    assert '<a class="run-link" href="first/viewer/index.html">first</a>' in html
    assert '<tr class="run-row run-broken" data-run-id="bad" data-status="broken">' in html
    assert '<a class="compare-link" href="compare-first-x/index.html">first-x</a>' in html
    assert "not separated from replay:phi4:latest" in html
    # a viewer newer than the records is kept as it is
    mtime = (out / "first" / "viewer" / "data.js").stat().st_mtime_ns
    assert runner.invoke(app, ["view", "--out", str(out)]).exit_code == 0
    assert (out / "first" / "viewer" / "data.js").stat().st_mtime_ns == mtime


def test_a_run_paused_at_the_metric_confirmation_is_read_from_its_checkpoint(tmp_path):
    run = sgieval.evaluate(CHEM, models="replay:o1-mini,replay:phi4", out_dir=tmp_path, run_id="paused", yes=False)
    assert run.stopped and not (tmp_path / "paused" / "report.json").exists()
    (e,) = _json(tmp_path)
    assert e["status"] == "stopped"
    assert e["status_detail"] == "at the metric confirmation, nothing evaluated yet (sgieval resume)"
    assert e["n_items"] == 25 and e["winner"] is None and e["responses"] == 0


def test_view_serve_without_a_run_serves_the_home_page_and_viewers_only(runs_dir, tmp_path):
    out = tmp_path / "runs"
    out.mkdir()
    _copy(runs_dir, out, "first")
    with serve_viewer("--out", str(out), "--port", "0") as served:
        base = served["base"]
        home = httpx.get(base + "index.html", timeout=5)
        assert home.status_code == 200 and '<a class="run-link" href="first/viewer/index.html">' in home.text
        assert httpx.get(base + "first/viewer/index.html", timeout=5).status_code == 200
        assert "window.SGV_DATA" in httpx.get(base + "first/viewer/data.js", timeout=5).text
        for private in ("first/config.json", "first/scores.jsonl", "first/report.json", "../index.html"):
            assert httpx.get(base + private, timeout=5).status_code == 404, private


def test_a_model_added_with_into_is_named_as_the_records_name_it(tmp_path):
    """``--models replay:mistral --into RUN`` adds the stored model ``mistral:latest``: the index names it as its
    responses do (``replay:mistral:latest``), as the report's Run table does, not by the string typed."""
    sgieval.evaluate(CHEM, models="replay:o1-mini", out_dir=tmp_path, run_id="grown", bootstrap_resamples=999)
    sgieval.evaluate(models="replay:mistral", into=str(tmp_path / "grown"), bootstrap_resamples=999)
    (e,) = _json(tmp_path)
    assert e["models"] == ["replay:o1-mini", "replay:mistral:latest"]
    ((added),) = e["added"]
    assert added["models"] == ["replay:mistral:latest"]
    res = runner.invoke(app, ["runs", "--out", str(tmp_path)])
    assert "(replay:mistral:latest added by ask --into at " in " ".join(res.output.split())
    # a second --into that only ranks by another metric says so, with no empty model list
    sgieval.evaluate(metric="aidan_readme_score", into=str(tmp_path / "grown"), bootstrap_resamples=999)
    text = " ".join(runner.invoke(app, ["runs", "--out", str(tmp_path)]).output.split())
    assert "(replay:mistral:latest added by ask --into at " in text
    assert "; ranking metric set to aidan_readme_score by ask --into at " in text and "; ;" not in text
