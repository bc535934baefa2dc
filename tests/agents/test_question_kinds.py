"""Question kinds: the offline rules and the agent model's label agree on a test set of requests; an unknown kind is
answered as a ranking and the Run table says so."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from typer.testing import CliRunner

from sgieval.agents.question_kind import KINDS, NOT_RECOGNISED, classify, kind_line
from sgieval.agents.questioning import run_questioning
from sgieval.benchmarks.catalog import load_catalog
from sgieval.cli import app
from sgieval.tests.conftest import FIXTURES, scripted

MODELS = ["replay:o1-mini", "replay:phi4:latest", "replay:llama3.3:latest", "replay:openai/4o", "replay:qwen2.5:latest"]

TEST_SET = [
    ("Which model is the most creative in chemistry?", "ranking"),
    ("creative in astrophysics", "ranking"),
    ("Which model has the best rigor in idea generation across disciplines?", "ranking"),
    ("Compare the models on physics", "ranking"),
    ("Where do the models disagree most in chemistry?", "where"),
    ("In which fields does o1-mini lead?", "where"),
    ("Which topics favour llama3.3?", "where"),
    ("Is o1-mini better than phi4 at physics?", "yes_no"),
    ("Does phi4 beat qwen2.5 in chemistry?", "yes_no"),
    ("Is 4o worse than llama3.3?", "yes_no"),
    ("How good is llama3.3 at physics?", "how_good"),
    ("How well does phi4 do in biology?", "how_good"),
    ("How much better is o1-mini than 4o at chemistry?", "how_much"),
    ("What is the effect size between o1-mini and phi4?", "how_much"),
    ("Why does o1-mini beat phi4 in physics?", "why"),
    ("Which criteria make o1-mini more rigorous?", "why"),
    ("What drives o1-mini's lead in physics?", "why"),
]


@pytest.fixture(scope="module")
def sgi_catalog(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    shutil.copytree(FIXTURES / "sgi", d / "sgi-bench")
    return load_catalog(["sgi-bench"], d)


def test_every_kind_is_in_the_test_set():
    assert {k for _r, k in TEST_SET} == set(KINDS)


@pytest.mark.parametrize("request_, kind", TEST_SET)
def test_offline_rules_and_the_agent_label_agree(sgi_catalog, request_, kind):
    assert classify(request_, MODELS) == (kind, "")
    # the agent model answers with its plan (structured output); the plan's label is the kind
    agent = scripted("json-planner", [json.dumps({"filters": {"task": ["idea_generation"]}, "question_kind": kind})])
    plan, _items, trace = asyncio.run(run_questioning(request_, sgi_catalog, agent=agent, models=MODELS))
    assert trace["path"] == "structured"
    assert (plan.question_kind, plan.kind_note, plan.kind_by) == (kind, "", "agent model json-planner")


def test_the_tool_calling_agent_submits_the_kind_with_its_plan(sgi_catalog):
    from langchain_core.messages import AIMessage

    from sgieval.tests.agents.test_questioning import call, tool_agent

    args = {"filters": {"task": ["idea_generation"]}, "reason": "ideas", "question_kind": "how_much"}
    agent = tool_agent([call("submit_selection_plan", args, "c1"), AIMessage(content="done")])
    plan, _items, trace = asyncio.run(run_questioning("How much better is o1-mini?", sgi_catalog, agent=agent))
    assert trace["path"] == "tools" and (plan.question_kind, plan.kind_by) == ("how_much", "agent model tool-planner")


def test_an_agent_without_a_label_gets_the_offline_kind_and_an_unknown_label_a_ranking(sgi_catalog):
    request = "Is o1-mini better than phi4 at physics?"
    reply = {"filters": {"task": ["idea_generation"]}}
    plan, _i, _t = asyncio.run(
        run_questioning(request, sgi_catalog, agent=scripted("p", [json.dumps(reply)]), models=MODELS)
    )
    assert (plan.question_kind, plan.kind_by) == ("yes_no", "offline rules")
    bad = scripted("p", [json.dumps({**reply, "question_kind": "comparison"})])
    plan, _i, _t = asyncio.run(run_questioning(request, sgi_catalog, agent=bad, models=MODELS))
    assert (plan.question_kind, plan.kind_note) == ("ranking", NOT_RECOGNISED)


def test_a_yes_no_question_needs_a_named_model():
    # no model named: a question about the models' level, not a comparison of two of them
    assert classify("Are the models better at physics than chemistry?", MODELS)[0] == "how_good"
    assert classify("Is o1-mini better than the others?", MODELS)[0] == "yes_no"
    assert classify("", MODELS) == ("ranking", "")


def test_an_unknown_kind_is_answered_as_a_ranking_and_the_run_table_says_so(tmp_path):
    request = "When was o1-mini released?"
    assert classify(request, MODELS) == ("ranking", NOT_RECOGNISED)
    res = CliRunner().invoke(app, ["ask", request, "--all", "--k", "6", "--yes", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    text = next(tmp_path.glob("*/report.md")).read_text()
    assert (
        "| question kind | ranking (which model is best; offline rules; asked kind not recognised; answered as a "
        "ranking) |"
    ) in text
    assert kind_line("where") == "where (where the models disagree; offline rules)"
    assert "\n- **Verdict:** " in text.split("## Run")[0]  # the ranking's answer, its verdict first
