"""ainvoke: retries, backoff, Retry-After, timeouts, per-provider concurrency, budget.

The model side is scripted (a fake runnable that raises scripted errors, or
langchain_core's FakeMessagesListChatModel); ainvoke itself is never mocked.
"""

from __future__ import annotations

import asyncio
import random
from email.utils import format_datetime
from datetime import datetime, timedelta, timezone

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from sgieval.core import ModelCallError, SgievalError, backoff_s, retry_after_s
from sgieval.models import cache
from sgieval.models.accounting import BudgetExceeded, Ledger
from sgieval.models.base import NamedModel
from sgieval.models.calls import (
    ainvoke,
    call_info,
    message_text,
    set_max_concurrency,
    usage,
)
from sgieval.models.context import current_call_context

pytestmark = pytest.mark.usefixtures("fresh_call_cache")


class StatusError(Exception):
    """Stands in for an SDK HTTP error: ``status_code`` and ``response.headers``."""

    def __init__(self, status: int, msg: str, headers: dict | None = None):
        super().__init__(msg)
        self.status_code = status
        self.response = type("R", (), {"headers": headers or {}, "status_code": status})()


class Scripted:
    """A runnable whose ``ainvoke`` follows a script: an exception instance is
    raised, "sleep" sleeps 60 s (a hung call), anything else is returned."""

    def __init__(self, script):
        self.script = list(script)
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0

    async def ainvoke(self, messages):
        step = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            if step == "sleep":
                await asyncio.sleep(60)
            if isinstance(step, BaseException):
                raise step
            return step
        finally:
            self.in_flight -= 1


def nm(chat=None, **kw) -> NamedModel:
    return NamedModel(name=kw.pop("name", "openai:m"), role=kw.pop("role", "target"), chat=chat, **kw)


async def test_retries_5xx_then_succeeds():
    run = Scripted([StatusError(500, "boom"), StatusError(503, "busy"), AIMessage("fine")])
    out = await ainvoke(nm(run), "q", base_delay_s=0.001)
    assert message_text(out) == "fine"
    assert run.calls == 3
    assert call_info(out)["attempts"] == 3
    assert call_info(out)["cached"] is False


async def test_non_retryable_error_fails_at_once_with_reason():
    run = Scripted([StatusError(400, "bad request"), AIMessage("never")])
    with pytest.raises(ModelCallError) as ei:
        await ainvoke(nm(run), "q", base_delay_s=0.001)
    assert str(ei.value) == "openai:m: call failed after 1 attempt(s): HTTP 400 StatusError: bad request"
    assert run.calls == 1


async def test_exhausted_attempts_report_last_reason():
    run = Scripted([StatusError(429, "slow down"), StatusError(500, "boom"), ConnectionError("reset by peer")])
    with pytest.raises(ModelCallError) as ei:
        await ainvoke(nm(run), "q", max_attempts=3, base_delay_s=0.001)
    assert ei.value.message == "call failed after 3 attempt(s): ConnectionError: reset by peer"
    assert run.calls == 3


# the tests of the per-attempt timeout give the call a total time it cannot spend (a loaded machine's late
# timers would otherwise spend twice 0.05 s before the second attempt)
async def test_per_call_timeout_is_retried_then_reported():
    run = Scripted(["sleep", "sleep"])
    with pytest.raises(ModelCallError) as ei:
        await ainvoke(nm(run), "q", max_attempts=2, timeout_s=0.05, base_delay_s=0.001, total_timeout_s=60)
    assert ei.value.message == "call failed after 2 attempt(s): timeout after 0.05 s"
    assert run.calls == 2


async def test_timeout_then_answer():
    run = Scripted(["sleep", AIMessage("late but fine")])
    out = await ainvoke(nm(run), "q", timeout_s=0.05, base_delay_s=0.001, total_timeout_s=60)
    assert message_text(out) == "late but fine"
    assert call_info(out)["attempts"] == 2


async def test_no_chat_model():
    with pytest.raises(ModelCallError) as ei:
        await ainvoke(nm(None), "q")
    assert str(ei.value) == "openai:m: has no chat model to call"


def test_retry_after_headers():
    assert retry_after_s(StatusError(429, "x", {"retry-after": "2"})) == 2.0
    assert retry_after_s(StatusError(429, "x", {"retry-after-ms": "1500"})) == 1.5  # 1500 ms = 1.5 s
    assert retry_after_s(StatusError(429, "x", {})) is None
    assert retry_after_s(ValueError("no response")) is None
    when = datetime.now(timezone.utc) + timedelta(seconds=30)
    got = retry_after_s(StatusError(429, "x", {"retry-after": format_datetime(when, usegmt=True)}))
    assert 28.0 <= got <= 30.0  # HTTP-date 30 s ahead; the date has 1 s resolution


def test_backoff_formula():
    # base 0.5, attempt 3: min(30, 0.5 * 2**2) = 2.0 s, times U(0.5, 1.5)
    rng = random.Random(7)
    u = random.Random(7).random()
    assert backoff_s(3, 0.5, 30.0, rng) == pytest.approx(2.0 * (0.5 + u))
    # capped: attempt 10 -> min(30, 0.5 * 512 = 256) = 30
    rng = random.Random(1)
    u = random.Random(1).random()
    assert backoff_s(10, 0.5, 30.0, rng) == pytest.approx(30.0 * (0.5 + u))


async def test_retry_after_waits_at_least_header():
    # The header says 0.3 s while the backoff base is 1 ms: the run takes the header's wait.
    run = Scripted([StatusError(429, "slow", {"retry-after": "0.3"}), AIMessage("ok")])
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    out = await ainvoke(nm(run), "q", base_delay_s=0.001)
    assert message_text(out) == "ok"
    assert loop.time() - t0 >= 0.3


async def test_semaphore_bounds_in_flight_calls_per_provider():
    set_max_concurrency("slowprov", 2)
    assert current_call_context().limit("slowprov") == 2
    assert current_call_context().limit("other") == 16
    run = Scripted([AIMessage("x")])
    model = nm(run, provider="slowprov")
    outs = await asyncio.gather(*(ainvoke(model, f"q{i}") for i in range(6)))
    assert [message_text(o) for o in outs] == ["x"] * 6
    assert run.max_in_flight == 2
    set_max_concurrency("all", 3)
    assert current_call_context().limit("slowprov") == 3  # "all" resets overrides
    with pytest.raises(ValueError, match="max concurrency must be >= 1, got 0"):
        set_max_concurrency("x", 0)


async def test_time_queued_for_a_slot_is_not_the_calls_total_time():
    # one slot: the second call waits 0.3 s for it, more than its total time of 0.2 s; it still makes both
    # attempts (a 500, then the answer), as it would with the slot free
    set_max_concurrency("oneslot", 1)
    slow = nm(Scripted(["sleep"]), provider="oneslot")
    flaky = Scripted([StatusError(500, "boom"), AIMessage("answered")])
    holder = asyncio.create_task(ainvoke(slow, "hold", max_attempts=1, timeout_s=0.3))
    await asyncio.sleep(0.05)
    out = await ainvoke(nm(flaky, provider="oneslot"), "q", timeout_s=0.1, total_timeout_s=0.2, base_delay_s=0.001)
    assert message_text(out) == "answered" and flaky.calls == 2
    with pytest.raises(ModelCallError, match="timeout after 0.3 s"):
        await holder


async def test_budget_stops_before_the_call():
    u = {"input_tokens": 1_000_000, "output_tokens": 0, "total_tokens": 1_000_000}
    chat = FakeMessagesListChatModel(
        responses=[AIMessage("a", usage_metadata=u), AIMessage("b", usage_metadata=u), AIMessage("c", usage_metadata=u)]
    )
    model = nm(chat, name="openai:gpt-4o-mini")
    ledger = Ledger(budget_usd=0.2)
    with ledger.activate():
        await ainvoke(model, "one")  # 1M input tokens of gpt-4o-mini = $0.15 < $0.20
        await ainvoke(model, "two")  # spent $0.30 >= $0.20 after this one
        with pytest.raises(BudgetExceeded) as ei:
            await ainvoke(model, "three")
    assert isinstance(ei.value, SgievalError)
    assert str(ei.value) == (
        "--budget: budget of $0.2000 reached ($0.3000 spent at that point; calls already in "
        "flight still finish and count); refused a target call to openai:gpt-4o-mini. "
        "Fix: raise --budget, or continue the run with `sgieval resume <run id> --budget <USD>`"
    )
    assert chat.i == 2  # the third scripted reply was never requested
    assert ledger.stopped == {
        "spent_usd": pytest.approx(0.3),
        "budget_usd": 0.2,
        "model": "openai:gpt-4o-mini",
        "role": "target",
        "calls": 2,
    }


async def test_ledger_records_failures_and_explicit_ledger():
    run = Scripted([StatusError(500, "boom")])
    ledger = Ledger()
    with pytest.raises(ModelCallError):
        await ainvoke(nm(run, role="judge"), "q", max_attempts=2, base_delay_s=0.001, ledger=ledger)
    (t,) = ledger.totals().values()
    assert (t.model, t.role, t.calls, t.failed_calls, t.cost) == ("openai:m", "judge", 1, 1, None)
    assert ledger.records[0].error == "HTTP 500 StatusError: boom"


async def test_cache_hit_skips_the_model():
    chat = FakeMessagesListChatModel(responses=[AIMessage("first"), AIMessage("second"), AIMessage("third")])
    model = nm(chat, params={"temperature": 0})
    msgs = [HumanMessage("same question")]
    a = await ainvoke(model, msgs)
    b = await ainvoke(model, [HumanMessage("same question")])
    assert (message_text(a), message_text(b)) == ("first", "first")
    assert chat.i == 1  # one real call
    assert call_info(b) == {"latency_s": 0.0, "attempts": 0, "cached": True, "cost": 0.0}
    c = await ainvoke(model, msgs, use_cache=False)
    assert message_text(c) == "second"
    cache.configure(enabled=False)  # --no-cache
    d = await ainvoke(model, msgs)
    assert message_text(d) == "third"


async def test_no_cache_above_temperature_zero():
    chat = FakeMessagesListChatModel(responses=[AIMessage("first"), AIMessage("second")])
    model = nm(chat, params={"temperature": 0.7})
    a = await ainvoke(model, "q")
    b = await ainvoke(model, "q")
    assert (message_text(a), message_text(b)) == ("first", "second")


def test_usage_reads_usage_metadata():
    msg = AIMessage("x", usage_metadata={"input_tokens": 12, "output_tokens": 5, "total_tokens": 17})
    assert usage(msg) == {"input": 12, "output": 5}
    assert usage(AIMessage("x")) is None
