"""Upstream data layouts: ``--data-dir`` at a clone of SciAidanBench as its repository lays it out.

The clone is generated in the test's tmp folder from the shared SciAidanBench data (no committed copies):
``results/per_model/model_<name>.json`` per model (the same ``domains -> ...`` layout, model name inside the file),
a ``top-5`` ensemble file, and the question list as Python source in ``benchmark/sciaidanbench_questions*.py``, which
starts with a statement that would fail if the file were imported or run.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.benchmarks.data import find_benchmark_dir
from sgieval.benchmarks.layouts import (
    SCIAIDAN_CLONE,
    literal_strings,
    looks_sgi_snapshot,
    question_groups,
    sciaidanbench_view,
)
from sgieval.cli import app

runner = CliRunner()
CHEM = "Which model is the most creative in chemistry?"
POISON = 'raise SystemExit("this file was imported or run")\n'


def make_clone(src: Path, dest: Path) -> Path:
    """A SciAidanBench clone from the shared data folder ``src`` (questions.json + responses/*.json)."""
    per = dest / "results" / "per_model"
    per.mkdir(parents=True)
    for f in sorted((src / "responses").glob("*.json")):
        data = json.loads(f.read_text(encoding="utf-8"))
        models = {
            m
            for dv in data["domains"].values()
            for sv in ({None: dv} if "models" in dv else dv).values()
            for m in sv["models"]
        }
        (name,) = models
        (per / f"model_{name.replace(':', '_').replace('/', '_')}.json").write_text(json.dumps(data), encoding="utf-8")
        if name == "o1-mini":  # an ensemble configuration: o1-mini's answers under the name top-5
            (per / "model_top-5.json").write_text(json.dumps(data).replace('"o1-mini"', '"top-5"'), encoding="utf-8")
    questions = json.loads((src / "questions.json").read_text(encoding="utf-8"))
    tree: dict = {}
    for q in questions:
        if q["subdomain"] not in (None, q["domain"]):
            tree.setdefault(q["domain"], {}).setdefault(q["subdomain"], []).append(q["question"])
        else:
            tree.setdefault(q["domain"], []).append(q["question"])
    bench = dest / "benchmark"
    bench.mkdir()
    (bench / "sciaidanbench_questions_dict.py").write_text(
        POISON + "import os\n\nquestions_dict = " + repr(tree) + "\n\nn_questions = len(questions_dict)\n",
        encoding="utf-8",
    )
    flat = [q["question"] for q in questions]
    (bench / "sciaidanbench_questions.py").write_text(POISON + "questions = " + repr(flat) + "\n", encoding="utf-8")
    (dest / "README.md").write_text("SciAidanBench\n")
    return dest


@pytest.fixture
def clone(tmp_path, sciaidan_dir, monkeypatch):
    monkeypatch.setenv("SGIEVAL_LAYOUT_CACHE", str(tmp_path / "layout-cache"))
    return make_clone(sciaidan_dir, tmp_path / "SciAidanBench")


def test_question_list_read_as_data(clone):
    vals = literal_strings(clone / "benchmark" / "sciaidanbench_questions_dict.py")
    assert list(vals) == ["questions_dict"]  # n_questions = len(...) is code, not data: ignored
    groups = question_groups([clone / "benchmark" / "sciaidanbench_questions_dict.py"])
    # DATASETS.md: Physics has four subdomains (27, 13, 7, 12 questions); five domains have none
    assert sorted((d, s or "", len(q)) for d, s, q in groups) == [
        ("Biology", "", 20),
        ("Chemistry", "", 25),
        ("Environmental Science", "", 16),
        ("Nanoscience", "", 32),
        ("Neuroscience", "", 5),
        ("Physics", "Astrophysics", 13),
        ("Physics", "Condensed Matter", 7),
        ("Physics", "Fundamental", 27),
        ("Physics", "Synchrotron", 12),
    ]
    assert sum(len(q) for _, _, q in groups) == 157


def test_clone_view(clone, sciaidan_dir):
    view = sciaidanbench_view(clone)
    assert view.layout == SCIAIDAN_CLONE
    assert sorted(view.models) == [
        "llama3.3:latest",
        "mistral:latest",
        "o1-mini",
        "openai/4o",
        "phi4:latest",
        "qwen2.5:latest",
    ]
    assert view.pseudo_models == {"top-5": "model_top-5.json"}
    got = json.loads((view.folder / "questions.json").read_text())
    want = json.loads((sciaidan_dir / "questions.json").read_text())
    assert got == want  # 157 questions, 155 in the published results, same indices as the shared data
    # the view is reused while the clone is unchanged, and also found from results/ and results/per_model/
    assert sciaidanbench_view(clone / "results" / "per_model").folder == view.folder
    assert find_benchmark_dir("sciaidanbench", clone / "results") == view.folder


def test_ask_on_clone_ranks_like_published(clone, tmp_path):
    out = tmp_path / "runs"
    for data_dir in (clone, clone / "results" / "per_model"):
        res = runner.invoke(app, ["ask", CHEM, "--yes", "--data-dir", str(data_dir), "--out", str(out)])
        assert res.exit_code == 0, res.output
    reports = sorted(out.glob("*/report.md"))
    assert len(reports) == 2
    for rep in reports:
        text = rep.read_text()
        rows = re.findall(r"^\| (\d) \| (replay:\S+) \| [\d.]+ \| [^|]+ \| (\d+) \|", text, flags=re.M)
        assert rows == [
            ("1", "replay:o1-mini", "296"),
            ("2", "replay:openai/4o", "274"),
            ("3", "replay:phi4:latest", "200"),
            ("4", "replay:llama3.3:latest", "194"),
            ("5", "replay:qwen2.5:latest", "180"),
            ("6", "replay:mistral:latest", "107"),
        ]
        assert "top-5" not in text.split("## Ranking")[1].split("##")[0]  # the ensemble is not a target


def test_catalog_on_clone_never_an_sfbench_error(clone):
    for data_dir in (clone, clone / "results" / "per_model"):
        res = runner.invoke(app, ["catalog", "--data-dir", str(data_dir), "--json"])
        assert res.exit_code == 0, res.output
        data = json.loads(res.output)
        assert data["facets"]["benchmark"]["sciaidanbench"] == 155
        assert "claim" not in json.dumps(data.get("unavailable", {})).lower()


def test_sgi_hub_cache_snapshot_detected(tmp_path):
    snap = tmp_path / "hub" / "datasets--InternScience--SGI-DeepResearch" / "snapshots" / "abc123" / "data"
    snap.mkdir(parents=True)
    shutil.copy(Path(__file__).resolve().parents[1] / "fixtures" / "sgi" / "deep_research.jsonl", snap / "x.jsonl")
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    pq.write_table(pj.read_json(snap / "x.jsonl"), snap / "test-00000-of-00001.parquet")
    (snap / "x.jsonl").unlink()
    assert looks_sgi_snapshot(tmp_path / "hub")
    res = runner.invoke(app, ["catalog", "-b", "sgi-bench", "--data-dir", str(tmp_path / "hub"), "--json"])
    assert res.exit_code == 0, res.output
    n = len((Path(__file__).resolve().parents[1] / "fixtures" / "sgi" / "deep_research.jsonl").read_text().splitlines())
    assert json.loads(res.output)["facets"]["task"] == {"deep_research": n}


def _records(n_accepted: int) -> list[dict]:
    recs = [
        {
            "answer_num": k + 1,
            "answer": f"idea {k}",
            "coherence_score": 80,
            "embedding_dissimilarity_score": 0.5,
            "stopping_condition": None,
        }
        for k in range(n_accepted)
    ]
    recs.append(
        {
            "answer_num": n_accepted + 1,
            "answer": "repeat",
            "coherence_score": 80,
            "embedding_dissimilarity_score": 0.01,
            "stopping_condition": "embedding_dissimilarity_threshold",
            "final_stopping_condition": "embedding_dissimilarity_threshold",
        }
    )
    return recs


def make_aidan_clone(src: Path, dest: Path) -> Path:
    """An AidanBench clone: benchmark/question_list.py from the shared aidanbench_questions.json, a results file
    with two models and an ensemble, and a results file that is only a Git LFS pointer."""
    qs = json.loads((src / "aidanbench_questions.json").read_text(encoding="utf-8"))
    (dest / "benchmark").mkdir(parents=True)
    (dest / "benchmark" / "question_list.py").write_text(POISON + "questions = " + repr(qs) + "\n", encoding="utf-8")
    (dest / "results").mkdir()
    results = {
        "models": {
            "m-one": {"0.7": {qs[0]: _records(2), qs[1]: _records(1)}},
            "m-two": {"0.7": {qs[0]: _records(1), qs[1]: _records(0)}},
            "top-5-parallel": {"0.7": {qs[0]: _records(9)}},
        }
    }
    (dest / "results" / "results_small.json").write_text(json.dumps(results), encoding="utf-8")
    (dest / "results" / "results_large.json").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123456789\n", encoding="utf-8"
    )
    return dest


def test_aidanbench_clone(tmp_path, sciaidan_dir, monkeypatch):
    from sgieval.benchmarks.layouts import AIDAN_CLONE, aidanbench_view
    from sgieval.agents.stored_responses import stored_models

    monkeypatch.setenv("SGIEVAL_LAYOUT_CACHE", str(tmp_path / "layout-cache"))
    clone = make_aidan_clone(sciaidan_dir, tmp_path / "AidanBench")
    view = aidanbench_view(clone)
    assert view.layout == AIDAN_CLONE
    assert view.models == ["m-one", "m-two"] and view.pseudo_models == {"top-5-parallel": "results_small.json"}
    assert view.notes == [f"results_large.json is a Git LFS pointer, not the results (run `git lfs pull` in {clone})"]
    res = runner.invoke(app, ["catalog", "--data-dir", str(clone), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["facets"]["benchmark"]["sciaidanbench"] == 63 and data["facets"]["discipline"] == {"AidanBench": 63}
    stores = {s.model: s for s in stored_models(clone)}
    assert sorted(stores) == ["m-one", "m-two"]
    first = json.loads((sciaidan_dir / "aidanbench_questions.json").read_text())[0]
    assert [r["answer_num"] for r in stores["m-one"].by_question[first]["records"]] == [1, 2, 3]
