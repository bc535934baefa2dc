"""The graph on the SGI-Bench and SFBench schema fixtures (tests/fixtures/, marked as fixtures there)."""

from __future__ import annotations

import asyncio
import json
import shutil

from sgieval.benchmarks.sfbench import load_sfbench
from sgieval.core import RunConfig
from sgieval.graphs.evaluate import execute, make_runtime
from sgieval.tests.conftest import FIXTURES, routed

LEGEND = (
    "Full order (best first; '>': separated by the paired test of the adjacent pair at the 5% level, '≈': not separated"
)
"""The full order's legend (agents.reporting.separated_order) up to its optional "or not tested)"."""


def _data_dir(tmp_path, name, src):
    dest = tmp_path / "data" / name
    dest.mkdir(parents=True)
    for f in src.glob("*.jsonl"):
        shutil.copy(f, dest / f.name)
    return tmp_path / "data"


def _run(tmp_path, request, benchmark, data_dir, **models):
    cfg = RunConfig(
        run_id="r",
        request=request,
        benchmarks=[benchmark],
        data_dir=str(data_dir),
        out_dir=str(tmp_path / "runs"),
        yes=True,
        bootstrap_resamples=999,
    )
    rt = make_runtime(cfg, **models)
    state = asyncio.run(execute(rt))
    return rt, state, (tmp_path / "runs" / "r" / "report.md").read_text()


def test_sgi_deep_research_replay(tmp_path):
    data = _data_dir(tmp_path, "sgi-bench", FIXTURES / "sgi")
    cfg_models = [f"replay:{FIXTURES / 'sgi' / 'responses' / f'fixture-model-{x}.jsonl'}" for x in "ab"]
    cfg = RunConfig(
        run_id="r",
        request="Which model is most accurate in deep research?",
        benchmarks=["sgi-bench"],
        data_dir=str(data),
        out_dir=str(tmp_path / "runs"),
        yes=True,
        models=cfg_models,
        bootstrap_resamples=999,
    )
    rt = make_runtime(cfg)
    state = asyncio.run(execute(rt))
    report = (tmp_path / "runs" / "r" / "report.md").read_text()
    assert state["selection"]["filters"] == {"task": ["deep_research"]}
    assert state["metric_plan"]["primary"] == "em"
    em = {(s.model, s.item_id): s.value for s in rt.store.read("scores") if s.metric == "em"}
    # fixture-model-a answers the 4 deep-research fixtures correctly, fixture-model-b gets all 4 wrong
    assert sorted(v for (m, _), v in em.items() if m == "replay:fixture-model-a") == [1.0] * 4
    assert sorted(v for (m, _), v in em.items() if m == "replay:fixture-model-b") == [0.0] * 4
    assert "| 1 | replay:fixture-model-a | 1.00 |" in report and "| 2 | replay:fixture-model-b | 0.00 |" in report
    sla = [s for s in rt.store.read("scores") if s.metric == "sla"]
    assert len(sla) == 8 and {s.status for s in sla} == {"not_run"}  # no judge configured
    assert "## SGI-Score" in report and "missing tasks" in report  # 4 of 5 tasks have no results: never zero


def test_sfbench_kappa_ranking(tmp_path):
    data = _data_dir(tmp_path, "sfbench", FIXTURES / "sfbench")
    items = load_sfbench(FIXTURES / "sfbench" / "claims.jsonl")
    golds = [i.reference["score"] for i in items]
    exact = routed(
        "scripted-exact",
        [
            (i.metadata["question"], json.dumps({"score": i.reference["score"], "explanation": "- reason"}))
            for i in items
        ],
    )
    flat = routed("scripted-flat", [], default=json.dumps({"score": 0, "explanation": "- unsure"}))
    rt, state, report = _run(
        tmp_path, "Which model judges the feasibility of claims best?", "sfbench", data, targets=[exact, flat]
    )
    corpus = {(s.model, s.metric): s for s in rt.store.read("scores") if s.item_id == "*"}
    assert state["metric_plan"]["primary"] == "sfbench_qwk"
    assert corpus[("scripted-exact", "sfbench_qwk")].value == 1.0
    # constant prediction 0 against gold with 5 labels: QWK = 0 (observed = expected disagreement)
    assert corpus[("scripted-flat", "sfbench_qwk")].value == 0.0
    # accuracy = gold==0 share; MAE = mean |gold - 0|
    assert corpus[("scripted-flat", "sfbench_accuracy")].value == golds.count(0) / len(golds)
    assert abs(corpus[("scripted-flat", "sfbench_mae")].value - sum(abs(g) for g in golds) / len(golds)) < 1e-12
    assert "| 1 | scripted-exact | 1.00 |" in report and "| 2 | scripted-flat | 0.00 |" in report
    # kappa is one corpus-level value per model: the ranking says so instead of "n/a to n/a"
    assert f"| 1 | scripted-exact | 1.00 | corpus-level, no CI | 1.00 | {len(items)} | 0 |" in report
    assert (
        f"No model is established as first by sfbench_qwk on {len(items)} items (task feasibility): scripted-exact "
        "leads with 1.00, one corpus-level value per model (a corpus-level value: no per-item CI), but it is not "
        "tested against scripted-flat (one corpus-level value per model, no per-item values to pair). "
        f"{LEGEND} or not tested): scripted-exact ≈ scripted-flat." in report
    )
