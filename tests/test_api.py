"""The Python API (``sgieval.evaluate``) and the LangGraph Studio factories named in langgraph.json."""

from __future__ import annotations

import asyncio
import json

import pytest

import sgieval
from sgieval import api
from sgieval.core import InputError
from sgieval.tests.conftest import REPO

CHEM = "Which model is the most creative in chemistry?"


def test_evaluate_returns_the_runs_records(tmp_path):
    run = sgieval.evaluate(CHEM, out_dir=tmp_path, run_id="api", bootstrap_resamples=999)
    assert run.run_dir == tmp_path / "api" and not run.stopped
    assert run.report == tmp_path / "api" / "report.md" and run.report.is_file()
    assert len(run.items) == 25 and {i.discipline for i in run.items} == {"Chemistry"}
    # 25 chemistry questions x 6 stored models
    assert len(run.responses) == 150
    # Accepted answers on the 25 chemistry questions, totals per stored model
    assert run.totals("aidan_accepted_answers") == {
        "replay:o1-mini": 296.0,
        "replay:openai/4o": 274.0,
        "replay:phi4:latest": 200.0,
        "replay:llama3.3:latest": 194.0,
        "replay:qwen2.5:latest": 180.0,
        "replay:mistral:latest": 107.0,
    }
    # 296 / 25 = 11.84 per question
    assert run.means("aidan_accepted_answers")["replay:o1-mini"] == pytest.approx(11.84)
    assert run.selection["filters"] == {"discipline": ["Chemistry"], "task": ["open_creativity"]}
    assert run.metric_plan["primary"] == "aidan_accepted_answers"


def test_evaluate_with_model_strings_and_without_confirmation(tmp_path):
    run = sgieval.evaluate(
        CHEM,
        models="replay:o1-mini, replay:mistral",
        out_dir=tmp_path,
        run_id="two",
        yes=False,
        bootstrap_resamples=999,
    )
    # no confirm callback and yes=False: the run stops at the metric confirmation, nothing evaluated
    assert run.stopped and run.report is None and run.responses == [] and len(run.items) == 25
    run = sgieval.evaluate(
        CHEM,
        models=["replay:o1-mini", "replay:mistral"],
        out_dir=tmp_path,
        run_id="three",
        yes=False,
        confirm=lambda payload: payload["primary"] == "aidan_accepted_answers",
        bootstrap_resamples=999,
    )
    assert run.totals("aidan_accepted_answers") == {"replay:o1-mini": 296.0, "replay:mistral:latest": 107.0}


def test_evaluate_rejects_unknown_options(tmp_path):
    # typed keywords: an unknown option is Python's own TypeError, before anything runs
    with pytest.raises(TypeError, match=r"evaluate\(\) got an unexpected keyword argument 'colour'"):
        sgieval.evaluate(CHEM, out_dir=tmp_path, colour="red")
    with pytest.raises(TypeError, match="positional argument"):
        sgieval.evaluate(CHEM, "replay:o1-mini")  # models is keyword-only
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(
        InputError,
        match=r"^k: must be a positive integer \(number of items to sample\), got 0\. "
        r"Fix: pass k 1 or more, or leave k out to evaluate every matching item$",
    ):
        sgieval.evaluate(CHEM, out_dir=tmp_path, k=0)


def test_evaluate_inside_a_running_event_loop(tmp_path):
    async def inside():
        return sgieval.evaluate(CHEM, models="replay:o1-mini", out_dir=tmp_path, run_id="loop", bootstrap_resamples=999)

    run = asyncio.run(inside())
    assert run.totals("aidan_accepted_answers") == {"replay:o1-mini": 296.0}


def test_langgraph_json_names_importable_factories(tmp_path):
    spec = json.loads((REPO / "langgraph.json").read_text())
    assert spec["graphs"] == {
        "evaluate": "sgieval.api:evaluation_graph",
        "metric_chat": "sgieval.api:metric_chat_graph",
    }
    assert spec["dependencies"] == ["."]
    graph = api.evaluation_graph(
        {
            "configurable": {
                "request": CHEM,
                "out_dir": str(tmp_path),
                "yes": True,
                "models": "replay:o1-mini",
                "run_id": "studio",
                "bootstrap_resamples": 999,
            }
        }
    )
    assert set(graph.get_graph().nodes) >= {"questioning", "customisation", "confirm", "evaluation", "reporting"}
    state = asyncio.run(graph.ainvoke({}))
    assert state["report"] == str(tmp_path / "studio" / "report.md")
    assert len(state["selection"]["item_ids"]) == 25


@pytest.mark.slow
def test_metric_chat_factory_runs_the_chat_to_a_saved_rubric(tmp_path):
    from langgraph.types import Command

    graph = api.metric_chat_graph({"configurable": {"save_dir": str(tmp_path), "name": "rigor_check"}})
    assert set(graph.get_graph().nodes) >= {"describe", "propose", "review", "revise", "save"}
    thread = {"configurable": {"thread_id": "t"}}

    async def chat():
        out = await graph.ainvoke({}, thread)
        assert out["__interrupt__"][0].value["kind"] == "describe"
        out = await graph.ainvoke(Command(resume="how rigorous a research idea is"), thread)
        assert out["__interrupt__"][0].value["kind"] == "review"
        return await graph.ainvoke(Command(resume="done"), thread)

    final = asyncio.run(chat())
    assert final["status"] == "done" and final["saved"] == str(tmp_path / "rigor_check.yaml")
    saved = sgieval.Rubric.from_yaml(tmp_path / "rigor_check.yaml")
    assert (
        saved.name == "rigor_check"
        and saved.model_dump() == sgieval.Rubric.model_validate(final["rubric"]).model_dump()
    )


# ------------------------------------------------------------------ Item 7
def test_evaluate_signature_is_typed_keywords():
    import inspect

    params = inspect.signature(sgieval.evaluate).parameters
    assert list(params)[:6] == ["request", "models", "judge", "agent_model", "benchmark", "k"]
    assert all(p.kind is p.KEYWORD_ONLY for n, p in params.items() if n != "request")
    assert not any(p.kind is p.VAR_KEYWORD for p in params.values())
    assert set(inspect.signature(sgieval.aevaluate).parameters) == set(params)


def test_load_run_and_to_pandas(tmp_path):
    run = sgieval.evaluate(
        CHEM, models="replay:o1-mini,replay:mistral", out_dir=tmp_path, run_id="lr", bootstrap_resamples=999
    )
    again = sgieval.load_run(tmp_path / "lr" / "report.md")  # a file in the run folder works too
    assert again.run_dir == tmp_path / "lr" and again.report == tmp_path / "lr" / "report.md" and not again.stopped
    assert [i.id for i in again.items] == [i.id for i in run.items] and len(again.items) == 25
    assert again.totals("aidan_accepted_answers") == {"replay:o1-mini": 296.0, "replay:mistral:latest": 107.0}
    assert again.metric_plan["primary"] == "aidan_accepted_answers"
    assert again.selection["filters"] == {"discipline": ["Chemistry"], "task": ["open_creativity"]}
    assert again.config.models == ["replay:o1-mini", "replay:mistral"]
    df = again.to_pandas()
    # 25 items x 2 models x 6 per-question SciAidanBench metrics, and 4 corpus-level (pooled) ones per model
    assert len(df) == 25 * 2 * 6 + 2 * 4 and set(df.metric) == {
        "aidan_accepted_answers",
        "aidan_published_count",
        "aidan_readme_score",
        "aidan_leaderboard_score",
        "aidan_mean_coherence_per_item",
        "aidan_mean_novelty_per_item",
        "aidan_mean_coherence",
        "aidan_mean_novelty",
        "aidan_mean_novelty_with_first",
        "aidan_leaderboard_total",
    }
    assert len(df[df.item_id == "*"]) == 8
    acc = df[df.metric == "aidan_accepted_answers"]
    assert acc.groupby("model")["value"].sum().to_dict() == {"replay:mistral:latest": 107.0, "replay:o1-mini": 296.0}
    assert set(acc.discipline) == {"Chemistry"} and set(acc.benchmark) == {"sciaidanbench"}
    assert len(again.to_pandas("responses")) == 50 and len(again.to_pandas("items")) == 25
    with pytest.raises(InputError, match="to_pandas: unknown records 'judges'"):
        again.to_pandas("judges")
    with pytest.raises(InputError, match=r"no run here \(no config.json\)"):
        sgieval.load_run(tmp_path)


def test_score_predefined_metrics_without_a_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = sgieval.score(
        ["x <answer> 0.250 </answer>", "0.25", "<answer>0.26</answer>"],
        "exact_match_normalised",
        references=[0.25, "0.25", "0.25"],
    )
    # normalised EM (METRICS.md D.11): numbers compared as numbers, rounded to the reference's 2 decimals
    assert [x.value for x in s] == [1.0, 1.0, 0.0] and {x.metric for x in s} == {"exact_match_normalised"}
    assert [x.item_id for x in s] == ["given/0", "given/1", "given/2"] and {x.model for x in s} == {"given"}
    # a SGI-Bench metric: deep-research exact match (METRICS.md A.1), no normalisation
    em = sgieval.score(
        ["Step 1. ... <answer>0.25</answer>", "<answer>0.250</answer>"], "em", references=["0.25", "0.25"], model="m"
    )
    assert [x.value for x in em] == [1.0, 0.0] and em[0].model == "m"
    # a corpus-level metric comes after the per-response scores
    from sgieval.benchmarks.sfbench import load_sfbench
    from sgieval.tests.conftest import FIXTURES

    items = load_sfbench(FIXTURES / "sfbench" / "claims.jsonl")
    replies = [json.dumps({"score": i.reference["score"], "explanation": "-"}) for i in items]
    qwk = sgieval.score(replies, "sfbench_qwk", items=items)
    assert [(x.item_id, x.value) for x in qwk] == [("*", 1.0)]
    assert list(tmp_path.iterdir()) == []  # no run folder


def test_score_rubric_with_a_scripted_judge_and_bad_input():
    from sgieval.tests.conftest import scripted

    crit = [
        "logical self-consistency",
        "theory and literature grounding",
        "precise problem definition",
        "discipline-aligned terminology",
        "methodological soundness",
        "risk awareness",
    ]
    reply = json.dumps(
        {
            "scores": [
                {"criterion": c, "score": 8 if k % 2 == 0 else 6, "rationale": "ok", "evidence": []}
                for k, c in enumerate(crit)
            ]
        }
    )
    judge = scripted("judge-1", [reply], role="judge")
    (s,) = sgieval.score(["We propose a controlled study ..."], "rigor", judge=judge)
    # weighted mean of 8, 6, 8, 6, 8, 6 with equal weights = 7, x 10 = 70 (0-100)
    assert (s.metric, s.value, s.judge, s.status) == ("rigor", 70.0, "judge-1", "ok")
    with pytest.raises(InputError, match="sgieval.score: no predefined metric or rubric called 'elegance'"):
        sgieval.score(["x"], "elegance")
    with pytest.raises(InputError, match="sgieval.score: 1 references for 2 responses"):
        sgieval.score(["a", "b"], "exact_match", references=["a"])
    with pytest.raises(InputError, match=r"metric mca does not apply to item sfbench/"):
        from sgieval.benchmarks.sfbench import load_sfbench
        from sgieval.tests.conftest import FIXTURES

        sgieval.score(["x"], "mca", items=load_sfbench(FIXTURES / "sfbench" / "claims.jsonl")[:1])


def test_public_names_and_light_import():
    import subprocess
    import sys

    for name in (
        "evaluate",
        "aevaluate",
        "score",
        "ascore",
        "load_run",
        "RunRecords",
        "Item",
        "Response",
        "Score",
        "MetricSpec",
        "Rubric",
        "RunConfig",
        "Metric",
        "Benchmark",
        "Vocabulary",
        "register_benchmark",
        "get_benchmark",
        "list_benchmarks",
    ):
        assert name in sgieval.__all__ and getattr(sgieval, name) is not None, name
    assert sgieval.get_benchmark("sgi-bench").primary["deep_research"] == "em"
    code = "import sys, sgieval; print(sorted(m for m in sys.modules if m.startswith(('sgieval.', 'langgraph', 'langchain'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = json.loads(out.strip().replace("'", '"'))
    # only the records (sgieval.core.*): no agents, graphs, models, langchain or langgraph until they are used
    assert "sgieval.core.records" in loaded and all(
        m == "sgieval.core" or m.startswith("sgieval.core.") for m in loaded
    ), loaded
