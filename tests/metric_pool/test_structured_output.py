"""Native structured output for judges: the local mock OpenAI server sees ``response_format``
with the pydantic schema; tool-calling mode; the prompt-embedded fallback for models without it (and for a
server that refuses ``response_format``); the path used is recorded in the typed evidence."""

from __future__ import annotations

import json

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import BaseModel, Field

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core import Score
from sgieval.metric_pool.judge import ask_judge
from sgieval.models.base import NamedModel
from sgieval.models.registry import resolve_model
from sgieval.models.structured import native_structured


class Verdict(BaseModel):
    """A judge verdict."""

    judgment: str
    score: int = Field(ge=0, le=10)


MSGS = [SystemMessage(content="You judge."), HumanMessage(content="Judge this.")]


@pytest.fixture(params=["direct", "sdk"])
def transport(request, monkeypatch):
    monkeypatch.setenv("SGIEVAL_OPENAI_TRANSPORT", request.param)
    return request.param


async def test_judge_call_sends_response_format_with_the_pydantic_schema(transport):
    with MockOpenAI(replies=['{"judgment": "correct", "score": 7}']) as mock:
        judge = resolve_model("openai:mock-judge", "judge", base_url=mock.url)
        reply = await ask_judge(judge, MSGS, Verdict)
        [entry] = mock.log()
    assert reply.parsed == Verdict(judgment="correct", score=7) and reply.attempts == 1
    assert reply.mode == "json_schema"
    rf = entry["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["name"] == "Verdict"
    schema = rf["json_schema"]["schema"]
    assert set(schema["properties"]) == {"judgment", "score"}
    assert schema["properties"]["score"]["minimum"] == 0 and schema["properties"]["score"]["maximum"] == 10
    ev = reply.evidence()
    assert ev.kind == "judge_reply" and ev.structured == "json_schema"


async def test_native_reply_is_still_parsed_by_our_parser_think_and_latex():
    replies = ['<think>{"judgment": "x", "score": 1}</think>{"judgment": "E = \\frac{1}{2}", "score": 9}']
    with MockOpenAI(replies=replies) as mock:
        judge = resolve_model("openai:mock-judge", "judge", base_url=mock.url)
        reply = await ask_judge(judge, MSGS, Verdict)
    assert reply.parsed == Verdict(judgment="E = \\frac{1}{2}", score=9) and reply.attempts == 1
    assert reply.reasoning == ['{"judgment": "x", "score": 1}']


async def test_native_parse_error_is_retried_with_the_schema_still_bound():
    with MockOpenAI(replies=['{"judgment": "ok", "score": 11}', '{"judgment": "ok", "score": 10}']) as mock:
        judge = resolve_model("openai:mock-judge", "judge", base_url=mock.url)
        reply = await ask_judge(judge, MSGS, Verdict)
        log = mock.log()
    assert reply.parsed.score == 10 and reply.attempts == 2
    assert [e["response_format"]["json_schema"]["name"] for e in log] == ["Verdict", "Verdict"]


async def test_server_refusing_response_format_falls_back_to_the_prompt_schema():
    with MockOpenAI(replies=['{"judgment": "ok", "score": 3}'], reject_params=("response_format",)) as mock:
        judge = resolve_model("openai:mock-judge", "judge", base_url=mock.url)
        reply = await ask_judge(judge, MSGS, Verdict)
        log = mock.log()
    assert reply.parsed == Verdict(judgment="ok", score=3)
    assert reply.mode == "prompt" and "refused" in reply.note
    assert [e["outcome"] for e in log] == ["400", "200"]
    assert log[1]["response_format"] is None


class _Recording(FakeMessagesListChatModel):
    seen: list = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001
        self.seen.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


async def test_model_without_structured_output_uses_the_prompt_embedded_schema():
    chat = _Recording(responses=[AIMessage(content='Sure: {"judgment": "ok", "score": 4}')], seen=[])
    judge = NamedModel(name="fake", role="judge", chat=chat, provider="fake")
    assert native_structured(judge, Verdict) is None
    reply = await ask_judge(judge, MSGS, Verdict)
    assert reply.parsed == Verdict(judgment="ok", score=4) and reply.mode == "prompt"
    system = chat.seen[0][0].content
    assert "matching this JSON schema:" in system and '"score"' in system
    s = Score(item_id="i", model="m", metric="x", value=1.0, evidence=[reply.evidence()])
    assert json.loads(s.model_dump_json())["evidence"][0]["structured"] == "prompt"


class _ToolCaller(BaseChatModel):
    """A chat model whose structured output goes through a forced tool call (LangChain's default
    with_structured_output over bind_tools); it answers with a tool call carrying raw JSON arguments."""

    kwargs_seen: list = []

    @property
    def _llm_type(self) -> str:
        return "tool-caller"

    def bind_tools(self, tools, **kwargs):  # noqa: ANN001
        from langchain_core.utils.function_calling import convert_to_openai_tool

        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001
        self.kwargs_seen.append(kwargs)
        raw = '{"judgment": "\\beta ok", "score": 6}'
        msg = AIMessage(
            content="",
            tool_calls=[
                {"name": "Verdict", "args": json.loads(raw.replace("\\b", "\\\\b")), "id": "c1", "type": "tool_call"}
            ],
            additional_kwargs={
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "Verdict", "arguments": raw}}]
            },
        )
        return ChatResult(generations=[ChatGeneration(message=msg)])


async def test_tool_calling_mode_reads_the_forced_tool_call():
    chat = _ToolCaller(kwargs_seen=[])
    judge = NamedModel(name="tc", role="judge", chat=chat, provider="tc")
    got = native_structured(judge, Verdict)
    assert got is not None and got[1] == "function_calling"
    reply = await ask_judge(judge, MSGS, Verdict)
    assert reply.mode == "function_calling" and reply.parsed == Verdict(judgment="\\beta ok", score=6)
    assert [t["function"]["name"] for t in chat.kwargs_seen[0]["tools"]] == ["Verdict"]
    assert "JSON schema" not in MSGS[0].content


def test_legacy_evidence_dicts_read_as_typed_records():
    old = {
        "item_id": "i",
        "model": "m",
        "metric": "x",
        "value": 1.0,
        "evidence": [
            {"tool": "judge", "judge": "j", "raw": ["r"], "attempts": 1, "error": None, "order": "A=reference"},
            {"tool": "web_search", "input": {"query": "q"}, "output": "o", "duration_s": 0.1},
            {
                "tool": "sandbox",
                "input": "unit test 0",
                "backend": "b",
                "output": "x",
                "exit_code": 0,
                "duration_s": 1.0,
            },
        ],
    }
    s = Score.model_validate(old)
    assert [e.kind for e in s.evidence] == ["judge_reply", "tool_call", "sandbox_run"]
    assert s.evidence[0].details == {"order": "A=reference"} and s.evidence[1].tool == "web_search"
    dumped = json.loads(s.model_dump_json())
    assert [e["kind"] for e in dumped["evidence"]] == ["judge_reply", "tool_call", "sandbox_run"]
    assert Score.model_validate(dumped) == s


def test_direct_transport_keeps_structured_calls_off_the_sdk_across_event_loops(monkeypatch):
    """A JSON-schema response_format is plain request JSON: ChatOpenAIDirect posts it itself (aiohttp), so a
    second event loop in the same process (resume, notebooks) does not hit the SDK's per-process client."""
    import asyncio

    monkeypatch.setenv("SGIEVAL_OPENAI_TRANSPORT", "direct")
    with MockOpenAI(replies=['{"judgment": "ok", "score": 5}']) as mock:
        judge = resolve_model("openai:mock-judge", "judge", base_url=mock.url)
        for i in range(2):
            reply = asyncio.run(ask_judge(judge, [*MSGS, HumanMessage(content=f"loop {i}")], Verdict))
            assert reply.parsed == Verdict(judgment="ok", score=5) and reply.mode == "json_schema"
        # the same structured call again is answered by the call cache (the bound schema is part of the key)
        again = asyncio.run(ask_judge(judge, [*MSGS, HumanMessage(content="loop 0")], Verdict))
        assert again.parsed == Verdict(judgment="ok", score=5)
        log = mock.log()
    assert len(log) == 2 and all("aiohttp" in e["user_agent"] for e in log)
    assert all(e["response_format"]["json_schema"]["name"] == "Verdict" for e in log)
