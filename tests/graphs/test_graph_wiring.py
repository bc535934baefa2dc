"""graphs/ is wiring: the evaluation graph's nodes run the agent steps of agents/run.py with the
run context each invocation brings (LangGraph ``context``); the context given to ``build_graph`` is only the
fallback, and a graph without either says so."""

from __future__ import annotations

import asyncio

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from sgieval.core import RunConfig, SgievalError
from sgieval.graphs.evaluate import build_graph, make_runtime

CHEM = "Which model is the most creative in chemistry?"


def _runtime(tmp_path, name, sciaidan_dir):
    cfg = RunConfig(
        run_id=name,
        request=CHEM,
        k=3,
        data_dir=str(sciaidan_dir.parent),
        out_dir=str(tmp_path),
        yes=True,
        models=["replay:o1-mini"],
        bootstrap_resamples=99,
    )
    return make_runtime(cfg)


def test_the_invocation_context_is_the_run_the_nodes_use(tmp_path, sciaidan_dir):
    built_with, invoked_with = _runtime(tmp_path, "a", sciaidan_dir), _runtime(tmp_path, "b", sciaidan_dir)
    graph = build_graph(built_with, InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}
    state = asyncio.run(graph.ainvoke({}, thread, context=invoked_with, interrupt_before=["customisation"]))
    assert len(state["selection"]["item_ids"]) == 3
    assert [i.id for i in invoked_with.store.read("items")] == state["selection"]["item_ids"]
    assert not (tmp_path / "a" / "items.jsonl").exists()  # the context given at build time was not used


def test_without_a_run_context_the_graph_says_how_to_give_one():
    graph = build_graph(None, InMemorySaver())
    with pytest.raises(SgievalError, match="invoked without a run context.*context=make_runtime"):
        asyncio.run(graph.ainvoke({}, {"configurable": {"thread_id": "t"}}))
