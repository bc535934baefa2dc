"""ChatOpenAIDirect (the default client of ``openai:`` model strings) against the
mock OpenAI server: the same AIMessages as langchain's ChatOpenAI, HTTP errors
classified for ainvoke's retries, fallbacks, and one pooled session per loop."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core import InputError, ModelCallError
from sgieval.models import openai_direct, openai_wire
from sgieval.models.base import NamedModel
from sgieval.core import retry_after_s
from sgieval.models.calls import ainvoke, call_info
from sgieval.models.openai_direct import ChatOpenAIDirect, OpenAIHTTPError
from sgieval.models.registry import resolve_model

pytestmark = pytest.mark.usefixtures("fresh_call_cache")

REPLIES = [
    "plain answer here",
    {
        "content": None,
        "tool_calls": [{"name": "run_python", "arguments": {"code": "print(2)"}, "id": "c1"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 7},
    },
]


def _view(msg):
    return (
        msg.content,
        msg.tool_calls,
        msg.usage_metadata["input_tokens"],
        msg.usage_metadata["output_tokens"],
        msg.usage_metadata["total_tokens"],
        msg.response_metadata.get("finish_reason"),
        msg.response_metadata.get("model_name"),
    )


@pytest.mark.parametrize("reply_index", [0, 1])
async def test_same_message_as_chatopenai(reply_index):
    # request i is answered with REPLIES[i % 2]; both clients get the same reply
    replies = [REPLIES[reply_index]] * 2
    with MockOpenAI(replies=replies) as mock:
        kw = dict(base_url=mock.url, api_key="k", model="gpt-4o-mini", max_retries=0)
        msgs = [SystemMessage("be brief"), HumanMessage("what is two plus two")]
        sdk = await ChatOpenAI(**kw).ainvoke(msgs)
        direct = await ChatOpenAIDirect(**kw).ainvoke(msgs)
        assert mock.stats()["served"] == 2
        log = mock.log()
    assert [e["authorization"] for e in log] == ["Bearer k", "Bearer k"]
    assert log[0]["user_agent"].startswith("AsyncOpenAI/Python") and "aiohttp" in log[1]["user_agent"]
    assert _view(direct) == _view(sdk)
    if reply_index == 0:
        # default usage: prompt = words of all messages (2 + 5), completion = 3 words
        assert _view(direct)[:6] == ("plain answer here", [], 7, 3, 10, "stop")
    else:
        assert direct.tool_calls == [
            {"name": "run_python", "args": {"code": "print(2)"}, "id": "c1", "type": "tool_call"}
        ]
        assert _view(direct)[2:6] == (50, 7, 57, "tool_calls")


async def test_request_body_carries_messages_params_and_bound_tools():
    bodies = []

    def reply(body, index):
        bodies.append(body)
        return "ok"

    @tool
    def run_python(code: str) -> str:
        """Run Python code."""
        return code

    with MockOpenAI(replies=reply) as mock:
        chat = ChatOpenAIDirect(base_url=mock.url, api_key="k", model="m1", temperature=0, max_tokens=64)
        await chat.bind_tools([run_python]).ainvoke([HumanMessage("hi")])
    (body,) = bodies
    assert body["model"] == "m1" and body["temperature"] == 0 and body["max_completion_tokens"] == 64
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert [t["function"]["name"] for t in body["tools"]] == ["run_python"]
    assert body["tools"][0]["function"]["parameters"]["properties"] == {"code": {"type": "string"}}
    assert (
        body["stream"] is False
    )  # what the openai SDK sends for a plain create() (tests/models/test_openai_contract.py)


async def test_429_raises_status_error_and_ainvoke_retries_after_retry_after():
    with MockOpenAI(faults=lambda i, body: "429" if i == 0 else None, retry_after_s=0.25) as mock:
        chat = ChatOpenAIDirect(base_url=mock.url, api_key="k", model="m", max_retries=0)
        with pytest.raises(OpenAIHTTPError) as ei:
            await chat.ainvoke("first")
        assert ei.value.status_code == 429 and retry_after_s(ei.value) == 0.25
        assert "Rate limit reached (mock)" in str(ei.value)
        mock.reset()
        mock.faults = lambda i, body: "429" if i == 0 else None
        model = NamedModel(name="openai:m", role="target", chat=chat, provider="mock-429")
        out = await ainvoke(model, "second", base_delay_s=0.01)
        assert out.content == "echo: second" and call_info(out)["attempts"] == 2
        assert call_info(out)["latency_s"] >= 0.25  # waited at least Retry-After
        assert mock.stats() == {"requests": 2, "served": 1, "429": 1, "500": 0, "hung": 0}


async def test_500_every_time_becomes_a_model_call_error_with_the_status():
    with MockOpenAI(error_rate=1.0, share_429=0.0) as mock:
        model = NamedModel(
            name="openai:m",
            role="judge",
            provider="mock-500",
            chat=ChatOpenAIDirect(base_url=mock.url, api_key="k", model="m"),
        )
        with pytest.raises(ModelCallError) as ei:
            await ainvoke(model, "q", max_attempts=3, base_delay_s=0.01)
        assert mock.stats()["500"] == 3
    msg = str(ei.value)
    assert "openai:m" in msg and "after 3 attempt(s)" in msg and "HTTP 500 OpenAIHTTPError" in msg
    assert "Internal server error (mock)" in msg


async def test_refused_connection_is_retried_then_reported():
    model = NamedModel(
        name="openai:m",
        role="target",
        provider="closed-port",
        chat=ChatOpenAIDirect(base_url="http://127.0.0.1:9/v1", api_key="k", model="m"),
    )
    with pytest.raises(ModelCallError) as ei:
        await ainvoke(model, "q", max_attempts=2, base_delay_s=0.01)
    assert "after 2 attempt(s)" in str(ei.value) and "ClientConnectorError" in str(ei.value)


class Verdict(BaseModel):
    score: int
    rationale: str


async def test_structured_output_on_the_direct_path():
    # an OpenAI-compatible server (not api.openai.com): response_format goes on the direct path, as the SDK's
    # parse() would send it, and the reply's JSON is parsed into the schema
    bodies = []

    def reply(body, i):
        bodies.append(body)
        return json.dumps({"score": 7, "rationale": "sound controls"})

    with MockOpenAI(replies=reply) as mock:
        chat = ChatOpenAIDirect(base_url=mock.url, api_key="k", model="m", max_retries=0)
        out = await chat.with_structured_output(Verdict, method="json_schema").ainvoke("grade it")
        (entry,) = mock.log()
    assert out == Verdict(score=7, rationale="sound controls")
    assert not entry["user_agent"].startswith("AsyncOpenAI/Python")
    (body,) = bodies
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "Verdict"
    assert sorted(body["response_format"]["json_schema"]["schema"]["properties"]) == ["rationale", "score"]


async def test_structured_output_by_function_calling_json_mode_and_with_the_raw_reply():
    """The other two methods and ``include_raw``: a forced tool call parsed into the schema; ``json_object``
    parsed into a dict; the raw AIMessage beside the parsed value, and a reply that does not parse is a parsing
    error (never a value)."""
    replies = [
        {"content": None, "tool_calls": [{"name": "Verdict", "arguments": {"score": 4, "rationale": "r"}, "id": "c"}]},
        json.dumps({"score": 5}),
        json.dumps({"score": 6, "rationale": "fine"}),
        "not json at all",
    ]
    with MockOpenAI(replies=replies, log_bodies=True) as mock:
        chat = ChatOpenAIDirect(base_url=mock.url, api_key="k", model="m")
        by_tool = await chat.with_structured_output(Verdict, method="function_calling").ainvoke("a")
        as_dict = await chat.with_structured_output(None, method="json_mode").ainvoke("b")
        raw = chat.with_structured_output(Verdict, include_raw=True)
        ok, bad = await raw.ainvoke("c"), await raw.ainvoke("d")
        bodies = [json.loads(e["body"]) for e in mock.log()]
    assert by_tool == Verdict(score=4, rationale="r") and as_dict == {"score": 5}
    assert bodies[0]["tool_choice"] == {"type": "function", "function": {"name": "Verdict"}}
    assert bodies[0]["parallel_tool_calls"] is False and bodies[1]["response_format"] == {"type": "json_object"}
    assert ok["parsed"] == Verdict(score=6, rationale="fine") and ok["parsing_error"] is None
    assert ok["raw"].content == json.dumps({"score": 6, "rationale": "fine"})
    assert bad["parsed"] is None and bad["parsing_error"] is not None and bad["raw"].content == "not json at all"


def test_session_is_pooled_per_loop_and_closed_when_the_loop_ends(caplog):
    with MockOpenAI() as mock:
        chat = ChatOpenAIDirect(base_url=mock.url, api_key="k", model="m")

        async def two_calls():
            a = await chat.ainvoke("one")
            s1 = await openai_direct._session()
            b = await chat.ainvoke("two")
            assert await openai_direct._session() is s1
            await openai_direct.aclose_sessions()
            assert s1.closed and await openai_direct._session() is not s1
            c = await chat.ainvoke("three")
            return a.content, b.content, c.content, await openai_direct._session()

        with caplog.at_level(logging.ERROR, logger="asyncio"):
            first = asyncio.run(two_calls())
            second = asyncio.run(two_calls())
    assert first[:3] == second[:3] == ("echo: one", "echo: two", "echo: three")
    assert first[3] is not second[3] and first[3].closed and second[3].closed
    assert "Unclosed" not in caplog.text
    held = [h[1] for h in openai_direct._HOLDERS.values()]
    assert first[3] not in held and second[3] not in held  # ended loops are forgotten


def test_openai_strings_use_the_direct_client_unless_told_otherwise(monkeypatch):
    monkeypatch.delenv("SGIEVAL_OPENAI_TRANSPORT", raising=False)
    m = resolve_model("openai:gpt-4o", "judge", base_url="http://127.0.0.1:9/v1")
    assert type(m.chat) is ChatOpenAIDirect and (m.chat.max_retries, m.chat.request_timeout) == (0, 300.0)
    monkeypatch.setenv("SGIEVAL_OPENAI_TRANSPORT", "sdk")
    assert type(resolve_model("openai:gpt-4o", "judge", base_url="http://127.0.0.1:9/v1").chat) is ChatOpenAI
    monkeypatch.setenv("SGIEVAL_OPENAI_TRANSPORT", "curl")
    with pytest.raises(InputError) as ei:
        resolve_model("openai:gpt-4o", "judge", base_url="http://127.0.0.1:9/v1")
    assert "SGIEVAL_OPENAI_TRANSPORT" in ei.value.one_line() and "'sdk'" in ei.value.one_line()


def test_the_synchronous_invoke_sends_the_same_body_and_gets_the_same_message():
    """``invoke`` (httpx) and ``ainvoke`` (aiohttp) send identical bytes and build identical messages."""
    with MockOpenAI(replies=[REPLIES[1], REPLIES[1]], log_bodies=True) as mock:
        chat = ChatOpenAIDirect(base_url=mock.url, api_key="k", model="m", temperature=0, max_tokens=9)
        sync = chat.invoke([HumanMessage("same")])
        asyn = asyncio.run(chat.ainvoke([HumanMessage("same")]))
        a, b = mock.log()
    assert a["body"] == b["body"] and json.loads(a["body"])["max_completion_tokens"] == 9
    assert _view(sync) == _view(asyn) == ("", REPLIES_CALLS, 50, 7, 57, "tool_calls", "m")


REPLIES_CALLS = [{"name": "run_python", "args": {"code": "print(2)"}, "id": "c1", "type": "tool_call"}]


def test_the_model_pickles_and_copies_with_its_fields():
    import copy
    import pickle

    chat = ChatOpenAIDirect(base_url="http://127.0.0.1:9/v1", api_key="k", model="m", timeout=7)
    for other in (pickle.loads(pickle.dumps(chat)), copy.deepcopy(chat), chat.model_copy(deep=True)):
        assert (other.model_name, other.openai_api_base, other.request_timeout) == ("m", "http://127.0.0.1:9/v1", 7.0)
        assert other.openai_api_key.get_secret_value() == "k"


def test_the_reply_fields_table_is_the_installed_openai_sdks():
    """The stand-in table of optional reply fields equals what the pinned openai package declares, so a message
    built without openai installed is the same (a new openai version that adds a field fails here)."""
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletion, ChatCompletionMessage
    from openai.types.chat.chat_completion import Choice

    def optional(cls):
        return {n: f.default for n, f in cls.model_fields.items() if not f.is_required()}

    installed = {
        "completion": optional(ChatCompletion),
        "choice": optional(Choice),
        "message": optional(ChatCompletionMessage),
        "usage": optional(CompletionUsage),
    }
    assert installed == openai_wire.COMPLETION_FIELDS


async def test_a_call_works_without_the_optional_openai_package(monkeypatch):
    """The transport needs neither the openai SDK nor langchain-openai: with both imports failing (their
    modules set to None, as for a package that is not installed) a call works and gives the same message."""
    import sys

    with MockOpenAI(replies=[REPLIES[1], REPLIES[1]]) as mock:
        kw = dict(base_url=mock.url, api_key="k", model="m", temperature=0)
        with_sdk = await ChatOpenAIDirect(**kw).ainvoke([HumanMessage("q")])
        for name in [n for n in sys.modules if n == "openai" or n.startswith(("openai.", "langchain_openai"))]:
            monkeypatch.delitem(sys.modules, name)
        monkeypatch.setitem(sys.modules, "openai", None)
        monkeypatch.setitem(sys.modules, "langchain_openai", None)
        with pytest.raises(ImportError):
            import openai  # noqa: F401
        without = await ChatOpenAIDirect(**kw).ainvoke([HumanMessage("q")])
    strip = lambda m: {**m.model_dump(), "id": None, "response_metadata": {**m.response_metadata, "id": None}}  # noqa: E731
    assert strip(without) == strip(with_sdk)
    assert without.tool_calls == REPLIES_CALLS and without.response_metadata["token_usage"]["prompt_tokens"] == 50
