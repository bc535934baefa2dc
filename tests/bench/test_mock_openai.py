"""The mock OpenAI server through the real client path (ChatOpenAIDirect, the
default client of ``openai:`` model strings; the first test also through
langchain_openai.ChatOpenAI) and ainvoke's retries, cache and ledger against it."""

from __future__ import annotations

import asyncio
import json
from collections import Counter, defaultdict

import httpx
import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core import ModelCallError
from sgieval.models import cache
from sgieval.models.accounting import BudgetExceeded, Ledger
from sgieval.models.base import NamedModel
from sgieval.models.calls import ainvoke, call_info, message_text, set_max_concurrency
from sgieval.models.openai_direct import ChatOpenAIDirect

pytestmark = pytest.mark.usefixtures("fresh_call_cache")


def model_for(
    mock: MockOpenAI, name: str = "gpt-4o-mini", role: str = "target", chat_cls: type = ChatOpenAIDirect, **chat_kw
) -> NamedModel:
    chat = chat_cls(base_url=mock.url, api_key="test", model=name, max_retries=0, **chat_kw)
    return NamedModel(name=f"openai:{name}", role=role, chat=chat, provider="mock")


@pytest.mark.parametrize("chat_cls", [ChatOpenAIDirect, ChatOpenAI])
async def test_echo_usage_and_tool_calls_through_chatopenai(chat_cls):
    replies = [
        "plain answer here",
        {
            "content": None,
            "tool_calls": [{"name": "run_python", "arguments": {"code": "print(2)"}, "id": "c1"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 7},
        },
    ]
    with MockOpenAI(replies=replies) as mock:
        m = model_for(mock, chat_cls=chat_cls)
        a = await ainvoke(m, [HumanMessage("what is two plus two")])
        b = await ainvoke(m, [HumanMessage("use the tool")])
        stats = httpx.get(mock.url.replace("/v1", "/stats")).json()
    assert message_text(a) == "plain answer here"
    # default usage: prompt = 5 words ("what is two plus two"), completion = 3 words
    assert a.usage_metadata["input_tokens"] == 5 and a.usage_metadata["output_tokens"] == 3
    assert b.tool_calls == [{"name": "run_python", "args": {"code": "print(2)"}, "id": "c1", "type": "tool_call"}]
    assert b.usage_metadata["input_tokens"] == 50 and b.usage_metadata["output_tokens"] == 7
    assert stats == {"requests": 2, "served": 2, "429": 0, "500": 0, "hung": 0}


async def test_default_reply_echoes_last_user_message():
    with MockOpenAI() as mock:
        out = await ainvoke(model_for(mock), "item-17 question")
    assert message_text(out) == "echo: item-17 question"


@pytest.mark.slow
async def test_500_calls_with_errors_and_hangs_all_end_answered_or_failed():
    # 20% errors (half 429 with Retry-After 0.05 s, half 500) and 2% hung connections;
    # per-attempt timeout 5 s so a hung attempt is abandoned and retried (a loaded 2-core machine can take
    # over 2 s to answer a healthy call when the server shares the process with 64 in-flight clients).
    # Every attempt may use its whole timeout (a hung one does), so the call's total time is attempts x 5 s:
    # a call fails only after its last attempt.  Time queued for one of the 64 slots is not part of it.
    n, attempts, timeout_s = 500, 4, 5.0
    with MockOpenAI(latency_ms=5, error_rate=0.2, hang_rate=0.02, retry_after_s=0.05, seed=11) as mock:
        set_max_concurrency("mock", 64)
        m = model_for(mock)

        async def one(i: int):
            try:
                return await ainvoke(
                    m,
                    f"item-{i}",
                    max_attempts=attempts,
                    timeout_s=timeout_s,
                    total_timeout_s=attempts * timeout_s,
                    base_delay_s=0.01,
                )
            except ModelCallError as e:
                return e

        results = await asyncio.gather(*(one(i) for i in range(n)))
        log = mock.log()
        stats = mock.stats()
    answered = {i for i, r in enumerate(results) if not isinstance(r, Exception)}
    failed = {i for i, r in enumerate(results) if isinstance(r, ModelCallError)}
    assert len(answered) + len(failed) == n  # every call ended one way or the other
    for i in answered:
        assert message_text(results[i]) == f"echo: item-{i}"  # its own reply, no mix-ups
    for i in failed:  # failed only after its last attempt, with the reason
        assert results[i].message.startswith(f"call failed after {attempts} attempt(s): ")
        assert any(k in results[i].message for k in ("HTTP 429", "HTTP 500", "timeout after 5 s"))
    per_item = defaultdict(Counter)
    for r in log:
        per_item[r["last_user"]][r["outcome"]] += 1
    # no duplicates: the server answered each answered item exactly once, failed items never
    assert {u for u, c in per_item.items() if c["200"] == 1} == {f"item-{i}" for i in answered}
    assert all(c["200"] <= 1 for c in per_item.values())
    for i in failed:
        # every attempt the server saw is logged; an attempt that timed out while still queued in the client
        # (a loaded machine) never reached it, so a failed item has between 1 and `attempts` log lines, and
        # `attempts` on an idle machine
        assert 1 <= sum(per_item[f"item-{i}"].values()) <= attempts
    assert stats["served"] == len(answered)
    assert stats["requests"] == stats["served"] + stats["429"] + stats["500"] + stats["hung"]
    assert stats["429"] > 0 and stats["500"] > 0 and stats["hung"] > 0  # the faults really happened


async def test_retry_after_is_honoured_server_side():
    # first request -> 429 with Retry-After: 1; the backoff base is 1 ms, so only the
    # header can explain a gap of >= 1 s between the two arrivals on the server's clock.
    with MockOpenAI(retry_after_s=1, faults=lambda i, body: "429" if i == 0 else None) as mock:
        out = await ainvoke(model_for(mock), "q", base_delay_s=0.001)
        log = mock.log()
    assert message_text(out) == "echo: q"
    assert [r["outcome"] for r in log] == ["429", "200"]
    assert log[0]["key"] == log[1]["key"]
    # server-side monotonic timestamps; 1e-3 s slack for timer resolution
    assert log[1]["t"] - log[0]["t"] >= 1.0 - 1e-3


async def test_cache_hit_makes_zero_server_calls():
    with MockOpenAI() as mock:
        m = model_for(mock, temperature=0)
        a = await ainvoke(m, [HumanMessage("cached question")])
        before = httpx.get(mock.url.replace("/v1", "/stats")).json()["requests"]
        b = await ainvoke(m, [HumanMessage("cached question")])
        after = httpx.get(mock.url.replace("/v1", "/stats")).json()["requests"]
        cache.configure(enabled=False)
        await ainvoke(m, [HumanMessage("cached question")])
        no_cache = mock.stats()["requests"]
    assert (before, after, no_cache) == (1, 1, 2)
    assert message_text(b) == message_text(a) == "echo: cached question"
    assert call_info(b)["cached"] is True


async def test_ledger_totals_match_hand_computed_tokens_and_cost():
    replies = lambda body, i: {
        "content": "ok",
        "usage": {
            "prompt_tokens": 1000 * (1 + len(body["messages"])),  # noqa: E731
            "completion_tokens": 200,
        },
    }
    with MockOpenAI(replies=replies) as mock:
        target = model_for(mock, "gpt-4o-mini", "target")
        judge = model_for(mock, "gpt-4o", "judge")
        ledger = Ledger()
        with ledger.activate():
            await asyncio.gather(*(ainvoke(target, f"t{i}") for i in range(3)))
            await ainvoke(judge, "j")
    t = ledger.totals()
    # each call has 1 message -> 2000 prompt tokens, 200 completion tokens
    # target gpt-4o-mini, 3 calls: 6000 in, 600 out; 6000*0.15/1e6 + 600*0.60/1e6 = 0.0009 + 0.00036 = 0.00126
    tt = t[("openai:gpt-4o-mini", "target")]
    assert (tt.calls, tt.input_tokens, tt.output_tokens) == (3, 6000, 600)
    assert tt.cost == pytest.approx(0.00126)
    # judge gpt-4o, 1 call: 2000*2.5/1e6 + 200*10/1e6 = 0.005 + 0.002 = 0.007
    tj = t[("openai:gpt-4o", "judge")]
    assert (tj.calls, tj.input_tokens, tj.output_tokens) == (1, 2000, 200)
    assert tj.cost == pytest.approx(0.007)
    assert ledger.total().cost == pytest.approx(0.00826)


async def test_budget_stops_before_server_call():
    replies = [{"content": "ok", "usage": {"prompt_tokens": 1_000_000, "completion_tokens": 0}}]
    with MockOpenAI(replies=replies) as mock:
        m = model_for(mock, "gpt-4o")
        ledger = Ledger(budget_usd=4.0)
        with ledger.activate():
            await ainvoke(m, "a")  # $2.50
            await ainvoke(m, "b")  # $5.00 total >= $4.00
            with pytest.raises(BudgetExceeded):
                await ainvoke(m, "c")
        assert mock.stats()["requests"] == 2  # the refused call never reached the server
    assert ledger.stopped["spent_usd"] == pytest.approx(5.0)


def test_hung_connection_released_on_stop_and_log_endpoint():
    mock = MockOpenAI(faults=lambda i, body: "hang").start()
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(mock.url + "/chat/completions", json={"model": "m", "messages": []}, timeout=0.3)
    log = json.loads(httpx.get(mock.url.replace("/v1", "/log")).text)
    assert [r["outcome"] for r in log] == ["hung"]
    assert httpx.post(mock.url.replace("/v1", "/reset")).json() == {"ok": True}
    assert mock.stats() == {"requests": 0, "served": 0, "429": 0, "500": 0, "hung": 0}
    mock.stop()


def test_bad_rates_rejected():
    with pytest.raises(ValueError, match="error_rate must be within 0-1, got 1.5"):
        MockOpenAI(error_rate=1.5)
    with pytest.raises(ValueError, match="error_rate \\+ hang_rate must be <= 1"):
        MockOpenAI(error_rate=0.6, hang_rate=0.6)


async def test_prompt_cache_reports_the_shared_prefix_as_cached_and_the_ledger_prices_it_so():
    """With ``prompt_cache`` the mock reports as ``cached_tokens`` the whole 16-word blocks a request shares at
    its start with an earlier request to the same model; the ledger keeps them and prices them at the cached
    rate (gpt-4o: 2.50 USD per 1M input tokens, 1.25 cached, 10 output)."""
    from langchain_core.messages import SystemMessage

    from sgieval.reports.sections.usage import cached_share_text

    system = SystemMessage(" ".join(f"rule{i}" for i in range(40)))  # 40 words: 2 whole blocks and 8 words
    with MockOpenAI(prompt_cache=True, replies=["ok"]) as mock:
        judge = model_for(mock, "gpt-4o", "judge")
        other = model_for(mock, "gpt-4o-mini", "judge")
        ledger = Ledger()
        with ledger.activate():
            first = await ainvoke(judge, [system, HumanMessage("item one text")])
            second = await ainvoke(judge, [system, HumanMessage("item two text")])
            elsewhere = await ainvoke(other, [system, HumanMessage("item two text")])  # another model: no cache
            user_first = await ainvoke(judge, [HumanMessage(system.content)])  # same words, another role
        log = mock.log()
    assert [e["cached_tokens"] for e in log] == [0, 32, 0, 0]
    assert second.usage_metadata["input_token_details"]["cache_read"] == 32
    assert first.usage_metadata["input_token_details"]["cache_read"] == 0  # as OpenAI reports a miss
    assert elsewhere.usage_metadata["input_tokens"] == 43 and user_first.usage_metadata["input_tokens"] == 40
    t = ledger.totals()[("openai:gpt-4o", "judge")]
    # 3 calls: 43 + 43 + 40 = 126 input tokens, 32 of them cached; 1 output token each
    assert (t.input_tokens, t.cache_read_tokens, t.output_tokens) == (126, 32, 3)
    # (126 - 32) * 2.5e-6 + 32 * 1.25e-6 + 3 * 10e-6 = 0.000235 + 0.00004 + 0.00003 = 0.000305
    assert t.cost == pytest.approx(0.000305)
    assert cached_share_text(ledger.summary()) == (
        "Prompt caching: 32 of 169 input tokens (18.9%) were served from the providers' prompt caches, priced at "
        "the cached rate where the price is known (a price given with --price applies to every input token); by "
        "model and role: openai:gpt-4o (judge) 25.4% of 126."
    )
