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
from sgieval.models import openai_direct
from sgieval.models.base import NamedModel
from sgieval.models.calls import ainvoke, call_info, retry_after_s
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
    # parse() would send it, and the reply's JSON is parsed into the schema (issue 16 item 4)
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


async def test_callable_api_key_falls_back_to_the_sdk_path():
    with MockOpenAI() as mock:
        chat = ChatOpenAIDirect(base_url=mock.url, api_key=lambda: "rotating-key", model="m", max_retries=0)
        out = await chat.ainvoke("hello")
        (entry,) = mock.log()
    assert out.content == "echo: hello"
    assert entry["authorization"] == "Bearer rotating-key" and entry["user_agent"].startswith("AsyncOpenAI/Python")


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


async def test_sdk_clients_are_built_only_when_a_call_needs_them(monkeypatch):
    """ChatOpenAI builds a sync and an async openai SDK client at construction (~80 ms: two SSL contexts,
    the SDK's chat resources) that the direct path never uses; ChatOpenAIDirect builds them on the first
    call that takes the SDK path, as ChatOpenAI would have built them (issue 13: time to first call)."""
    import openai

    built = []
    init = openai.AsyncOpenAI.__init__

    def counting_init(self, *a, **kw):
        built.append(kw.get("base_url"))
        init(self, *a, **kw)

    monkeypatch.setattr(openai.AsyncOpenAI, "__init__", counting_init)
    replies = ["plain", json.dumps({"score": 7, "rationale": "sound controls"})]
    with MockOpenAI(replies=replies) as mock:
        # server_compat=False: structured output goes through the SDK's parse(), as for api.openai.com
        chat = ChatOpenAIDirect(base_url=mock.url, api_key="k", model="m", max_retries=0, server_compat=False)
        assert (await chat.ainvoke("direct")).content == "plain"
        assert built == []  # construction and a direct call: no SDK client
        parsed = await chat.with_structured_output(Verdict, method="json_schema").ainvoke("via the sdk")
        (direct, via_sdk) = mock.log()
    assert parsed == Verdict(score=7, rationale="sound controls")
    assert built == [mock.url]
    assert isinstance(chat.root_async_client, openai.AsyncOpenAI) and isinstance(chat.root_client, openai.OpenAI)
    assert via_sdk["user_agent"].startswith("AsyncOpenAI/Python") and not direct["user_agent"].startswith("AsyncOpenAI")
    reference = ChatOpenAI(base_url=mock.url, api_key="k", model="m", max_retries=0)
    for f in ("root_async_client", "root_client"):
        mine, theirs = getattr(chat, f), getattr(reference, f)
        assert (mine.base_url, mine.api_key, mine.max_retries, mine.timeout) == (
            theirs.base_url,
            theirs.api_key,
            theirs.max_retries,
            theirs.timeout,
        )


@pytest.mark.parametrize("base_url", [None, "http://127.0.0.1:9/v1"])
def test_deferred_clients_keep_chatopenais_stream_usage_default(base_url, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    kw = {"api_key": "k", "model": "m", **({"base_url": base_url} if base_url else {})}
    chat = ChatOpenAIDirect(**kw)
    chat._ensure_sdk()
    assert chat.stream_usage == ChatOpenAI(**kw).stream_usage == (True if base_url is None else None)
    given = ChatOpenAIDirect(**kw, stream_usage=False)
    given._ensure_sdk()
    assert given.stream_usage is False


def test_clients_given_or_shaped_by_the_caller_are_built_at_construction():
    import httpx
    import openai

    chat = ChatOpenAIDirect(api_key="k", model="m", http_async_client=httpx.AsyncClient())
    assert isinstance(chat.root_async_client, openai.AsyncOpenAI)
    deferred = ChatOpenAIDirect(api_key="k", model="m")
    assert type(deferred.root_async_client).__name__ == "_DeferredClient"
    # a placeholder read by any path still reaches the real client
    assert str(deferred.root_async_client.base_url) == "https://api.openai.com/v1/"


def test_a_deferred_model_pickles_and_copies():
    import copy
    import pickle

    chat = ChatOpenAIDirect(base_url="http://127.0.0.1:9/v1", api_key="k", model="m")
    for other in (pickle.loads(pickle.dumps(chat)), copy.deepcopy(chat), chat.model_copy(deep=True)):
        other._ensure_sdk()
        assert str(other.root_async_client.base_url) == "http://127.0.0.1:9/v1/"
        assert other.openai_api_key.get_secret_value() == "k"
