"""Accounting: prices, per-call cost, totals per (model, role), budget."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from sgieval.core import InputError
from sgieval.models import accounting
from sgieval.models.accounting import BudgetExceeded, Ledger, price_call
from sgieval.models.base import NamedModel
from sgieval.models.calls import ainvoke

pytestmark = pytest.mark.usefixtures("fresh_call_cache")


def price_of(model, prices=None):
    """(USD per 1M input tokens, USD per 1M output tokens) as price_call bills them, or None when unknown."""
    pin = price_call(model, {"input": 10**6, "output": 0}, prices)
    pout = price_call(model, {"input": 0, "output": 10**6}, prices)
    return None if pin is None or pout is None else (round(pin, 9), round(pout, 9))


def test_price_lookup_exact_snapshot_and_unknown():
    # list prices of genai-prices' bundled data (USD per 1M input, output tokens)
    assert price_of("openai:gpt-4o") == (2.50, 10.00)
    assert price_of("gpt-4o-mini-2024-07-18") == (0.15, 0.60)  # a snapshot of gpt-4o-mini, not gpt-4o
    assert price_of("anthropic:claude-3-5-sonnet-20241022") == (3.00, 15.00)
    # a longer name is another model, never priced as the shorter one (o1 is 15/60, gpt-5 is 1.25/10)
    assert price_of("openai:o1-pro") == (150.0, 600.0)
    assert price_of("openai:o1-pro-2025-03-19") == (150.0, 600.0)
    assert price_of("openai:gpt-5-pro") == (15.0, 120.0)
    for unknown in ("openai:o1-ultra", "openai:gpt-5-pro-max", "openai:llama3.3", "local:smollm2", "my-model"):
        assert price_of(unknown) is None, unknown
    assert price_call("local:smollm2", {"input": 10, "output": 10}) is None  # unknown, not 0
    assert price_call("openai:o1-ultra", {"input": 10, "output": 10}) is None
    assert price_call("gpt-4o", None) is None
    # 1000 in * 2.5/1e6 + 500 out * 10/1e6 = 0.0025 + 0.005 = 0.0075
    assert price_call("gpt-4o", {"input": 1000, "output": 500}) == pytest.approx(0.0075)
    # o1-pro at list price: 1000 * 150/1e6 + 500 * 600/1e6 = 0.15 + 0.3 = 0.45 (o1's price would give 0.045)
    assert price_call("openai:o1-pro", {"input": 1000, "output": 500}) == pytest.approx(0.45)


def test_a_batched_call_is_priced_at_the_listed_batch_price_else_at_half():
    usage = {"input": 1000, "output": 500}
    # genai-prices lists a batch price for gpt-4o (1.25/5.00): 1000 * 1.25/1e6 + 500 * 5/1e6 = 0.00125 + 0.0025
    assert price_call("openai:gpt-4o", usage, batch=True) == pytest.approx(0.00375)
    # none for claude-3-5-sonnet: BATCH_DISCOUNT of its list price, 0.5 * (1000 * 3/1e6 + 500 * 15/1e6) = 0.00525
    assert price_call("anthropic:claude-3-5-sonnet-20241022", usage) == pytest.approx(0.0105)
    assert price_call("anthropic:claude-3-5-sonnet-20241022", usage, batch=True) == pytest.approx(0.00525)
    # a user price: 0.5 * (1000 * 2/1e6 + 500 * 8/1e6) = 0.003
    assert price_call("mine", usage, {"mine": (2.0, 8.0)}, batch=True) == pytest.approx(0.003)


def test_cached_input_and_reasoning_tokens_priced_as_billed():
    # gpt-4o: 1000 input tokens of which 400 read from the provider's cache (1.25/1M), 500 output:
    # 600 * 2.5/1e6 + 400 * 1.25/1e6 + 500 * 10/1e6 = 0.0015 + 0.0005 + 0.005 = 0.007
    assert price_call("openai:gpt-4o", {"input": 1000, "cache_read": 400, "output": 500}) == pytest.approx(0.007)
    # claude-sonnet-4-5: 1000 input = 500 plain (3/1M) + 400 cache reads (0.3/1M) + 100 cache writes (3.75/1M),
    # 10 output (15/1M): 0.0015 + 0.00012 + 0.000375 + 0.00015 = 0.002145
    u = {"input": 1000, "cache_read": 400, "cache_write": 100, "output": 10}
    assert price_call("anthropic:claude-sonnet-4-5", u) == pytest.approx(0.002145)
    # reasoning tokens are output tokens, billed at the output price (o1-pro has no separate reasoning price):
    # 1000 output tokens, 800 of them reasoning: 1000 * 600/1e6 = 0.6
    assert price_call("openai:o1-pro", {"input": 0, "output": 1000, "reasoning": 800}) == pytest.approx(0.6)


def test_user_prices_take_precedence_exactly():
    table = {"openai:o1-pro": (1.0, 2.0), "my-model": (3.0, 4.0)}
    assert price_of("openai:o1-pro", table) == (1.0, 2.0)
    assert price_of("o1-pro", table) == (1.0, 2.0)  # a bare name takes the provider's entry
    assert price_of("openai:my-model", table) == (3.0, 4.0)  # a bare entry prices the name under any provider
    assert price_of("openai:o1-pro-max", table) is None  # never by prefix
    # user prices: every input token at IN, cached or not: 1000 * 1/1e6 + 10 * 2/1e6 = 0.00102
    assert price_call("openai:o1-pro", {"input": 1000, "cache_read": 900, "output": 10}, table) == pytest.approx(
        0.00102
    )
    assert accounting.unpriced_models(["openai:o1-pro", "openai:llama3.3", "local:smollm2", "replay:phi4"]) == [
        "openai:llama3.3"
    ]
    assert accounting.unpriced_models(["openai:llama3.3"], {"llama3.3": (0.0, 0.0)}) == []


def test_price_table_override_from_yaml(tmp_path):
    p = tmp_path / "prices.yaml"
    p.write_text("my-model: {input: 1.0, output: 2.0}\nopenai:gpt-4o: [5, 20]\n")
    accounting.set_prices(p)
    assert price_of("local:my-model") == (1.0, 2.0)
    assert price_of("openai:gpt-4o") == (5.0, 20.0)
    assert price_of("gpt-4o") == (5.0, 20.0)
    assert price_of("gpt-4.1") == (2.00, 8.00)  # merged: the library's prices kept
    accounting.set_prices({"only": {"input": 1, "output": 1}}, replace=True)
    assert price_of("gpt-4o") == (2.50, 10.00)


def test_bad_price_table_names_file_and_model(tmp_path):
    p = tmp_path / "prices.yaml"
    p.write_text("gpt-x: {input: 1.0}\n")
    with pytest.raises(InputError) as ei:
        accounting.load_prices(p)
    assert str(ei.value).startswith(f"{p}: bad price for model 'gpt-x': {{'input': 1.0}} (KeyError: 'output')")
    with pytest.raises(InputError, match="negative price for model 'm'"):
        accounting.load_prices({"m": [-1, 1]})
    with pytest.raises(InputError, match="budget must be >= 0 USD"):
        Ledger(budget_usd=-1)


def _fake(*usages):
    return FakeMessagesListChatModel(
        responses=[
            AIMessage(f"r{i}", usage_metadata={"input_tokens": a, "output_tokens": b, "total_tokens": a + b})
            for i, (a, b) in enumerate(usages)
        ]
    )


async def test_ledger_totals_per_model_and_role():
    target = NamedModel(name="openai:gpt-4o-mini", role="target", chat=_fake((100, 20), (300, 40)))
    judge = NamedModel(name="openai:gpt-4o", role="judge", chat=_fake((1000, 50)))
    local = NamedModel(name="local:smollm2", role="judge", chat=_fake((7, 3)))
    ledger = Ledger()
    with ledger.activate():
        await ainvoke(target, "a")
        await ainvoke(target, "b")
        await ainvoke(judge, "c")
        await ainvoke(local, "d")
    t = ledger.totals()
    tt = t[("openai:gpt-4o-mini", "target")]
    # tokens: 100 + 300 = 400 in, 20 + 40 = 60 out
    # cost: 400 * 0.15/1e6 + 60 * 0.60/1e6 = 6.0e-5 + 3.6e-5 = 9.6e-5
    assert (tt.calls, tt.input_tokens, tt.output_tokens) == (2, 400, 60)
    assert tt.cost == pytest.approx(9.6e-5)
    tj = t[("openai:gpt-4o", "judge")]
    # 1000 * 2.5/1e6 + 50 * 10/1e6 = 0.0025 + 0.0005 = 0.003
    assert (tj.calls, tj.input_tokens, tj.output_tokens) == (1, 1000, 50)
    assert tj.cost == pytest.approx(0.003)
    tl = t[("local:smollm2", "judge")]
    assert (tl.calls, tl.input_tokens, tl.output_tokens, tl.cost, tl.unpriced_calls) == (1, 7, 3, None, 1)
    g = ledger.total()
    # 400 + 1000 + 7 = 1407 in; 60 + 50 + 3 = 113 out; cost 9.6e-5 + 0.003 = 0.003096
    assert (g.calls, g.input_tokens, g.output_tokens, g.unpriced_calls) == (4, 1407, 113, 1)
    assert g.cost == pytest.approx(0.003096)
    assert ledger.spent_usd == pytest.approx(0.003096)
    assert list(t) == [("openai:gpt-4o-mini", "target"), ("openai:gpt-4o", "judge"), ("local:smollm2", "judge")]
    s = ledger.summary()
    assert s["total"]["input_tokens"] == 1407 and s["stopped"] is None and len(s["rows"]) == 3


async def test_cached_calls_are_counted_but_free():
    model = NamedModel(name="openai:gpt-4o", role="judge", chat=_fake((1000, 100), (1, 1)), params={"temperature": 0})
    ledger = Ledger()
    with ledger.activate():
        await ainvoke(model, "same")
        await ainvoke(model, "same")
    (t,) = ledger.totals().values()
    # one paid call: 1000 * 2.5/1e6 + 100 * 10/1e6 = 0.0025 + 0.001 = 0.0035
    assert (t.calls, t.cached_calls, t.input_tokens, t.output_tokens) == (1, 1, 1000, 100)
    assert t.cost == pytest.approx(0.0035)


def test_merge_and_role_override():
    a, b = Ledger(), Ledger()
    a.record("gpt-4o", "target", usage={"input": 1_000_000, "output": 0})  # $2.50
    b.record("gpt-4o", "target", usage={"input": 0, "output": 1_000_000})  # $10.00
    a.merge(b.to_dicts())
    (t,) = a.totals().values()
    assert (t.calls, t.input_tokens, t.output_tokens) == (2, 1_000_000, 1_000_000)
    assert t.cost == pytest.approx(12.5)
    assert a.spent_usd == pytest.approx(12.5)


def test_budget_zero_refuses_first_paid_call():
    led = Ledger(budget_usd=0.0)
    with pytest.raises(BudgetExceeded) as ei:
        led.check_budget("openai:gpt-4o", "judge")
    assert (ei.value.spent_usd, ei.value.budget_usd, ei.value.model, ei.value.role) == (
        0.0,
        0.0,
        "openai:gpt-4o",
        "judge",
    )
    Ledger(budget_usd=None).check_budget()  # no budget: never raises
