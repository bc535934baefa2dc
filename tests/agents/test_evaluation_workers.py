"""run_evaluation runs its units on ``max_parallel`` workers: never more than ``max_parallel`` target
calls at once, calls started in item order, and no task per unit (a 10,000-item run made 10,000 tasks before
its first call)."""

from __future__ import annotations

import asyncio

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from sgieval.agents.evaluation import run_evaluation
from sgieval.core import Item, RunStore
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.generic import ReferenceMatch
from sgieval.models.base import NamedModel

N = 40


class CountingChat(BaseChatModel):
    """Answers ``echo <prompt>`` after 5 ms; records the prompts in call order, the calls in flight and the
    asyncio tasks alive at each call."""

    started: list[str] = []
    in_flight: int = 0
    max_in_flight: int = 0
    max_tasks: int = 0

    @property
    def _llm_type(self) -> str:
        return "counting-fake"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:  # pragma: no cover
        raise NotImplementedError

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        prompt = messages[-1].content
        self.started.append(prompt)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.max_tasks = max(self.max_tasks, len(asyncio.all_tasks()))
        await asyncio.sleep(0.005)
        self.in_flight -= 1
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=f"echo {prompt}"))])


async def test_units_run_on_max_parallel_workers_in_item_order(tmp_path):
    chat = CountingChat(started=[])
    target = NamedModel(name="counting", role="target", chat=chat, provider="counting")
    items = [
        Item(id=f"jsonl:t/{k}", benchmark="jsonl:t", task="short_answer", prompt=f"q{k}", reference={"answer": a})
        for k, a in ((k, f"echo q{k}" if k % 4 else "other") for k in range(N))
    ]
    store = RunStore(tmp_path / "run")
    prog = await run_evaluation(
        store, items, [target], [ReferenceMatch(names=["exact_match"])], ScoringContext(), max_parallel=4
    )
    assert chat.started == [f"q{k}" for k in range(N)]
    assert chat.max_in_flight == 4
    # per worker: itself, the call's timeout task (asyncio.wait_for) and LangChain's agenerate task; plus the
    # test's own task: 3 * 4 + 1 = 13 (one task per unit made more than 40)
    assert chat.max_tasks <= 3 * 4 + 1
    assert (prog.responses_new, prog.scores_new) == (N, N)
    # exact match: items 0, 4, 8, ... (every 4th) have the gold "other" -> 30 of 40 correct
    assert sum(s.value for s in store.read("scores")) == 30.0


class SlowScore(ReferenceMatch):
    """Exact match whose scoring of a unit waits (up to 10 s, as a judged metric waits for its judge) for the next
    target call to start, unless every call has started, and counts the units during whose scoring a call started.
    Waiting for the event rather than sleeping a fixed time keeps the count exact on a loaded machine; when the
    next call cannot start before the scoring ends, every wait runs out and no overlap is counted."""

    def __init__(self, chat: CountingChat, calls: int = 0):
        super().__init__(names=["exact_match"])
        self.chat = chat
        self.calls = calls
        self.overlaps = 0

    async def score(self, item, response, ctx):
        calls_before = len(self.chat.started)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (10.0 if calls_before < self.calls else 0.2)
        while len(self.chat.started) == calls_before and loop.time() < deadline:
            await asyncio.sleep(0.01)
        if len(self.chat.started) > calls_before:  # a call started while this unit was being scored
            self.overlaps += 1
        return await super().score(item, response, ctx)


async def test_next_call_starts_while_a_unit_is_scored(tmp_path):
    """One call slot (max_parallel=1): the slot is freed when the reply arrives, and the next unit's call
    runs while the finished unit is scored; still never two calls at once.  With one worker per slot the
    slot idled through every scoring (no overlap at all)."""
    chat = CountingChat(started=[])
    target = NamedModel(name="counting", role="target", chat=chat, provider="counting")
    items = [
        Item(id=f"jsonl:t/{k}", benchmark="jsonl:t", task="short_answer", prompt=f"q{k}", reference={"answer": "x"})
        for k in range(8)
    ]
    metric = SlowScore(chat, calls=len(items))
    prog = await run_evaluation(RunStore(tmp_path / "run"), items, [target], [metric], ScoringContext(), max_parallel=1)
    assert chat.max_in_flight == 1
    assert chat.started == [f"q{k}" for k in range(8)]
    assert metric.overlaps == 7  # every scoring but the last one overlaps the next unit's call
    assert (prog.responses_new, prog.scores_new) == (8, 8)
