"""The Python API (``sgieval.evaluate``) and the LangGraph Studio factories named in langgraph.json (issue 5, item 6)."""

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
    # issue 2: accepted answers on the 25 chemistry questions, totals per stored model
    assert run.totals("aidan_accepted_answers") == {
        "replay:o1-mini": 296.0, "replay:openai/4o": 274.0, "replay:phi4:latest": 200.0,
        "replay:llama3.3:latest": 194.0, "replay:qwen2.5:latest": 180.0, "replay:mistral:latest": 107.0}
    # 296 / 25 = 11.84 per question
    assert run.means("aidan_accepted_answers")["replay:o1-mini"] == pytest.approx(11.84)
    assert run.selection["filters"] == {"discipline": ["Chemistry"], "task": ["open_creativity"]}
    assert run.metric_plan["primary"] == "aidan_accepted_answers"


def test_evaluate_with_model_strings_and_without_confirmation(tmp_path):
    run = sgieval.evaluate(CHEM, models="replay:o1-mini, replay:mistral", out_dir=tmp_path, run_id="two",
                           yes=False, bootstrap_resamples=999)
    # no confirm callback and yes=False: the run stops at the metric confirmation, nothing evaluated
    assert run.stopped and run.report is None and run.responses == [] and len(run.items) == 25
    run = sgieval.evaluate(CHEM, models=["replay:o1-mini", "replay:mistral"], out_dir=tmp_path, run_id="three",
                           yes=False, confirm=lambda payload: payload["primary"] == "aidan_accepted_answers",
                           bootstrap_resamples=999)
    assert run.totals("aidan_accepted_answers") == {"replay:o1-mini": 296.0, "replay:mistral:latest": 107.0}


def test_evaluate_rejects_unknown_options(tmp_path):
    with pytest.raises(InputError, match=r"sgieval.evaluate: unknown option\(s\) \['colour'\]"):
        sgieval.evaluate(CHEM, out_dir=tmp_path, colour="red")
    with pytest.raises(InputError, match="sgieval.evaluate: k: Value error, k must be >= 1 \\(or omitted for all matches\\)"):
        sgieval.evaluate(CHEM, out_dir=tmp_path, k=0)


def test_evaluate_inside_a_running_event_loop(tmp_path):
    async def inside():
        return sgieval.evaluate(CHEM, models="replay:o1-mini", out_dir=tmp_path, run_id="loop",
                                bootstrap_resamples=999)

    run = asyncio.run(inside())
    assert run.totals("aidan_accepted_answers") == {"replay:o1-mini": 296.0}


def test_langgraph_json_names_importable_factories(tmp_path):
    spec = json.loads((REPO / "langgraph.json").read_text())
    assert spec["graphs"] == {"evaluate": "sgieval.api:evaluation_graph",
                              "metric_chat": "sgieval.api:metric_chat_graph"}
    assert spec["dependencies"] == ["."]
    graph = api.evaluation_graph({"configurable": {"request": CHEM, "out_dir": str(tmp_path), "yes": True,
                                                            "models": "replay:o1-mini", "run_id": "studio",
                                                            "bootstrap_resamples": 999}})
    assert set(graph.get_graph().nodes) >= {"questioning", "customisation", "confirm", "evaluation", "reporting"}
    state = asyncio.run(graph.ainvoke({}))
    assert state["report"] == str(tmp_path / "studio" / "report.md")
    assert len(state["selection"]["item_ids"]) == 25


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
    assert saved.name == "rigor_check" and saved.model_dump() == sgieval.Rubric.model_validate(final["rubric"]).model_dump()
