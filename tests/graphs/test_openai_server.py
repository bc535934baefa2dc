"""The rigor graph through the real client path: ``openai:<name>`` model strings -> the ``openai:`` transport
(:class:`~sgieval.models.openai_direct.ChatOpenAIDirect`, which sends what langchain-openai's ChatOpenAI sends) ->
HTTP chat completions (with tool calls) against a local OpenAI-compatible mock server started by the test on
127.0.0.1.

The server answers by the requested model name:

- ``planner`` (agent): offered the catalog tools, it first calls ``facet_counts`` and, once a tool result is in the
  conversation, ``submit_selection_plan``; the customisation agent (offered web_search/read_pdf, or no tools) gets a
  JSON metric plan at once; the narrative request gets a narrative citing table numbers;
- ``model-a`` / ``model-b`` (targets): the stored fixture replies of fixture-model-a / fixture-model-b for the
  item whose prompt is the last user message;
- ``judge``: :func:`tests.graphs.test_rigor_scripted.judge_text` of the prompt (longer hypothesis wins every
  pairwise dimension; rubric criteria 8,7,8,... for replies over 600 characters, else 3,2,3,...).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path

import pytest

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.benchmarks.catalog import load_catalog
from sgieval.core import RunConfig
from sgieval.graphs.evaluate import execute, make_runtime
from sgieval.models.context import current_call_context
from sgieval.tests.graphs.test_rigor_scripted import REQUEST, RESPONSES, RIGOR_CRITERIA, judge_text, sgi_data

NARRATIVE = (
    "openai:model-a is the more rigorous model on the 2 idea-generation items: rigor mean 75 (0-100) "
    "against 25 for openai:model-b."
)


def _text(content) -> str:
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


class Server:
    """Reply logic of the mock server (see the module docstring); records every request body."""

    def __init__(self, data_dir: Path):
        cat = load_catalog(["sgi-bench"], data_dir)
        stored = {}
        for m in ("a", "b"):
            for line in (RESPONSES / f"fixture-model-{m}.jsonl").read_text().splitlines():
                rec = json.loads(line)
                stored[(m, rec["item_id"])] = rec["text"]
        self.by_prompt = {i.prompt: i.id for i in cat.items}
        self.stored = stored
        self.bodies: list[dict] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict, index: int):
        with self.lock:
            self.bodies.append(body)
        msgs = body["messages"]
        system = "\n".join(_text(m.get("content")) for m in msgs if m["role"] == "system")
        user = "\n".join(_text(m.get("content")) for m in msgs if m["role"] == "user")
        model = body["model"]
        if model == "planner":
            offered = {t["function"]["name"] for t in body.get("tools") or []}
            if "submit_selection_plan" in offered:
                if not any(m["role"] == "tool" for m in msgs):
                    return {
                        "content": None,
                        "tool_calls": [
                            {
                                "name": "facet_counts",
                                "id": "call_1",
                                "arguments": {"facet": "discipline", "filters": {"task": ["idea_generation"]}},
                            }
                        ],
                    }
                return {
                    "content": None,
                    "tool_calls": [
                        {
                            "name": "submit_selection_plan",
                            "id": "call_2",
                            "arguments": {
                                "filters": {"task": ["idea_generation"]},
                                "reason": "idea-generation items of every discipline",
                            },
                        }
                    ],
                }
            if "metric customisation agent" in system:
                return json.dumps({"primary": "rigor", "qualities": ["rigor"], "reason": "starter rigor rubric"})
            return NARRATIVE
        if model in ("model-a", "model-b"):
            last = _text(msgs[-1].get("content"))
            return self.stored.get((model[-1], self.by_prompt.get(last, "")), "no stored reply")
        if model == "judge":
            return judge_text(system, user)
        return "unknown model"


@pytest.fixture(scope="module")
def served_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("openai")
    data = sgi_data(tmp)
    logic = Server(data)
    mp = pytest.MonkeyPatch()
    mp.setattr(current_call_context(), "use_cache", False)  # outside the run: every call must reach the server
    mp.delenv("OPENAI_API_KEY", raising=False)
    try:
        with MockOpenAI(replies=logic) as mock:
            cfg = RunConfig(
                run_id="served",
                request=REQUEST,
                benchmarks=["sgi-bench"],
                data_dir=str(data),
                out_dir=str(tmp / "runs"),
                yes=True,
                bootstrap_resamples=999,
                base_url=mock.url,
                models=["openai:model-a", "openai:model-b"],
                judges=["openai:judge"],
                agent_model="openai:planner",
            )
            rt = make_runtime(cfg)
            state = asyncio.run(execute(rt))
            stats = mock.stats()
    finally:
        mp.undo()
    return rt, state, Path(state["report"]).read_text(), logic, stats


def test_models_are_real_openai_clients(served_run):
    rt, state, report, logic, stats = served_run
    from sgieval.models.openai_direct import ChatOpenAIDirect

    assert rt.agent.name == "openai:planner"
    assert [t.name for t in rt.targets] == ["openai:model-a", "openai:model-b"]
    assert [j.name for j in rt.judges] == ["openai:judge"]
    for m in [rt.agent, *rt.targets, *rt.judges]:  # the default transport of openai: models, on the run's server
        assert isinstance(m.chat, ChatOpenAIDirect), m
        assert (m.chat.model_name, m.chat.openai_api_base) == (m.name.removeprefix("openai:"), rt.config.base_url)
    by_model = {}
    for b in logic.bodies:
        by_model[b["model"]] = by_model.get(b["model"], 0) + 1
    # planner: 2 tool-calling turns + metric plan + narrative; targets: 2 items each;
    # judge: per (target, item) 2 pairwise calls + 1 rubric call = 3, x 4 = 12
    assert by_model == {"planner": 4, "model-a": 2, "model-b": 2, "judge": 12}
    assert stats == {"requests": 20, "served": 20, "429": 0, "500": 0, "hung": 0}
    tool_bodies = [
        b
        for b in logic.bodies
        if b["model"] == "planner"
        and b.get("tools")
        and "submit_selection_plan" in {t["function"]["name"] for t in b["tools"]}
    ]
    assert [sorted(t["function"]["name"] for t in tool_bodies[0]["tools"])] == [
        ["facet_counts", "sample_items", "search_items", "submit_selection_plan"]
    ]
    # the second turn carried the tool result back as a "tool" message with the call id
    tool_msg = [m for m in tool_bodies[1]["messages"] if m["role"] == "tool"]
    assert tool_msg[0]["tool_call_id"] == "call_1" and json.loads(tool_msg[0]["content"]) == {
        "chemistry": 1,
        "physics": 1,
    }


def test_the_runs_requests_are_what_chat_openai_sends(served_run):
    """The transport promises ChatOpenAI's requests, not its class (tests/models/test_openai_contract.py checks it
    case by case): every request of the run, resent by langchain-openai's ChatOpenAI (its conversation read back
    with langchain-core's ``convert_to_messages``, its other fields as call options), is the same body after the
    adaptation for servers other than api.openai.com (``compat_payload``; the mock's URL is one)."""
    rt, state, report, logic, stats = served_run
    from langchain_core.messages import convert_to_messages
    from langchain_openai import ChatOpenAI

    from sgieval.models.openai_direct import compat_payload, wire_body

    bodies = list(logic.bodies)

    async def resend() -> list[dict]:
        with MockOpenAI(replies=lambda body, index: "ok", log_bodies=True) as mock:
            for body in bodies:
                options = {k: v for k, v in body.items() if k not in ("model", "messages", "stream")}
                chat = ChatOpenAI(model=body["model"], base_url=mock.url, api_key="k", max_retries=0)
                await chat.ainvoke(convert_to_messages(body["messages"]), **options)
            return mock.log()

    log = asyncio.run(resend())
    assert len(log) == len(bodies) == 20
    kinds = set()
    for sent, sdk in zip(bodies, log):
        assert sent == json.loads(wire_body(compat_payload(json.loads(sdk["body"])))), sent["model"]
        kinds |= {m["role"] for m in sent["messages"]} | ({"tools"} if sent.get("tools") else set())
    assert kinds >= {"system", "user", "assistant", "tool", "tools"}  # tool calls and results went both ways


def test_selection_rubric_scores_and_report_over_http(served_run):
    rt, state, report, logic, stats = served_run
    assert state["selection"]["filters"] == {"task": ["idea_generation"]}
    assert state["selection"]["planner"] == "openai:planner"
    [rubric] = state["metric_plan"]["custom"]
    assert [c["name"] for c in rubric["criteria"]] == RIGOR_CRITERIA
    rigor = {(s.model, s.item_id): s for s in rt.store.read("scores") if s.metric == "rigor"}
    assert len(rigor) == 4 and all(s.ok for s in rigor.values())
    for (model, _), s in rigor.items():
        # 10 x mean(8, 7, 8, 7, 8, 7) = 75 for model-a's full ideas; 10 x mean(3, 2, 3, 2, 3, 2) = 25 for model-b
        assert s.value == pytest.approx(75.0 if model == "openai:model-a" else 25.0)
        assert set(s.details["criteria"]) == set(RIGOR_CRITERIA)
        assert "risk awareness " in s.rationale and s.judge == "openai:judge"
    responses = {r.model: r for r in rt.store.read("responses")}
    assert responses["openai:model-a"].tokens["output"] > 0  # usage came back through the client
    for section in ("## Answer", "## Ranking by rigor", "## Rubric breakdown: rigor", "## Limitations"):
        assert section in report
    assert NARRATIVE in report
    assert re.search(r"\| 1 \| openai:model-a \| 75\.00 \|", report)
    assert "| rigor *custom* | rubric | 0-100 | 75.00 | 25.00 |" in report
