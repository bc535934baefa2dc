"""An exception inside any graph node or the router leaves a run that `resume` continues to
the same records and report as an uninterrupted run (fault injected once into each, then removed)."""

from __future__ import annotations

import asyncio
import json

import pytest

from sgieval.core import RunConfig, RunStore
from sgieval.agents import run as steps
from sgieval.agents import run_report
from sgieval.graphs import evaluate as ev

CHEM = "Which model is the most creative in chemistry?"


def records(run_dir):
    store = RunStore(run_dir)
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    return (
        sorted((r.model_dump(exclude={"latency_s", "invocation"}) for r in store.read("responses")), key=key),
        sorted((s.model_dump(exclude={"rationale", "invocation"}) for s in store.read("scores")), key=key),
    )


@pytest.fixture(scope="module")
def lone(tmp_path_factory):
    out = tmp_path_factory.mktemp("lone")
    cfg = RunConfig(run_id="lone", request=CHEM, k=3, out_dir=str(out), bootstrap_resamples=99, yes=True)
    state = asyncio.run(ev.execute(ev.make_runtime(cfg)))
    return records(out / "lone"), state


# (module whose attribute is patched, attribute): each raises once, then behaves.  The agents the nodes call
# (agents/run.py's steps) and the graph's router (graphs/evaluate.py)
TARGETS = [
    (steps, "run_questioning"),
    (steps, "run_customisation"),
    (steps, "evaluate_with_executor"),
    (run_report, "report_run"),
    (ev, "after_confirm"),
]


@pytest.mark.parametrize("module,target", TARGETS, ids=[t for _, t in TARGETS])
def test_fault_in_a_node_or_the_router_then_resume(tmp_path, monkeypatch, lone, module, target):
    real = getattr(module, target)
    calls = {"n": 0}

    def once(*a, **k):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError(f"injected fault in {target}")
        return real(*a, **k)

    monkeypatch.setattr(module, target, once)
    cfg = RunConfig(run_id="f", request=CHEM, k=3, out_dir=str(tmp_path), bootstrap_resamples=99, yes=True)
    with pytest.raises(RuntimeError, match="injected fault"):
        asyncio.run(ev.execute(ev.make_runtime(cfg)))
    assert (tmp_path / "f" / "config.json").is_file()  # the run folder is kept for resume
    again = ev.make_runtime(RunStore(tmp_path / "f").read_config())
    state = asyncio.run(ev.execute(again, resume=True))
    assert state.get("report") and (tmp_path / "f" / "report.md").is_file()
    (want_resp, want_scores), _ = lone
    got_resp, got_scores = records(tmp_path / "f")
    assert [r["item_id"] for r in got_resp] == [r["item_id"] for r in want_resp]
    assert got_scores == [{**s, "item_id": s["item_id"]} for s in want_scores]
