"""Batch mode (``--batch``): target and judge calls through the providers' batch APIs, served by the mock
server's batch endpoints (bench/mock_openai.py): the same scores as direct calls, resume after a SIGKILL while
polling without submitting anything twice, the batch price in the ledger, Anthropic message batches, and a clear
error before any call for a server without a batch API."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel

import sgieval
from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core import InputError
from sgieval.models.accounting import Ledger
from sgieval.models.base import NamedModel, repeat_of
from sgieval.models.batch import BatchChatOpenAI, ChatAnthropicBatch
from sgieval.models.batch_collector import BatchCollector, custom_id
from sgieval.models.calls import ainvoke
from sgieval.models.context import CallContext, call_context, prompt_scope
from sgieval.tests.conftest import FIXTURES

BENCH = FIXTURES / "jsonl" / "sample_qa.jsonl"
TARGETS = ["openai:gpt-4o-mini", "openai:gpt-4.1-nano"]
JUDGE = "openai:gpt-4.1-mini"


def reply(body: dict, index: int) -> str:
    """Targets: gpt-4o-mini answers carefully, gpt-4.1-nano guesses; the judge scores each rubric criterion 8 for
    a careful answer and 3 for a guess (what any order of calls gives: the reply depends on the request only)."""
    user = "\n".join(str(m.get("content")) for m in body["messages"] if m.get("role") in ("user", "system"))
    if body["model"] == "gpt-4.1-mini":
        names = re.findall(r"^- (.+?) \(weight [^)]*\):", user, flags=re.M)
        score = 8 if "careful answer" in user else 3
        return json.dumps(
            {"scores": [{"criterion": c, "score": score, "rationale": "r", "evidence": []} for c in names]}
        )
    return "A careful answer with its assumptions stated." if body["model"] == "gpt-4o-mini" else "a guess"


def _values(run_dir: Path) -> dict[tuple[str, str, str], float | None]:
    out = {}
    for line in (run_dir / "scores.jsonl").read_text().splitlines():
        s = json.loads(line)
        out[(s["item_id"], s["model"], s["metric"])] = s["value"]
    return out


def _ledger(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "ledger.jsonl").read_text().splitlines() if x.strip()]


def _evaluate(tmp_path: Path, name: str, mock: MockOpenAI, **kw) -> Path:
    run = sgieval.evaluate(
        "Which model is most rigorous?",
        models=TARGETS,
        judge=JUDGE,
        benchmark=str(BENCH),
        base_url=mock.url,
        tools="",
        out_dir=tmp_path / "runs",
        run_id=name,
        bootstrap_resamples=200,
        yes=False,
        confirm=lambda payload: True,  # confirmed with the estimate before any call in front of it
        **kw,
    )
    assert run.report is not None
    return tmp_path / "runs" / name


@pytest.fixture
def batch_env(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("SGIEVAL_BATCH_POLL", "0.05")
    monkeypatch.setenv("SGIEVAL_BATCH_WINDOW", "0.2")
    return tmp_path


@pytest.mark.slow
def test_batch_run_scores_as_the_direct_run_at_the_batch_price(batch_env, fresh_call_cache):
    from sgieval.models import cache

    tmp_path = batch_env
    with MockOpenAI(replies=reply, batch_polls=2) as mock:
        cache.configure(path=tmp_path / "direct.sqlite")
        direct = _evaluate(tmp_path, "direct", mock)
        assert mock.batch_log() == []  # no batch endpoint touched by a direct run
        direct_calls = len(mock.log())
        mock.reset()
        cache.configure(path=tmp_path / "batch.sqlite")  # nothing served by the direct run's cache
        batched = _evaluate(tmp_path, "batch", mock, batch=True)
        log, blog = mock.log(), mock.batch_log()
        again = _evaluate(tmp_path, "again", mock, batch=True)  # the call cache serves batched calls as any other
        ops = [r["op"] for r in mock.batch_log()[len(blog) :]]
        assert len(mock.log()) == 12 and ops == ["batch_list"]  # no new request and no batch: only the probe
    # 3 items x 2 targets, then 6 judge calls (rigor rubric, no tools: one call per response)
    assert direct_calls == 12
    assert len(log) == 12 and all(e["via"] == "batch" for e in log)
    creates = [r for r in blog if r["op"] == "batch_create"]
    # one batch per target model (OpenAI takes one model per batch), then one of judge calls
    assert [len(r["custom_ids"]) for r in creates] == [3, 3, 6]
    assert all(n == 1 for n in mock.submissions().values()) and len(mock.submissions()) == 12
    # the same scores, every one of them
    want, got = _values(direct), _values(batched)
    assert got == want and _values(again) == want
    assert want[("jsonl:sample_qa/q1", "openai:gpt-4o-mini", "rigor")] == 80.0  # 8 on every criterion, x 10
    assert want[("jsonl:sample_qa/q1", "openai:gpt-4.1-nano", "rigor")] == 30.0
    # the ledger: the same calls and tokens, each at the batch rate (genai-prices' batch prices of these models:
    # half the list price): USD per 1M input / output tokens gpt-4o-mini 0.075 / 0.30, gpt-4.1-nano 0.05 / 0.20,
    # gpt-4.1-mini 0.20 / 0.80
    d, b = _ledger(direct), _ledger(batched)
    assert len(d) == len(b) == 12 and all(r["batch"] for r in b) and not any(r["batch"] for r in d)
    batch_price = {"openai:gpt-4o-mini": (0.075, 0.30), "openai:gpt-4.1-nano": (0.05, 0.20), JUDGE: (0.20, 0.80)}
    for r in b:
        pin, pout = batch_price[r["model"]]
        assert r["cost"] == pytest.approx((r["input_tokens"] * pin + r["output_tokens"] * pout) / 1e6, rel=1e-9)
    key = lambda r: (r["model"], r["role"], r["input_tokens"], r["output_tokens"])  # noqa: E731
    assert sorted(map(key, d)) == sorted(map(key, b))  # the same requests as direct calls
    assert sum(r["cost"] for r in b) == pytest.approx(0.5 * sum(r["cost"] for r in d), rel=1e-9)
    # the estimate before any call prices the batch run's calls at the batch rate too, and the report says so
    est = {
        n: json.loads((p / "estimate.jsonl").read_text().splitlines()[-1]) for n, p in (("d", direct), ("b", batched))
    }
    usd = {n: {(r["model"], r["role"]): r["usd"] for r in e["rows"]} for n, e in est.items()}
    assert usd["b"].keys() == usd["d"].keys() and len(usd["d"]) == 3
    assert all(usd["b"][k] == pytest.approx(0.5 * usd["d"][k], rel=1e-9) and usd["d"][k] > 0 for k in usd["d"])
    assert any(n.startswith("--batch: target and judge calls priced at the batch rate") for n in est["b"]["notes"])
    assert not any("--batch" in n for n in est["d"]["notes"])
    report = (batched / "report.md").read_text()
    assert "12 calls went through the providers' batch APIs (--batch) and are priced at the batch rate" in report
    assert "batch APIs" not in (direct / "report.md").read_text()


class Verdict(BaseModel):
    score: int
    reason: str


def test_ledger_prices_a_batched_call_at_the_batch_rate(tmp_path):
    # "one two three" is 3 prompt tokens on the mock; the reply "echo: one two three" 4 completion tokens
    with MockOpenAI(batch_polls=0, log_bodies=True) as mock:
        chat = BatchChatOpenAI(model="gpt-4o-mini", base_url=mock.url, api_key="k", temperature=0)
        named = NamedModel(name="openai:gpt-4o-mini", role="target", chat=chat, provider=mock.url)
        priced = NamedModel(name="openai:my-model", role="judge", chat=chat, provider=mock.url)
        ledger = Ledger(prices={"openai:my-model": (2.0, 8.0)})

        async def go():
            with call_context(
                CallContext(use_cache=False, batches=BatchCollector(tmp_path, window_s=0.05, poll_s=0.02))
            ):
                a = await ainvoke(named, [HumanMessage("one two three")], ledger=ledger)
                with prompt_scope("sgieval:*/rigor"):
                    b = await ainvoke(priced, [HumanMessage("one two three")], ledger=ledger)
            return a, b

        a, b = asyncio.run(go())
        keys = [json.loads(e["body"]).get("prompt_cache_key") for e in mock.log()]
    assert keys == [None, "sgieval:*/rigor"]  # a batched OpenAI request carries the prompt family's cache key
    assert a.content == "echo: one two three" and b.content == a.content
    gpt, mine = ledger.records
    assert (gpt.input_tokens, gpt.output_tokens, gpt.batch) == (3, 4, True)
    # genai-prices' batch price of gpt-4o-mini: 0.075 USD per 1M input tokens, 0.30 per 1M output tokens
    assert gpt.cost == pytest.approx(3 * 0.075e-6 + 4 * 0.30e-6, rel=1e-12)  # 1.425e-6, half of 2.85e-6
    # a user price (the list price) halved: (3 * 2 + 4 * 8) / 1e6 / 2
    assert mine.cost == pytest.approx(19e-6, rel=1e-12)
    assert json.loads((tmp_path / "batches.json").read_text())["batches"]  # the batches are in the run folder


def test_anthropic_message_batches_answer_text_and_structured_calls(tmp_path, monkeypatch):
    def answer(body, index):
        if body.get("tools"):  # the forced tool of structured output
            return {
                "tool_calls": [
                    {
                        "name": body["tools"][0]["function"]["name"]
                        if "function" in body["tools"][0]
                        else body["tools"][0]["name"],
                        "arguments": {"score": 7, "reason": "sound"},
                    }
                ]
            }
        return "Paris is the capital."

    with MockOpenAI(replies=answer, batch_polls=1, log_bodies=True) as mock:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "ak")
        root = mock.url.removesuffix("/v1")
        chat = ChatAnthropicBatch(model="claude-sonnet-4-5", api_key="ak", base_url=root, temperature=0)
        model = NamedModel(name="anthropic:claude-sonnet-4-5", role="judge", chat=chat, provider="anthropic")
        from sgieval.models.structured import native_structured

        structured, mode = native_structured(model, Verdict)
        ledger = Ledger()

        async def go():
            with call_context(
                CallContext(use_cache=False, batches=BatchCollector(tmp_path, window_s=0.1, poll_s=0.02))
            ):
                msgs = [SystemMessage("You are terse."), HumanMessage("What is the capital of France?")]
                repeat = repeat_of(model, 1)
                with prompt_scope("sgieval:*/rigor"):  # a family of prompts: the system prompt is a cache breakpoint
                    return await asyncio.gather(
                        ainvoke(model, msgs, ledger=ledger),
                        ainvoke(repeat, msgs, ledger=ledger),  # the same body, a second draw: its own request
                        ainvoke(structured, [HumanMessage("Rate this.")], ledger=ledger),
                    )

        text, again, rated = asyncio.run(go())
        blog = mock.batch_log()
        bodies = [json.loads(e["body"]) for e in mock.log()]
    systems = [b.get("system") for b in bodies]
    assert systems.count([{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]) == 2
    assert mode == "function_calling"
    assert text.content == again.content == "Paris is the capital."
    assert rated.tool_calls[0]["args"] == {"score": 7, "reason": "sound"}
    creates = [r for r in blog if r["op"] == "msgbatch_create"]
    assert len(creates) == 1 and len(set(creates[0]["custom_ids"])) == 3  # one batch, three distinct requests
    assert all(re.fullmatch(r"[0-9a-f]{48}", c) for c in creates[0]["custom_ids"])
    # the system prompt went as Anthropic's top-level system; usage words: "You are terse." + the question
    assert text.usage_metadata["input_tokens"] == 3 + 6 and text.usage_metadata["output_tokens"] == 4
    # claude-sonnet-4-5 at genai-prices' batch price: 1.5 USD per 1M input tokens, 7.5 per 1M output tokens
    first = ledger.records[0]
    assert first.batch and first.cost == pytest.approx((9 * 1.5 + 4 * 7.5) / 1e6, rel=1e-12)


def test_a_submission_whose_batch_id_was_not_written_is_found_again(tmp_path):
    # a run killed after creating its batch and before writing the batch id: the journal holds the submission
    # (its uploaded file and custom ids) only; the next run finds the batch by its file and submits nothing
    body = {"model": "m", "messages": [{"content": "a b", "role": "user"}], "temperature": 0.0}  # as sent
    with MockOpenAI(batch_polls=0) as mock:
        cid = custom_id("openai", body, base_url=mock.url)
        client = openai.OpenAI(base_url=mock.url, api_key="k")
        line = json.dumps({"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body})
        f = client.files.create(file=("b.jsonl", line.encode(), "application/jsonl"), purpose="batch")
        client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
        sub = {"api": "openai", "base_url": mock.url, "custom_ids": [cid], "input_file_id": f.id, "created_after": 0}
        (tmp_path / "batches.json").write_text(
            json.dumps({"batches": {}, "submissions": {"submission:x": sub}, "requests": {cid: "submission:x"}})
        )
        chat = BatchChatOpenAI(model="m", base_url=mock.url, api_key="k", temperature=0)
        named = NamedModel(name="openai:m", role="target", chat=chat, provider=mock.url)

        async def go():
            with call_context(
                CallContext(use_cache=False, batches=BatchCollector(tmp_path, window_s=0.05, poll_s=0.02))
            ):
                return await ainvoke(named, [HumanMessage("a b")])

        out = asyncio.run(go())
        creates = [r for r in mock.batch_log() if r["op"] == "batch_create"]
    assert out.content == "echo: a b"
    assert len(creates) == 1  # the test's own; the collector created none
    journal = json.loads((tmp_path / "batches.json").read_text())
    assert journal["submissions"] == {} and journal["requests"] == {cid: "batch_mock_0"}


def test_a_server_without_a_batch_api_is_refused_before_any_call(batch_env):
    tmp_path = batch_env
    with MockOpenAI(replies=reply, batch_api=False) as mock:
        with pytest.raises(InputError) as e:
            _evaluate(tmp_path, "nobatch", mock, batch=True)
        assert mock.log() == []  # no model was called
    msg = e.value.one_line()
    assert "openai:gpt-4o-mini" in msg and "does not serve /v1/batches (HTTP 404)" in msg and "drop --batch" in msg
    assert not (tmp_path / "runs" / "nobatch").exists()  # nothing computed: no run folder left


def test_a_model_without_a_batch_api_is_refused(batch_env):
    from sgieval.tests.conftest import routed

    tmp_path = batch_env
    with pytest.raises(InputError) as e:
        sgieval.evaluate(
            "Which model is most rigorous?",
            models=[routed("scripted-target", [], default="x")],
            benchmark=str(BENCH),
            out_dir=tmp_path / "runs",
            batch=True,
        )
    assert "scripted-target" in e.value.one_line() and "drop --batch" in e.value.one_line()


# ------------------------------------------------------------------ a SIGKILL while polling, then resume
def _wait_for(pred, timeout_s: float = 120.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _in_progress(mock: MockOpenAI, batch_id: str) -> bool:
    return any(
        r["op"] == "batch_retrieve" and r["batch_id"] == batch_id and r["status"] == "in_progress"
        for r in mock.batch_log()
    )


@pytest.mark.slow
def test_batch_run_survives_sigkill_while_polling_and_submits_nothing_twice(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SGIEVAL_DATA"}
    env.update(
        OPENAI_API_KEY="test",
        SGIEVAL_CACHE_DIR=str(tmp_path / "cache"),
        SGIEVAL_BATCH_POLL="0.1",
        SGIEVAL_BATCH_WINDOW="0.2",
        SGIEVAL_PROGRESS_EVERY="0.2",
        PYTHONUNBUFFERED="1",
    )
    hold = {0: 10**9, 1: 10**9, 2: 10**9}  # batch index -> polls in progress before it completes
    with MockOpenAI(replies=reply, batch_polls=lambda i: hold.get(i, 0)) as mock:
        direct = _evaluate(tmp_path, "direct", mock)
        mock.reset()
        args = [sys.executable, "-m", "sgieval.cli"]
        ask = [
            *args,
            "ask",
            "Which model is most rigorous?",
            "-b",
            str(BENCH),
            "--models",
            ",".join(TARGETS),
            "--judge",
            JUDGE,
            "--base-url",
            mock.url,
            "--tools",
            "",
            "--out",
            str(tmp_path / "runs"),
            "--yes",
            "--batch",
            "--bootstrap-resamples",
            "200",
        ]
        with (tmp_path / "first.err").open("w") as err:
            proc = subprocess.Popen(ask, env=env, stdout=subprocess.DEVNULL, stderr=err, cwd=tmp_path)
            # killed while the provider says the target batch is in progress
            # the two target batches (one per model) are in progress
            _wait_for(
                lambda: (
                    _in_progress(mock, "batch_mock_0") and _in_progress(mock, "batch_mock_1") and proc.poll() is None
                ),
                what="the target batches",
            )
            time.sleep(0.5)  # a few polls, and progress lines
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
        run_dir = next(p for p in (tmp_path / "runs").iterdir() if p.name != "direct")
        assert "batch batch_mock_0 in_progress" in (tmp_path / "first.err").read_text()  # the progress display
        assert not (run_dir / "responses.jsonl").exists() or not (run_dir / "responses.jsonl").read_text()
        hold[0] = hold[1] = 0  # the provider finishes the target batches; the judge batch stays in progress
        with (tmp_path / "second.err").open("w") as err:
            proc = subprocess.Popen(
                [*args, "resume", str(run_dir)], env=env, stdout=subprocess.DEVNULL, stderr=err, cwd=tmp_path
            )
            _wait_for(lambda: _in_progress(mock, "batch_mock_2") and proc.poll() is None, what="the judge batch")
            time.sleep(0.3)
            os.kill(proc.pid, signal.SIGKILL)  # killed again, now while the judge batch is polled
            proc.wait(30)
        hold[2] = 0
        res = subprocess.run(
            [*args, "resume", str(run_dir)], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=300
        )
        assert res.returncode == 0, res.stderr[-3000:]
        blog, log = mock.batch_log(), mock.log()
    creates = [r for r in blog if r["op"] == "batch_create"]
    assert [len(r["custom_ids"]) for r in creates] == [3, 3, 6]  # a target batch per model, one judge batch: once
    subs = mock.submissions()
    assert len(subs) == 12 and set(subs.values()) == {1}  # every request submitted exactly once
    assert len(log) == 12  # and answered once
    assert _values(run_dir) == _values(direct)  # the same scores as the direct run
    b = _ledger(run_dir)
    assert len(b) == 12 and all(r["batch"] and r["error"] is None for r in b)  # each call recorded once, no
    # "interrupted" call for the requests the killed processes were waiting for


def test_an_anthropic_judge_scores_through_message_batches(batch_env, monkeypatch, fresh_call_cache):
    from sgieval.bench.mock_openai import _content_text

    def anthropic_or_openai(body, index):
        if body["model"] != "claude-sonnet-4-5":
            return reply(body, index)
        system = _content_text(body["messages"][0]["content"])  # the mock puts Anthropic's system first
        user = " ".join(_content_text(m["content"]) for m in body["messages"][1:])
        names = re.findall(r"^- (.+?) \(weight [^)]*\):", system, flags=re.M)
        score = 8 if "careful answer" in user else 3
        tool = body["tools"][0]["name"]  # structured output: the one forced tool
        args = {"scores": [{"criterion": c, "score": score, "rationale": "r", "evidence": []} for c in names]}
        return {"tool_calls": [{"name": tool, "arguments": args}]}

    tmp_path = batch_env
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak")
    with MockOpenAI(replies=anthropic_or_openai, batch_polls=1) as mock:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", mock.url.removesuffix("/v1"))
        run = sgieval.evaluate(
            "Which model is most rigorous?",
            models=TARGETS,
            judge="anthropic:claude-sonnet-4-5",
            benchmark=str(BENCH),
            base_url=mock.url,
            tools="",
            out_dir=tmp_path / "runs",
            run_id="anthropic",
            bootstrap_resamples=200,
            batch=True,
        )
        ops = [(r["op"], len(r.get("custom_ids") or [])) for r in mock.batch_log() if "create" in r["op"]]
    assert run.report is not None
    # the targets on OpenAI (a batch per model), then the judge on Anthropic
    assert ops == [("batch_create", 3), ("batch_create", 3), ("msgbatch_create", 6)]
    values = _values(tmp_path / "runs" / "anthropic")
    for item in ("q1", "q2", "3"):
        assert values[(f"jsonl:sample_qa/{item}", "openai:gpt-4o-mini", "rigor")] == 80.0
        assert values[(f"jsonl:sample_qa/{item}", "openai:gpt-4.1-nano", "rigor")] == 30.0
    judged = [r for r in _ledger(tmp_path / "runs" / "anthropic") if r["role"] == "judge"]
    assert len(judged) == 6 and all(r["batch"] and r["model"] == "anthropic:claude-sonnet-4-5" for r in judged)
    # claude-sonnet-4-5 at genai-prices' batch price, 1.5 / 7.5 USD per 1M input / output tokens
    assert all(r["cost"] == pytest.approx((r["input_tokens"] * 1.5 + r["output_tokens"] * 7.5) / 1e6) for r in judged)


def test_a_request_the_batch_answers_with_429_is_retried_in_a_new_batch_and_a_400_is_a_failure(tmp_path):
    from sgieval.core import ModelCallError

    def faults(index, body):  # the first answer of "again" is a 429; "never" is a bad request every time
        text = body["messages"][-1]["content"]
        return "429" if (text == "again" and index == 0) else "400" if text == "never" else None

    with MockOpenAI(faults=faults, batch_polls=0) as mock:
        chat = BatchChatOpenAI(model="gpt-4o-mini", base_url=mock.url, api_key="k", temperature=0)
        named = NamedModel(name="openai:gpt-4o-mini", role="target", chat=chat, provider=mock.url)
        ledger = Ledger()

        async def go():
            collector = BatchCollector(tmp_path, window_s=0.1, poll_s=0.02)
            with call_context(CallContext(use_cache=False, batches=collector)):
                return await asyncio.gather(
                    ainvoke(named, [HumanMessage("again")], ledger=ledger, base_delay_s=0.01),
                    ainvoke(named, [HumanMessage("never")], ledger=ledger, base_delay_s=0.01),
                    return_exceptions=True,
                )

        ok, bad = asyncio.run(go())
        creates = [r["custom_ids"] for r in mock.batch_log() if r["op"] == "batch_create"]
    assert ok.content == "echo: again"
    assert isinstance(bad, ModelCallError) and "HTTP 400" in str(bad) and "batched request failed" in str(bad)
    assert f"{mock.url} batch batch_mock_" in str(bad)  # the reason names the batch that answered it
    body = {"model": "gpt-4o-mini", "messages": [{"content": "again", "role": "user"}], "temperature": 0.0}
    again = custom_id("openai", body, base_url=mock.url)
    assert len(creates) == 2 and creates[1] == [again]  # only the 429 goes again, in a batch of its own
    assert sorted((r.error is None, r.batch) for r in ledger.records) == [(False, True), (True, True)]


def test_a_tool_loop_sends_one_batch_per_round(tmp_path):
    from langchain_core.tools import tool

    from sgieval.models.tool_loop import run_tool_loop

    @tool
    def lookup(query: str) -> str:
        """Look a fact up."""
        return f"found {query}"

    def answer(body, index):  # round 1: a tool call; round 2 (after the tool result): the final text
        last = body["messages"][-1]
        if last["role"] == "tool":
            return "final: " + last["content"]
        return {"tool_calls": [{"name": "lookup", "arguments": {"query": last["content"]}}]}

    with MockOpenAI(replies=answer, batch_polls=0) as mock:
        chat = BatchChatOpenAI(model="gpt-4.1-mini", base_url=mock.url, api_key="k", temperature=0)
        judge = NamedModel(name="openai:gpt-4.1-mini", role="judge", chat=chat, provider=mock.url)
        bound = chat.bind_tools([lookup])

        async def execute(name, args):
            return lookup.invoke(args)

        async def go():
            with call_context(
                CallContext(use_cache=False, batches=BatchCollector(tmp_path, window_s=0.2, poll_s=0.02))
            ):
                return await asyncio.gather(
                    *(
                        run_tool_loop(judge, [HumanMessage(q)], bound, execute, offered=["lookup"])
                        for q in ("alpha", "beta", "gamma")
                    )
                )

        outs = asyncio.run(go())
        creates = [len(r["custom_ids"]) for r in mock.batch_log() if r["op"] == "batch_create"]
    assert [o.last.content for o in outs] == ["final: found alpha", "final: found beta", "final: found gamma"]
    assert creates == [3, 3]  # the three judges' first turns in one batch, their second turns in the next


@pytest.mark.parametrize("spec", ["local:smollm2", "local:qwen2.5-0.5b"])
def test_the_embedded_model_is_refused_before_it_is_loaded(batch_env, spec):
    tmp_path = batch_env
    with pytest.raises(InputError) as e:
        sgieval.evaluate(
            "Which model is most rigorous?", models=spec, benchmark=str(BENCH), out_dir=tmp_path, batch=True
        )
    msg = e.value.one_line()
    assert spec in msg and "the embedded model runs on this machine and has no batch API" in msg
    assert "drop --batch" in msg


def test_the_progress_line_shows_a_pending_batch(tmp_path):
    import io

    from rich.console import Console

    from sgieval.cli.progress import RunProgress

    with MockOpenAI(batch_polls=10**6) as mock:
        chat = BatchChatOpenAI(model="gpt-4o-mini", base_url=mock.url, api_key="k", temperature=0)
        named = NamedModel(name="openai:gpt-4o-mini", role="target", chat=chat, provider=mock.url)
        collector = BatchCollector(tmp_path, window_s=0.05, poll_s=0.02)
        progress = RunProgress(Console(file=io.StringIO(), force_terminal=False), lambda: None, 0, lambda: collector)
        assert progress.batches() == ""

        async def go():
            with call_context(CallContext(use_cache=False, batches=collector)):
                task = asyncio.ensure_future(
                    asyncio.gather(*(ainvoke(named, [HumanMessage(w)]) for w in ("one", "two", "three", "four")))
                )
                while "in_progress" not in progress.batches():
                    await asyncio.sleep(0.02)
                line = progress.line()
                task.cancel()
                return line

        line = asyncio.run(go())
    # 4 requests; the mock reports 4 * polls // (polls needed + 1) finished, at most 3 while in progress: 0 here
    assert line.endswith(", batch batch_mock_0 in_progress 0/4"), line


def test_the_batch_journal_is_read_as_data(tmp_path):
    from sgieval.models.batch_collector import BatchJournal

    (tmp_path / "batches.json").write_text(
        json.dumps(
            {
                "batches": {"batch_ok": {"custom_ids": ["a"]}, "../../v1/files": {"custom_ids": ["b"]}, "x": 3},
                "submissions": {"submission:abc": {"custom_ids": ["c"]}},
                "requests": {"a": "batch_ok", "b": "../../v1/files", "c": "submission:abc", "d": 5},
            }
        )
    )
    j = BatchJournal(tmp_path)
    assert list(j.batches) == ["batch_ok"] and list(j.submissions) == ["submission:abc"]
    assert j.requests == {"a": "batch_ok", "c": "submission:abc"}
    (tmp_path / "batches.json").write_text("{not json")
    with pytest.raises(InputError) as e:
        BatchJournal(tmp_path)
    assert "batches.json" in e.value.one_line() and "submit its pending requests again" in e.value.one_line()


def test_a_batch_is_submitted_at_the_size_cap_without_waiting_for_the_window(tmp_path):
    with MockOpenAI(batch_polls=0) as mock:
        chat = BatchChatOpenAI(model="gpt-4o-mini", base_url=mock.url, api_key="k", temperature=0)
        named = NamedModel(name="openai:gpt-4o-mini", role="target", chat=chat, provider=mock.url)

        async def go():
            collector = BatchCollector(tmp_path, window_s=1.0, poll_s=0.02, max_requests=2)
            with call_context(CallContext(use_cache=False, batches=collector)):
                return await asyncio.gather(*(ainvoke(named, [HumanMessage(f"q{n}")]) for n in range(5)))

        asked = time.monotonic()  # the server logs time.monotonic() of this process
        outs = asyncio.run(go())
        creates = [r for r in mock.batch_log() if r["op"] == "batch_create"]
    assert [o.content for o in outs] == [f"echo: q{n}" for n in range(5)]
    assert [len(r["custom_ids"]) for r in creates] == [2, 2, 1]  # two full batches at once, the rest after the window
    # the last batch waited for the 1 s window after the calls were made; the two full ones did not wait for it
    # (measured from the calls, not from the first batch, whose upload a loaded machine may delay by 0.2 s or more)
    assert creates[1]["t"] - creates[0]["t"] < 0.8 and creates[2]["t"] - asked >= 1.0


@pytest.mark.slow
def test_ask_with_batch_and_a_server_without_batches_exits_2_naming_the_model(tmp_path):
    with MockOpenAI(batch_api=False) as mock:
        env = {**os.environ, "OPENAI_API_KEY": "test", "SGIEVAL_CACHE_DIR": str(tmp_path / "cache")}
        res = subprocess.run(
            [sys.executable, "-m", "sgieval.cli", "ask", "", "-b", str(BENCH), "-m", "openai:gpt-4o-mini",
             "--base-url", mock.url, "--out", str(tmp_path / "runs"), "--yes", "--batch"],
            env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
        )  # fmt: skip
        assert mock.log() == []  # no model call
    assert res.returncode == 2, res.stderr
    assert "openai:gpt-4o-mini" in res.stderr and "does not serve /v1/batches (HTTP 404)" in res.stderr
    assert "drop --batch" in res.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
