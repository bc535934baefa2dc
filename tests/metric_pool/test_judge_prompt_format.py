"""A stored judge prompt carries the structured-output format in the form the provider received it: the request's
``response_format`` object for the native JSON-schema mode (``{"type": "json_schema", "json_schema": {...}}``), the
forced tool and ``tool_choice`` for the function-calling mode; a prompt sent without a format hashes as before."""

from __future__ import annotations

import json

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import BaseModel, Field

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core import prompt_hash
from sgieval.metric_pool.judge import ask_judge
from sgieval.models.base import NamedModel
from sgieval.models.openai_direct import ChatOpenAIDirect

MSGS = [SystemMessage(content="You judge."), HumanMessage(content="Rate this answer.")]


class Verdict(BaseModel):
    """A verdict."""

    judgment: str
    score: int = Field(ge=0, le=10)


def test_a_plain_prompt_hashes_as_before():
    m = [{"role": "system", "content": "You judge."}, {"role": "user", "content": "Rate this."}]
    tools = [{"type": "function", "function": {"name": "web_search", "parameters": {}}}]
    assert prompt_hash(m) == "a8d821050f5b51e2" and prompt_hash(m, None, tools) == "4691614678ea5835"


async def test_the_json_schema_format_is_stored_as_the_request_carried_it():
    reply = json.dumps({"judgment": "fine", "score": 7})
    with MockOpenAI(replies=[reply], log_bodies=True) as mock:
        chat = ChatOpenAIDirect(base_url=mock.url, api_key="k", model="mock-judge", max_retries=0, temperature=0)
        judge = NamedModel(name="openai:mock-judge", role="judge", chat=chat, provider="mock")
        r = await ask_judge(judge, MSGS, Verdict)
        (body,) = [json.loads(e["body"]) for e in mock.log()]
    assert r.parsed == Verdict(judgment="fine", score=7) and r.mode == "json_schema"
    p = r.prompt
    assert p["response_format"] == body["response_format"]
    assert p["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Verdict", "schema": Verdict.model_json_schema(), "description": "A verdict."},
    }
    assert p["messages"] == body["messages"] and "tools" not in p and "tool_choice" not in p
    assert p["hash"] == prompt_hash(body["messages"], body["response_format"])


class _ToolCaller(BaseChatModel):
    """Structured output through a forced tool call (LangChain's with_structured_output over bind_tools)."""

    kwargs_seen: list = []

    @property
    def _llm_type(self) -> str:
        return "tool-caller"

    def bind_tools(self, tools, **kwargs):  # noqa: ANN001
        from langchain_core.utils.function_calling import convert_to_openai_tool

        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001
        self.kwargs_seen.append(kwargs)
        raw = '{"judgment": "fine", "score": 6}'
        msg = AIMessage(
            content="",
            tool_calls=[{"name": "Verdict", "args": json.loads(raw), "id": "c1", "type": "tool_call"}],
            additional_kwargs={
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "Verdict", "arguments": raw}}]
            },
        )
        return ChatResult(generations=[ChatGeneration(message=msg)])


async def test_the_function_calling_format_is_stored_as_the_forced_tool_and_tool_choice():
    chat = _ToolCaller(kwargs_seen=[])
    judge = NamedModel(name="tc", role="judge", chat=chat, provider="tc")
    r = await ask_judge(judge, MSGS, Verdict)
    assert r.mode == "function_calling" and r.parsed == Verdict(judgment="fine", score=6)
    (sent,) = chat.kwargs_seen
    p = r.prompt
    assert p["tools"] == sent["tools"] and p["tools"][0]["function"]["name"] == "Verdict"
    assert p["tool_choice"] == sent["tool_choice"] and "response_format" not in p
    assert p["hash"] == prompt_hash(p["messages"], None, sent["tools"], sent["tool_choice"])
    assert p["hash"] != prompt_hash(p["messages"], None, sent["tools"])
