"""--budget stops a run cleanly and the report says where."""

from __future__ import annotations

import asyncio
import json
import shutil

from sgieval.core import RunConfig
from sgieval.graphs.evaluate import execute, make_runtime
from sgieval.models import accounting
from sgieval.tests.conftest import FIXTURES, routed


def test_budget_stops_cleanly_and_report_says_where(tmp_path):
    data = tmp_path / "data" / "sfbench"
    data.mkdir(parents=True)
    shutil.copy(FIXTURES / "sfbench" / "claims.jsonl", data)
    # price: 100 USD / 1M input and 1000 USD / 1M output tokens; each call is 100 in + 10 out tokens
    # -> 100*100/1e6 + 10*1000/1e6 = 0.01 + 0.01 = 0.02 USD per call
    accounting.set_prices({"priced-model": [100.0, 1000.0]})
    try:
        target = routed("priced-model", [], default=json.dumps({"score": 0, "explanation": "- x"}))
        cfg = RunConfig(
            run_id="b",
            request="feasibility of claims",
            benchmarks=["sfbench"],
            data_dir=str(tmp_path / "data"),
            out_dir=str(tmp_path / "runs"),
            yes=True,
            budget_usd=0.05,
            max_concurrency=1,
            bootstrap_resamples=999,
        )
        rt = make_runtime(cfg, targets=[target])
        state = asyncio.run(execute(rt))
    finally:
        accounting.reset_prices()
    # calls are refused once spent >= budget: 0.02, 0.04 are allowed, the third call (spent 0.06 >= 0.05)...
    # spent before call 1 = 0, call 2 = 0.02, call 3 = 0.04 < 0.05 -> allowed; before call 4 spent 0.06 -> refused
    responses = rt.store.read("responses")
    assert len(responses) == 3
    assert "budget" in state["evaluated"]["budget_stopped"].lower()
    report = (tmp_path / "runs" / "b" / "report.md").read_text()
    assert "stopped at its budget" in report
    assert "| priced-model | target | 3 | 0 | 0 | 300 | 30 |" in report
    # max_concurrency 1: nothing was in flight, so reached-at equals the total
    assert (
        "Budget 0.05 USD; spent 0.0600 USD in all. The budget was reached at 0.0600 USD, before a target call "
        "to priced-model; calls already in flight then finished and are counted."
    ) in report
    assert not any(s.item_id == "*" for s in rt.store.read("scores"))  # no corpus kappa on a partial run
