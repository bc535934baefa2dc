"""A judge reply cut by the token limit (METRICS.md D.10): asked once more with twice the
max_tokens, then a judge_error; a step list cut mid-way never gives SLA 1.0."""

from __future__ import annotations

import json

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from sgieval.core import Item, Response
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.sgi.deep_research import StepLevelAccuracyMetric
from sgieval.models.base import NamedModel

FULL = json.dumps(
    {
        "steps": [
            {"solution_step": "ratio", "reason": "ok", "judge": "correct"},
            {"solution_step": "rounding", "reason": "ok", "judge": "correct"},
            {"solution_step": "answer", "reason": "wrong value", "judge": "incorrect"},
        ]
    }
)
# the same list cut mid-way: what is left repairs to two "correct" steps, i.e. SLA 1.0
CUT = FULL[: FULL.index('{"solution_step": "answer"')]


class RecordingChat(FakeMessagesListChatModel):
    """Scripted replies; records the keyword arguments of every call (max_tokens of the retry)."""

    calls: list = []

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        self.calls.append(dict(kwargs))
        return await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)


def judge(*replies):
    msgs = [
        AIMessage(
            content=text,
            response_metadata={"finish_reason": fr},
            usage_metadata={"input_tokens": 10, "output_tokens": out, "total_tokens": 10 + out},
        )
        for text, fr, out in replies
    ]
    return NamedModel(name="fake:judge", role="judge", chat=RecordingChat(responses=msgs, calls=[]))


def item():
    return Item(
        id="sgi-bench/SGI_DeepResearch_0000",
        benchmark="sgi-bench",
        task="deep_research",
        prompt="Q?",
        reference={"answer": "0.25", "steps": ["Compute the ratio.", "Round."]},
    )


async def sla(j):
    resp = Response(item_id=item().id, model="test:target", text="ratio 1/4 <answer>0.3</answer>")
    return (await StepLevelAccuracyMetric().score(item(), resp, ScoringContext(judges=[j])))[0]


async def test_cut_step_list_is_asked_again_with_twice_the_tokens():
    j = judge((CUT, "length", 120), (FULL, "stop", 180))
    s = await sla(j)
    assert (s.status, s.value) == ("ok", 2 / 3)
    # the retry asked for twice the 120 output tokens that hit the server's limit
    assert j.chat.calls == [{}, {"max_tokens": 240}]


async def test_cut_twice_is_a_judge_error_not_sla_one():
    j = judge((CUT, "length", 120), (CUT, "length", 240))
    s = await sla(j)
    assert s.status == "judge_error" and s.value is None
    assert "judge reply cut by the token limit again with max_tokens 240 (finish_reason 'length')" in s.error
    # a configured limit is doubled instead of the output tokens
    j2 = judge((CUT, "length", 50), (FULL, "stop", 60))
    j2.chat = j2.chat.bind(max_tokens=64)
    j2.chat.bound.calls = []
    assert (await sla(j2)).value == 2 / 3
    assert j2.chat.bound.calls == [{"max_tokens": 64}, {"max_tokens": 128}]
