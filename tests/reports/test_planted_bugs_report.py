"""Report-level numbers that planted bugs would change (interval bounds, ranking direction)."""

from __future__ import annotations

import asyncio
import json
import shutil

from sgieval.benchmarks.sfbench import load_sfbench
from sgieval.core import RunConfig
from sgieval.graphs.evaluate import execute, make_runtime
from sgieval.metric_pool.stats import summarize
from sgieval.tests.conftest import FIXTURES, routed


def _row(report: str, model: str) -> list[str]:
    """The cells of the ranking-table row of ``model`` (first table whose rows start with a rank)."""
    for line in report.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0].isdigit() and cells[1] == model:
            return cells
    raise AssertionError(f"no ranking row for {model}")


def test_chemistry_ranking_rows_carry_the_95_percent_bootstrap_bounds(tmp_path, sciaidan_dir):
    """Planted bug: the report computes a 90% interval and labels it "95% CI".

    o1-mini's 25 per-question accepted-answer counts (total 296) have the BCa 95% interval 7.80 to 17.52
    (scipy.stats.bootstrap, 10,000 resamples, seed 0); the 90% interval of the same data is narrower."""
    cfg = RunConfig(
        run_id="chem",
        request="Which model is the most creative in chemistry?",
        data_dir=str(sciaidan_dir.parent),
        out_dir=str(tmp_path / "runs"),
        yes=True,
    )
    rt = make_runtime(cfg)
    asyncio.run(execute(rt))
    report = (tmp_path / "runs" / "chem" / "report.md").read_text()
    assert "| rank | target model | mean per item | 95% CI (bootstrap) | total | n items | failed |" in report
    assert _row(report, "replay:o1-mini")[2:5] == ["11.84", "7.80 to 17.52", "296"]
    assert _row(report, "replay:mistral:latest")[2:5] == ["4.28", "3.20 to 5.80", "107"]
    vals = [
        s.value for s in rt.store.read("scores") if s.model == "replay:o1-mini" and s.metric == "aidan_accepted_answers"
    ]
    s95 = summarize(vals, n_resamples=10000, seed=0)
    s90 = summarize(vals, n_resamples=10000, seed=0, confidence=0.90)
    assert (f"{s95.ci_low:.2f}", f"{s95.ci_high:.2f}") == ("7.80", "17.52")
    assert s90.ci_low > s95.ci_low and s90.ci_high < s95.ci_high


def _sfbench_run(tmp_path, request: str):
    data = tmp_path / "data" / "sfbench"
    data.mkdir(parents=True)
    shutil.copy(FIXTURES / "sfbench" / "claims.jsonl", data / "claims.jsonl")
    items = load_sfbench(FIXTURES / "sfbench" / "claims.jsonl")
    gold = {i.metadata["question"]: i.reference["score"] for i in items}

    # "near": always one Likert step off the gold score (|error| 1 per claim); "exact": always right (error 0);
    # "far": two steps off where it can be (|error| 2 or more)
    def off(g: int, d: int) -> int:
        return g - d if g - d >= -2 else g + d

    exact = routed("scripted-exact", [(q, json.dumps({"score": g, "explanation": "- r"})) for q, g in gold.items()])
    near = routed(
        "scripted-near", [(q, json.dumps({"score": off(g, 1), "explanation": "- r"})) for q, g in gold.items()]
    )
    far = routed("scripted-far", [(q, json.dumps({"score": off(g, 2), "explanation": "- r"})) for q, g in gold.items()])
    plan = json.dumps(
        {
            "predefined": [],
            "custom": [],
            "primary": "sfbench_abs_error",
            "reason": "the request asks for the smallest error",
        }
    )
    agent = routed("scripted-agent", [("sfbench_abs_error", plan)], default="not json", role="agent")
    cfg = RunConfig(
        run_id="sf",
        request=request,
        benchmarks=["sfbench"],
        data_dir=str(tmp_path / "data"),
        out_dir=str(tmp_path / "runs"),
        yes=True,
        bootstrap_resamples=999,
    )
    rt = make_runtime(cfg, targets=[far, exact, near], agent=agent)
    state = asyncio.run(execute(rt))
    return rt, state, (tmp_path / "runs" / "sf" / "report.md").read_text(), items


def test_lower_is_better_primary_metric_ranks_the_smallest_error_first(tmp_path):
    """Planted bug: rankings ignore ``higher_is_better`` (MAE 3 ranked above MAE 1).

    sfbench_abs_error (range 0-4, lower is better): exact 0, near 1, far 2 or more per claim."""
    rt, state, report, items = _sfbench_run(tmp_path, "Which model has the smallest error on feasibility?")
    assert state["metric_plan"]["primary"] == "sfbench_abs_error"
    far = [
        abs(s.value) for s in rt.store.read("scores") if s.model == "scripted-far" and s.metric == "sfbench_abs_error"
    ]
    assert far == [2.0] * len(items)  # off() always moves a Likert score by exactly 2 within -2..2
    assert "## Ranking by sfbench_abs_error" in report and "lower is better" in report
    ranks = {m: _row(report, m) for m in ("scripted-exact", "scripted-near", "scripted-far")}
    assert [ranks[m][0] for m in ("scripted-exact", "scripted-near", "scripted-far")] == ["1", "2", "3"]
    assert (
        ranks["scripted-exact"][2] == "0.00"
        and ranks["scripted-near"][2] == "1.00"
        and ranks["scripted-far"][2] == "2.00"
    )
