"""Prompt caching options per provider: inside a prompt family (every judge call of one metric, set by the
evaluation around each metric) OpenAI chat models get ``prompt_cache_key`` = ``sgieval:<scope>/<metric>`` and
Anthropic chat models a cache breakpoint (``cache_control: {"type": "ephemeral"}``) on the system message's text
block; other models get neither.  OpenAI through the mock server (what the request carried, per its /log);
Anthropic on the message objects a scripted chat model receives (no network)."""

from __future__ import annotations

import json

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from sgieval.agents.evaluation import metric_prompt_key, score_response
from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core import Item, Response
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.judge import DATA_NOTICE
from sgieval.metric_pool.registry import Scoped
from sgieval.metric_pool.rubric import RubricMetric, rubric_system
from sgieval.metric_pool.rubrics import load_rubric
from sgieval.models.base import NamedModel
from sgieval.models.calls import ainvoke
from sgieval.models.context import prompt_scope
from sgieval.models.openai_direct import ChatOpenAIDirect

pytestmark = pytest.mark.usefixtures("fresh_call_cache")

RIGOR = load_rubric("rigor")
VERDICT = json.dumps({"scores": [{"criterion": c.name, "score": 6, "rationale": "r"} for c in RIGOR.criteria]})
ITEM = Item(id="b/1", benchmark="b", task="qa", prompt="Why is the sky blue?")
RESP = Response(item_id="b/1", model="openai:target", text="Rayleigh scattering goes as 1/lambda^4.")


class Recording(FakeMessagesListChatModel):
    """A scripted chat model that keeps the messages and keywords of every call."""

    seen: list = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001
        self.seen.append((list(messages), dict(kwargs)))
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_the_metric_prompt_key_is_its_registry_key():
    assert metric_prompt_key(RubricMetric(RIGOR)) == "sgieval:*/rigor"
    assert metric_prompt_key(Scoped(inner=RubricMetric(RIGOR), scope="sgi-bench")) == "sgieval:sgi-bench/rigor"


async def test_openai_judge_calls_carry_the_metric_prompt_cache_key():
    with MockOpenAI(replies=[VERDICT]) as mock:
        chat = ChatOpenAIDirect(base_url=mock.url, api_key="k", model="judge", max_retries=0, temperature=0)
        judge = NamedModel(name="openai:judge", role="judge", chat=chat, provider="mock")
        scores = await score_response(ITEM, RESP, [RubricMetric(RIGOR)], ScoringContext(judges=[judge]), set())
        await ainvoke(judge, [HumanMessage("outside any metric")])
        log = mock.log()
    assert [s.value for s in scores] == [60.0]
    assert [e["prompt_cache_key"] for e in log] == ["sgieval:*/rigor", None]


async def test_anthropic_judge_marks_its_system_block_for_caching():
    chat = Recording(responses=[AIMessage(VERDICT)], seen=[])
    judge = NamedModel(name="anthropic:claude-judge", role="judge", chat=chat, provider="fake-anthropic")
    [s] = await score_response(ITEM, RESP, [RubricMetric(RIGOR)], ScoringContext(judges=[judge]), set())
    assert s.value == 60.0
    [(messages, kwargs)] = chat.seen
    system, user = messages
    # one text block: the rubric's static part (instructions, criteria, the data notice and, this fake having no
    # native structured output, the schema), marked as a cache breakpoint; the item comes after it, unmarked
    assert isinstance(system, SystemMessage) and len(system.content) == 1
    block = system.content[0]
    assert block["type"] == "text" and block["cache_control"] == {"type": "ephemeral"}
    assert block["text"].startswith(rubric_system(RIGOR) + "\n\n" + DATA_NOTICE)
    assert isinstance(user.content, str) and "Rayleigh scattering" in user.content
    assert "prompt_cache_key" not in kwargs


async def test_other_models_and_calls_outside_a_family_get_no_cache_options():
    chat = Recording(responses=[AIMessage("a"), AIMessage("b")], seen=[])
    other = NamedModel(name="ollama:llama3", role="judge", chat=chat, provider="fake")
    claude = NamedModel(name="anthropic:claude", role="judge", chat=chat, provider="fake")
    msgs = [SystemMessage("static rules"), HumanMessage("item")]
    with prompt_scope("sgieval:*/rigor"):
        await ainvoke(other, msgs)
    await ainvoke(claude, msgs)  # outside a family: nothing marked
    assert [(m[0].content, kw.get("prompt_cache_key")) for m, kw in chat.seen] == [
        ("static rules", None),
        ("static rules", None),
    ]


async def test_scoring_texts_without_a_run_also_sends_the_metric_key():
    from sgieval.api import ascore

    with MockOpenAI(replies=[VERDICT]) as mock:
        scores = await ascore(["an answer", "another"], "rigor", judge="openai:judge", base_url=mock.url)
        log = mock.log()
    assert [s.value for s in scores] == [60.0, 60.0]
    assert [e["prompt_cache_key"] for e in log] == ["sgieval:*/rigor"] * 2
