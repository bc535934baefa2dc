"""The data folder the user names is the only one looked in: ``--data-dir X`` (or ``SGIEVAL_DATA=X``) that holds
no benchmark stops the run with exit 2, naming X, what was looked for and what X holds; it never falls back to
../shared/data.  Upstream files the loader leaves out (SciAidanBench ensembles) are named in the Run table."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from typer.testing import CliRunner

from sgieval.benchmarks.data import find_benchmark_dir
from sgieval.cli import app
from sgieval.core import DataNotFoundError
from sgieval.tests.benchmarks.test_upstream_layouts import make_clone

runner = CliRunner()
CHEM = "Which model is the most creative in chemistry?"
LOOKED_FOR = ("sgieval layout", "SciAidanBench clone", "AidanBench clone", "SGI-Bench hub snapshot")


def _ask(args: list[str], env: dict[str, str] | None = None):
    return runner.invoke(app, ["ask", CHEM, "--yes", *args], env=env)


def _one_line(res) -> str:
    (line,) = [ln for ln in res.output.splitlines() if ln.strip()]
    return line


@pytest.mark.parametrize(
    "layout, found",
    [
        ("empty", "found: nothing (an empty folder))"),
        ("wrong", "found: notes/, results.csv)"),
        (
            "partial clone",
            "found: README.md, benchmark/ (a clone without results/per_model/model_*.json or "
            "benchmark/question_list.py: a partial or sparse clone?))",
        ),
    ],
)
def test_named_folder_without_a_benchmark_exits_2(tmp_path, sciaidan_dir, layout, found):
    d = tmp_path / layout.replace(" ", "-")
    d.mkdir()
    if layout == "wrong":
        (d / "notes").mkdir()
        (d / "results.csv").write_text("model,score\n")
    elif layout == "partial clone":  # the question lists arrived, the results did not
        (d / "benchmark").mkdir()
        (d / "benchmark" / "sciaidanbench_questions.py").write_text("questions = ['q?']\n")
        (d / "README.md").write_text("SciAidanBench\n")
    out = tmp_path / "runs"
    res = _ask(["--data-dir", str(d), "--out", str(out)])
    assert res.exit_code == 2, res.output
    line = _one_line(res)
    assert line.startswith(f"error: --data-dir {d}: {d} holds no benchmark sgieval recognises (looked for: ")
    assert all(w in line for w in LOOKED_FOR)
    assert found in line
    assert str(sciaidan_dir) not in line and not out.exists()  # no run on the shared data

    # the same folder named by SGIEVAL_DATA: the same stop, named by the variable
    res = _ask(["--out", str(out)], env={"SGIEVAL_DATA": str(d)})
    assert res.exit_code == 2, res.output
    line = _one_line(res)
    assert line.startswith(f"error: SGIEVAL_DATA={d}: {d} holds no benchmark sgieval recognises")
    assert found in line and not out.exists()


def test_named_benchmark_missing_in_named_folder(tmp_path, monkeypatch):
    """-b sciaidanbench with a folder that holds only another benchmark: that folder is reported, with what it
    holds; the shared data (which does hold SciAidanBench) is never read."""
    d = tmp_path / "data"
    (d / "sfbench").mkdir(parents=True)
    (d / "sfbench" / "claims.jsonl").write_text("{}\n")
    with pytest.raises(DataNotFoundError) as ei:
        find_benchmark_dir("sciaidanbench", d)
    assert ei.value.one_line().startswith(
        f"--data-dir {d}: no sciaidanbench data in {d} (looked for questions.json in it or in sciaidanbench/ below "
        "it; found: sfbench/)"
    )
    monkeypatch.setenv("SGIEVAL_DATA", str(d))
    assert find_benchmark_dir("sciaidanbench", required=False) is None
    with pytest.raises(DataNotFoundError, match=rf"^SGIEVAL_DATA={re.escape(str(d))}: no sciaidanbench data"):
        find_benchmark_dir("sciaidanbench")


def _run_table(report: str) -> dict[str, str]:
    head = report.split("\n## Run\n", 1)[1].split("\n## ", 1)[0]
    return {m[0]: m[1] for m in re.findall(r"^\| ([^|]+?) \| (.*) \|$", head, flags=re.M)}


def _ranking(report: str) -> list[tuple[str, str]]:
    return re.findall(r"^\| \d \| (replay:\S+) \| [\d.]+ \| [^|]+ \| (\d+) \|", report, flags=re.M)


CHEM_RANKING = [
    ("replay:o1-mini", "296"),
    ("replay:openai/4o", "274"),
    ("replay:phi4:latest", "200"),
    ("replay:llama3.3:latest", "194"),
    ("replay:qwen2.5:latest", "180"),
    ("replay:mistral:latest", "107"),
]


def test_clone_ensemble_file_named_in_run_table(tmp_path, sciaidan_dir, monkeypatch):
    monkeypatch.setenv("SGIEVAL_LAYOUT_CACHE", str(tmp_path / "layout-cache"))
    clone = make_clone(sciaidan_dir, tmp_path / "SciAidanBench")
    per = clone / "results" / "per_model"
    data = (per / "model_o1-mini.json").read_text(encoding="utf-8")
    (per / "model_top-5-parallel__Neuroscience.json").write_text(
        data.replace('"o1-mini"', '"top-5-parallel__Neuroscience"'), encoding="utf-8"
    )
    out = tmp_path / "runs"
    res = _ask(["--data-dir", str(clone), "--out", str(out)])
    assert res.exit_code == 0, res.output
    (report,) = [p.read_text() for p in out.glob("*/report.md")]
    assert _ranking(report) == CHEM_RANKING  # neither ensemble is a target
    why = "(an ensemble of several models, not one model: not a target)"
    assert _run_table(report)["files not read"] == (
        f"sciaidanbench: {per / 'model_top-5-parallel__Neuroscience.json'} {why}; "
        f"sciaidanbench: {per / 'model_top-5.json'} {why}"
    )


def test_pulled_layout_ensemble_file_is_not_a_target(tmp_path, sciaidan_dir):
    """A data folder in the sgieval layout whose responses/ holds an ensemble's file (as `data pull` wrote it
    before it kept them apart): the file is not a target model and the Run table names it."""
    d = tmp_path / "data" / "sciaidanbench"
    shutil.copytree(sciaidan_dir, d)
    src = json.loads((d / "responses" / "phi4_latest.json").read_text(encoding="utf-8"))
    ens = json.dumps(src).replace('"phi4:latest"', '"top-5-parallel__Chemistry"')
    (d / "responses" / "model_top-5-parallel__Chemistry.json").write_text(ens, encoding="utf-8")
    out = tmp_path / "runs"
    res = _ask(["--data-dir", str(d.parent), "--out", str(out)])
    assert res.exit_code == 0, res.output
    (report,) = [p.read_text() for p in out.glob("*/report.md")]
    assert _ranking(report) == CHEM_RANKING
    assert _run_table(report)["files not read"] == (
        f"sciaidanbench: {d / 'responses' / 'model_top-5-parallel__Chemistry.json'} "
        "(an ensemble of several models, not one model: not a target)"
    )
    res = runner.invoke(app, ["catalog", "--data-dir", str(d.parent), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["files_not_read"] == {
        "sciaidanbench": [
            f"{d / 'responses' / 'model_top-5-parallel__Chemistry.json'} "
            "(an ensemble of several models, not one model: not a target)"
        ]
    }
    assert "top-5-parallel__Chemistry" not in json.dumps(data["stored_responses"])
