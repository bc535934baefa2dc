"""The agent-model path: the customisation agent is offered retrieval novelty when a corpus (or
the search tool) is there, and a plan choosing it ranks by retrieval_novelty.  A scripted agent model runs the real
graph; the request does not use the literal "compared with my papers" wording, so only the agent's choice adds it."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from sgieval.agents.customisation import run_customisation
from sgieval.core import Item, RunConfig
from sgieval.graphs.evaluate import execute, make_runtime
from sgieval.models.base import NamedModel
from sgieval.tests.metric_pool.test_retrieval_novelty import PAPERS
from sgieval.metric_pool.registry import find as find_metric


def literature_novelty(request: str) -> bool:
    """Whether the request names the quality the registered retrieval_novelty metric measures."""
    return bool(find_metric(("*", "retrieval_novelty")).asked(request))


REQUEST = "Which model proposes the freshest ideas, judged against the published work in my folder?"
PLAN = {
    "primary": "retrieval_novelty",
    "added": ["retrieval_novelty"],
    "qualities": ["novelty against the literature"],
    "reason": "freshness against the user's papers is retrieval novelty",
}


class RecordingAgent(FakeMessagesListChatModel):
    """Scripted agent model (replies in order) that records every prompt and accepts bind_tools."""

    seen: list = []

    def bind_tools(self, tools, **kw):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001
        self.seen.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


def agent(replies: list[AIMessage]) -> NamedModel:
    return NamedModel(
        name="scripted-agent", role="agent", provider="scripted-agent", chat=RecordingAgent(responses=replies, seen=[])
    )


def _files(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    (tmp_path / "papers").mkdir()
    for name, text in PAPERS.items():
        (tmp_path / "papers" / name).write_text(text)
    rows = [
        {"id": "i1", "prompt": "Propose a research idea about water.", "task": "idea", "discipline": "materials"},
        {"id": "i2", "prompt": "Propose a research idea about cells.", "task": "idea", "discipline": "biology"},
    ]
    (tmp_path / "ideas.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ideas = {
        "close": ["Graphene membranes filter seawater salt.", "Enzymes fold proteins."],
        "far": ["Enzymes could power tiny submarines.", "Graphene sails catch solar wind."],
    }
    models = []
    for model, texts in ideas.items():
        (tmp_path / f"{model}.jsonl").write_text(
            "".join(json.dumps({"item_id": f"jsonl:ideas/{r['id']}", "text": t}) + "\n" for r, t in zip(rows, texts))
        )
        models.append(f"replay:{tmp_path / f'{model}.jsonl'}")
    return tmp_path / "papers", tmp_path / "ideas.jsonl", models


def test_the_request_is_not_caught_by_the_literal_rule():
    assert not literature_novelty(REQUEST)


def test_agent_chooses_retrieval_novelty_in_the_real_graph(tmp_path):
    papers, bench, models = _files(tmp_path)
    a = agent(
        [
            AIMessage(
                content="",
                tool_calls=[
                    {
                        "name": "submit_selection_plan",
                        "id": "c1",
                        "type": "tool_call",
                        "args": {"filters": {}, "reason": "every idea"},
                    }
                ],
            ),
            AIMessage(content=json.dumps(PLAN)),
            AIMessage(content="The far ideas are the least similar to the papers."),
        ]
    )
    cfg = RunConfig(
        run_id="agent-novelty",
        request=REQUEST,
        benchmarks=[str(bench)],
        corpus=str(papers),
        models=models,
        agent_model="scripted-agent",
        out_dir=str(tmp_path / "runs"),
        yes=True,
        bootstrap_resamples=999,
        tools=["search", "pdf"],
    )
    state = asyncio.run(execute(make_runtime(cfg, agent=a)))
    plan = state["metric_plan"]
    assert plan["planner"] == "scripted-agent"
    assert plan["added"] == ["retrieval_novelty"] and plan["primary"] == "retrieval_novelty"
    # the customisation prompt offered the registered metric, with where it searches
    human = next(str(m[1].content) for m in a.chat.seen if "Further registered metrics" in str(m[1].content))
    assert "- retrieval_novelty (objective, 0-10)" in human
    assert (
        f"retrieval_novelty searches the papers in {papers} (nearest by embedding similarity, fused with BM25)" in human
    )
    report = Path(state["report"]).read_text()
    assert "## Ranking by retrieval_novelty (scale 0-10, higher is better)" in report
    ranking = report.split("## Ranking by retrieval_novelty")[1].split("\n## ")[0]
    assert [
        ln.split("|")[2].strip() for ln in ranking.splitlines() if ln.startswith("| 1 |") or ln.startswith("| 2 |")
    ] == ["replay:far", "replay:close"]
    assert "## Retrieved works" in report
    run = Path(state["report"]).parent
    scores = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    close1 = next(
        s
        for s in scores
        if s["metric"] == "retrieval_novelty" and s["model"] == "replay:close" and s["item_id"] == "jsonl:ideas/i1"
    )
    titles = sorted(w["title"] for w in close1["evidence"][0]["works"])
    assert titles == ["Graphene desalination", "Graphene filters", "Membrane fouling", "Salt membranes"]
    # S_inn = clip(10 (1 - mean similarity), 0, 10) of the similarities the evidence lists
    sims = [w["similarity"] for w in close1["evidence"][0]["works"]]
    assert math.isclose(close1["value"], 10 * (1 - sum(sims) / 4), abs_tol=1e-5)


ITEMS = [Item(id="jsonl:ideas/i1", benchmark="jsonl:ideas", task="idea", prompt="Propose a research idea.")]


async def test_not_offered_without_corpus_or_search_and_a_choice_of_it_is_noted():
    a = agent([AIMessage(content=json.dumps({**PLAN, "primary": "rigor", "qualities": ["rigor"]}))])
    plan, metrics, _ = await run_customisation("Which model has the most rigorous ideas?", ITEMS, agent=a)
    assert "Further registered metrics" not in str(a.chat.seen[0][1].content)
    assert plan.added == [] and "retrieval_novelty" not in [s.name for m in metrics for s in m.specs]
    assert (
        "agent scripted-agent chose the metric 'retrieval_novelty', which is not offered here (retrieval "
        "novelty needs --corpus <folder> or the search tool)"
    ) in plan.notes


def test_a_stored_plan_names_its_added_metrics_under_pool_or_added():
    from sgieval.agents.customisation import MetricPlan

    assert MetricPlan.model_validate({"pool": ["retrieval_novelty"]}).added == ["retrieval_novelty"]
    assert MetricPlan.model_validate({"added": ["retrieval_novelty"]}).added == ["retrieval_novelty"]
    assert "pool" not in MetricPlan(added=["retrieval_novelty"]).model_dump()


async def test_offered_with_a_corpus_and_chosen_by_name_in_added(tmp_path):
    a = agent([AIMessage(content=json.dumps({"primary": "", "added": ["retrieval_novelty"]}))])
    plan, metrics, _ = await run_customisation(
        "Are these ideas new?", ITEMS, agent=a, options={"corpus": str(tmp_path)}
    )
    assert (
        f"retrieval_novelty searches the papers in {tmp_path} (nearest by embedding similarity, fused with BM25)"
        in str(a.chat.seen[0][1].content)
    )
    assert plan.added == ["retrieval_novelty"]
    assert [s.name for m in metrics for s in m.specs][-3:] == [
        "retrieval_novelty",
        "retrieval_novelty_reward",
        "ttrl_reward",
    ]


async def test_offered_with_the_search_tool_and_no_corpus():
    from types import SimpleNamespace

    a = agent([AIMessage(content=json.dumps(PLAN))])
    plan, _, _ = await run_customisation(
        "Are these ideas new given prior publications?",
        ITEMS,
        agent=a,
        tools=SimpleNamespace(names=["web_search", "read_pdf"], tools=[]),
    )
    human = str(a.chat.seen[0][1].content)
    assert "retrieval_novelty searches web_search (the web; offline its local index)" in human
    assert plan.added == ["retrieval_novelty"] and plan.primary == "retrieval_novelty"
    assert plan.qualities == ["novelty against the literature"]
