"""Run-scoped state: two ``sgieval`` runs with different settings run concurrently in one
process (asyncio.gather over the async API) and each sees only its own cache switch, concurrency limit, ledger,
settings and log sink; afterwards the process (structlog configuration, logging handlers, the default call
context, the price table) is exactly as before."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import structlog
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from sgieval import api
from sgieval.core import current_settings
from sgieval.models import accounting
from sgieval.models.accounting import current_ledger
from sgieval.models.base import NamedModel
from sgieval.models.context import current_call_context
from sgieval.tests.conftest import FIXTURES

QA = str(FIXTURES / "jsonl" / "sample_qa.jsonl")


class ProbeChat(BaseChatModel):
    """Answers "tesla" after ``delay_s``, recording per call what the run context looks like from inside
    the model call: (cache on?, limit for its provider, id of the active ledger), and the peak number of
    its calls in flight at once."""

    provider: str
    delay_s: float = 0.05
    seen: list = []
    inflight: list = [0, 0]  # [now, peak]

    @property
    def _llm_type(self) -> str:
        return "probe"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        raise NotImplementedError

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        ctx = current_call_context()
        ledger = current_ledger()
        self.seen.append(
            (ctx.cache_enabled(), ctx.limit(self.provider), id(ledger) if ledger else None, current_settings().network)
        )
        self.inflight[0] += 1
        self.inflight[1] = max(self.inflight[1], self.inflight[0])
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.inflight[0] -= 1
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="tesla"))])


def _probe(name: str) -> tuple[NamedModel, ProbeChat]:
    chat = ProbeChat(provider=f"probe-{name}", seen=[], inflight=[0, 0])
    return NamedModel(name=name, role="target", chat=chat, provider=f"probe-{name}"), chat


def _process_state() -> dict:
    ctx = current_call_context()
    return {
        "structlog": (
            structlog.is_configured(),
            structlog.get_config()["processors"],
            structlog.get_config()["logger_factory"],
        ),
        "root_handlers": list(logging.getLogger().handlers),
        "root_level": logging.getLogger().level,
        "call_context": (id(ctx), ctx.use_cache, ctx.cache_path, dict(ctx.limits)),
        "prices": accounting.price_table(),
        "ledger": current_ledger(),
        "network": current_settings().network,
    }


def test_two_concurrent_runs_each_see_only_their_own_settings(tmp_path, monkeypatch):
    host_events: list[dict] = []

    def host_sink(_logger, _name, event):  # the host application's own structlog configuration
        host_events.append(dict(event))
        raise structlog.DropEvent

    structlog.configure(processors=[host_sink])
    try:
        before = _process_state()
        a_model, a_chat = _probe("probe-a")
        b_model, b_chat = _probe("probe-b")

        async def both():
            return await asyncio.gather(
                api.aevaluate(
                    "",
                    models=[a_model],
                    benchmark=QA,
                    out_dir=tmp_path,
                    run_id="run-a",
                    use_cache=False,
                    max_concurrency=1,
                    bootstrap_resamples=99,
                ),
                api.aevaluate(
                    "",
                    models=[b_model],
                    benchmark=QA,
                    out_dir=tmp_path,
                    run_id="run-b",
                    use_cache=True,
                    max_concurrency=3,
                    bootstrap_resamples=99,
                ),
            )

        t0 = time.perf_counter()
        run_a, run_b = asyncio.run(both())
        assert time.perf_counter() - t0 < 120
        after = _process_state()
    finally:
        structlog.reset_defaults()

    # each run's calls saw its own cache switch and limit, and one ledger (its own, not the other's)
    n_items = len(run_a.items)
    assert n_items == len(run_b.items) == 3  # the three records of sample_qa.jsonl
    assert {s[:2] for s in a_chat.seen} == {(False, 1)} and len(a_chat.seen) == n_items
    assert {s[:2] for s in b_chat.seen} == {(True, 3)} and len(b_chat.seen) == n_items
    ledgers_a, ledgers_b = {s[2] for s in a_chat.seen}, {s[2] for s in b_chat.seen}
    assert len(ledgers_a) == len(ledgers_b) == 1 and ledgers_a != ledgers_b and None not in ledgers_a | ledgers_b
    # the limit held: run-a never had 2 calls in flight; run-b overlapped its calls (up to 3)
    assert a_chat.inflight[1] == 1
    assert 2 <= b_chat.inflight[1] <= 3
    # each run's ledger journal holds its own model's calls only
    for run, model in ((run_a, "probe-a"), (run_b, "probe-b")):
        rows = [json.loads(x) for x in (run.run_dir / "ledger.jsonl").read_text().splitlines()]
        assert {r["model"] for r in rows} == {model} and len(rows) == n_items
        # config.json stores the run's settings (secrets masked) and its own options
        cfg = json.loads((run.run_dir / "config.json").read_text())
        assert cfg["settings"]["SGIEVAL_NETWORK"] == "auto" and cfg["settings"]["OPENAI_API_KEY"] in ("set", "not set")
        # its log sink got its own events, each tagged with its own run id
        lines = [json.loads(x) for x in (run.run_dir / "log.jsonl").read_text().splitlines()]
        assert {ln["run_id"] for ln in lines} == {run.run_id}
        assert [ln["event"] for ln in lines] == ["questioning", "customisation", "estimate", "evaluation"]
    assert json.loads((run_a.run_dir / "config.json").read_text())["max_concurrency"] == 1
    assert json.loads((run_b.run_dir / "config.json").read_text())["use_cache"] is True
    # the host's structlog configuration got none of the runs' events and is unchanged, as is everything else
    assert host_events == []
    assert after == before


def test_a_run_does_not_change_the_default_call_context(tmp_path):
    """After ``evaluate(use_cache=False, max_concurrency=3)`` returns, calls outside any run still use the
    process defaults (a run must not leave its cache switch and limit to the process)."""
    before = _process_state()
    model, chat = _probe("probe-c")
    api.evaluate(
        "",
        models=[model],
        benchmark=QA,
        out_dir=tmp_path,
        run_id="c",
        use_cache=False,
        max_concurrency=3,
        bootstrap_resamples=99,
    )
    assert {s[:2] for s in chat.seen} == {(False, 3)}
    assert _process_state() == before
    ctx = current_call_context()
    assert ctx.limit("anything") == 16 and ctx.use_cache is None
