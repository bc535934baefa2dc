"""Questioning agent: catalog tools, the tool-calling plan loop, the structured-output path and the offline fallback.  Scripted chat models stand in for the agent model."""

from __future__ import annotations

import asyncio
import json
import shutil
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage

from sgieval.agents.questioning import catalog_tools, run_questioning
from sgieval.benchmarks.catalog import load_catalog
from sgieval.models.base import NamedModel
from sgieval.tests.conftest import FIXTURES, scripted

REQUEST = "Which model has the best rigor in idea generation across disciplines?"


@pytest.fixture(scope="module")
def sgi_catalog(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    shutil.copytree(FIXTURES / "sgi", d / "sgi-bench")
    return load_catalog(["sgi-bench"], d)


class ToolCallingFake(FakeMessagesListChatModel):
    """A scripted chat model that accepts ``bind_tools`` and records every message list it was sent."""

    seen: list = []
    bound: list = []

    def bind_tools(self, tools, **kw):  # noqa: D401 - scripted: the replies are fixed
        self.bound.append([getattr(t, "name", None) for t in tools])
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def tool_agent(replies: list[AIMessage], name: str = "tool-planner") -> NamedModel:
    chat = ToolCallingFake(responses=replies, seen=[], bound=[])
    return NamedModel(name=name, role="agent", chat=chat, provider=f"scripted-{name}")


def call(name: str, args: dict[str, Any], cid: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": cid, "type": "tool_call"}])


def run(coro):
    return asyncio.run(coro)


def test_catalog_tools_answer_from_the_catalog(sgi_catalog):
    tools = {t.name: t for t in catalog_tools(sgi_catalog, seed=0)}
    assert sorted(tools) == ["facet_counts", "sample_items", "search_items"]
    # the fixtures: 13 items; idea_generation has one chemistry and one physics item
    assert tools["facet_counts"].invoke({"facet": "task"}) == json.dumps(
        {
            "deep_research": 4,
            "dry_experiment": 2,
            "experimental_reasoning": 3,
            "idea_generation": 2,
            "wet_experiment": 2,
        }
    )
    assert (
        tools["facet_counts"].invoke({"facet": "discipline", "filters": {"task": ["idea_generation"]}})
        == '{"chemistry": 1, "physics": 1}'
    )
    assert tools["facet_counts"].invoke({"facet": "colour"}) == (
        "error: catalog: unknown facet 'colour'. Fix: use one of "
        "('benchmark', 'task', 'discipline', 'direction', 'type')"
    )
    hits = json.loads(tools["search_items"].invoke({"text": "ethylene Faradaic"}))
    assert [h["id"] for h in hits] == ["sgi-bench/SGI_IdeaGeneration_9001"]
    assert hits[0]["task"] == "idea_generation" and hits[0]["discipline"] == "chemistry"
    # 4 deep-research items, one per discipline stratum (astronomy, chemistry, life, physics); k=2:
    # quotas 0.5 each, floors 0, the 2 remaining seats go to the first strata in name order
    # (astronomy -> 9004, chemistry -> 9002)
    out = json.loads(tools["sample_items"].invoke({"filters": {"task": ["deep_research"]}, "k": 2}))
    assert out == {
        "matches": 4,
        "k": 2,
        "sampling": "stratified",
        "item_ids": ["sgi-bench/SGI_DeepResearch_9002", "sgi-bench/SGI_DeepResearch_9004"],
    }


def test_tool_calling_agent_explores_then_submits_a_plan(sgi_catalog):
    agent = tool_agent(
        [
            call("facet_counts", {"facet": "task"}, "c1"),
            call("search_items", {"text": "research idea", "filters": {"task": ["idea_generation"]}, "limit": 5}, "c2"),
            call(
                "submit_selection_plan",
                {
                    "filters": {"task": ["idea_generation"], "discipline": ["Chemistry", "Physics", "Alchemy"]},
                    "reason": "idea-generation items in every discipline",
                },
                "c3",
            ),
        ]
    )
    plan, items, trace = run(run_questioning(REQUEST, sgi_catalog, seed=3, agent=agent))
    assert trace["path"] == "tools"
    assert plan.planner == "tool-planner"
    assert plan.filters == {"task": ["idea_generation"], "discipline": ["chemistry", "physics"]}
    assert plan.reason == (
        "idea-generation items in every discipline (dropped discipline values not in the catalog: ['Alchemy'])"
    )
    assert (plan.k, plan.seed, plan.sampling) == (None, 3, "all")
    assert [i.id for i in items] == ["sgi-bench/SGI_IdeaGeneration_9001", "sgi-bench/SGI_IdeaGeneration_9002"]
    assert [c["tool"] for c in trace["tool_calls"]] == ["facet_counts", "search_items", "submit_selection_plan"]
    # the tools were bound, and each tool result went back to the model as a ToolMessage with its call id
    chat = agent.chat
    assert chat.bound[0] == ["facet_counts", "search_items", "sample_items", "submit_selection_plan"]
    second_turn = chat.seen[1]
    assert isinstance(second_turn[-1], ToolMessage) and second_turn[-1].tool_call_id == "c1"
    assert json.loads(second_turn[-1].content)["idea_generation"] == 2
    third_turn = chat.seen[2]
    found = json.loads(third_turn[-1].content)
    assert {h["id"] for h in found} == {"sgi-bench/SGI_IdeaGeneration_9001", "sgi-bench/SGI_IdeaGeneration_9002"}


def test_tool_plan_is_deterministic_for_a_seed_and_k_overrides(sgi_catalog):
    def plan_with(seed: int, k: int | None):
        agent = tool_agent(
            [
                call(
                    "submit_selection_plan",
                    {"filters": {"task": ["deep_research"]}, "k": 3, "reason": "deep research"},
                    "c1",
                )
            ]
        )
        return run(run_questioning("deep research", sgi_catalog, k=k, seed=seed, agent=agent))

    p1, items1, _ = plan_with(0, None)
    p2, items2, _ = plan_with(0, None)
    assert [i.id for i in items1] == [i.id for i in items2]
    # k=3 of 4 single-item strata: quotas 0.75, floors 0, seats to astronomy, chemistry, life (name order)
    assert [i.id for i in items1] == [
        "sgi-bench/SGI_DeepResearch_9002",
        "sgi-bench/SGI_DeepResearch_9003",
        "sgi-bench/SGI_DeepResearch_9004",
    ]
    assert (p1.k, p1.sampling) == (3, "stratified")
    # --k wins over the agent's k; k >= matches selects everything ("all")
    p3, items3, _ = plan_with(0, 10)
    assert (p3.k, p3.sampling, len(items3)) == (10, "all", 4)


def test_plain_text_json_plan_is_accepted(sgi_catalog):
    agent = tool_agent(
        [AIMessage(content='Here is my plan: {"filters": {"task": ["idea_generation"]}, "reason": "ideas"}')]
    )
    plan, items, trace = run(run_questioning(REQUEST, sgi_catalog, agent=agent))
    assert plan.filters == {"task": ["idea_generation"]} and len(items) == 2
    assert trace["tool_calls"][0]["tool"] is None


def test_unknown_tool_is_reported_to_the_model(sgi_catalog):
    agent = tool_agent(
        [
            call("web_search", {"q": "x"}, "c1"),
            call("submit_selection_plan", {"filters": {"task": ["wet_experiment"]}}, "c2"),
        ]
    )
    plan, items, trace = run(run_questioning("wet lab", sgi_catalog, agent=agent))
    assert trace["tool_calls"][0]["result"] == (
        "error: unknown tool 'web_search'; use one of ['facet_counts', 'sample_items', 'search_items', "
        "'submit_selection_plan']"
    )
    assert [i.task for i in items] == ["wet_experiment", "wet_experiment"]


def test_agent_that_never_submits_falls_back_to_offline(sgi_catalog):
    agent = tool_agent([call("facet_counts", {"facet": "task"}, f"c{i}") for i in range(8)])
    plan, items, trace = run(run_questioning(REQUEST, sgi_catalog, agent=agent))
    assert trace["path"] == "offline"
    assert trace["fallback"] == (
        "agent tool-planner gave no usable plan (no submit_selection_plan call within 8 model turns); offline plan used"
    )
    # offline vocabulary: "idea generation" -> task idea_generation
    assert plan.filters == {"task": ["idea_generation"]} and plan.planner == "offline"
    assert plan.reason.startswith("agent tool-planner gave no usable plan")
    assert len(items) == 2


def test_model_without_tool_calling_uses_structured_output(sgi_catalog):
    agent = scripted("json-planner", [json.dumps({"filters": {"task": ["idea_generation"]}, "reason": "ideas"})])
    plan, items, trace = run(run_questioning(REQUEST, sgi_catalog, agent=agent))
    assert trace["path"] == "structured" and len(trace["agent_raw"]) == 1
    assert plan.filters == {"task": ["idea_generation"]} and plan.planner == "json-planner"
    assert len(items) == 2


def test_offline_plan_without_agent(sgi_catalog):
    plan, items, trace = run(run_questioning(REQUEST, sgi_catalog, k=1, seed=0))
    assert trace == {
        "path": "offline",
        "reading": {
            "understood": {"rigor": "quality rigor", "idea generation": "task=idea_generation"},
            "near_misses": {},
            "unknown": [],
        },
    }
    assert plan.filters == {"task": ["idea_generation"]}
    # 2 strata (chemistry, physics), k=1: quotas 0.5, the seat goes to chemistry (name order)
    assert [i.id for i in items] == ["sgi-bench/SGI_IdeaGeneration_9001"]
    assert plan.sampling == "stratified"
