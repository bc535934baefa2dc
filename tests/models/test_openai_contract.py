"""Contract between the two ``openai:`` transports: ``ChatOpenAIDirect`` overrides private
methods of langchain-openai's ``ChatOpenAI`` (``_get_request_payload``, ``_create_chat_result``), so for the same
mock replies both must send byte-identical request bodies (the mock logs each body as received) and build
identical AIMessages; their HTTP errors must be classified alike by ``models.calls`` (status, retried or not,
Retry-After).  A langchain-openai or openai version where they differ fails here, not at a user's."""

from __future__ import annotations

import json
import re

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core.retry import retry_after_s
from sgieval.models import calls
from sgieval.models.openai_direct import ChatOpenAIDirect, compat_payload, wire_body

pytestmark = pytest.mark.usefixtures("fresh_call_cache")


@tool
def run_python(code: str) -> str:
    """Run Python code and return its output."""
    return code


CONVERSATION = [SystemMessage("Réponds brièvement: unités SI."), HumanMessage("what is 2 + 2? \u2603 \"quoted\"")]
WITH_TOOL_RESULT = [
    HumanMessage("compute 2 ** 10"),
    AIMessage(
        content="",
        tool_calls=[{"name": "run_python", "args": {"code": "print(2 ** 10)"}, "id": "c7", "type": "tool_call"}],
    ),
    ToolMessage(content="1024", tool_call_id="c7"),
]

CASES = {
    # name: (reply spec of the mock, constructor options, bind tools?, messages)
    "plain": ("plain answer here", dict(temperature=0, max_tokens=64, stop=["\n\n"]), False, CONVERSATION),
    "tool_calls": (
        {"content": None, "tool_calls": [{"name": "run_python", "arguments": {"code": "print(2)"}, "id": "c1"}]},
        dict(temperature=0.2),
        True,
        CONVERSATION,
    ),
    "usage_and_length": (
        {"content": "cut sho", "usage": {"prompt_tokens": 50, "completion_tokens": 7}, "finish_reason": "length"},
        dict(max_tokens=7, seed=3, top_p=0.5),
        False,
        CONVERSATION,
    ),
    "tool_result_turn": ("1024", dict(temperature=0, model_kwargs={"user": "u-1"}), True, WITH_TOOL_RESULT),
    "extra_body": ("ok", dict(temperature=0, extra_body={"top_k": 5, "repetition_penalty": 1.1}), False, CONVERSATION),
}


def _message_view(msg: AIMessage) -> dict:
    """Everything of the AIMessage but the per-request ids (the mock numbers its completions)."""
    d = msg.model_dump()
    d.pop("id", None)
    d["response_metadata"] = {k: v for k, v in d["response_metadata"].items() if k not in ("id", "sgieval")}
    return d


async def _both(
    reply, options: dict, bind: bool, messages, *, compat: bool = False, call_kw: dict | None = None
) -> tuple[list[dict], AIMessage, AIMessage]:
    """Both transports against one mock; ChatOpenAIDirect without (``compat`` False) or with the adaptations
    for stricter servers (:func:`sgieval.models.openai_direct.compat_payload`, on by default for every base URL
    but api.openai.com, so for the mock's)."""
    with MockOpenAI(replies=[reply], log_bodies=True) as mock:
        kw = dict(base_url=mock.url, api_key="k", model="gpt-4o-mini", max_retries=0, **options)
        out = []
        for cls in (ChatOpenAI, ChatOpenAIDirect):
            chat = cls(**kw) if cls is ChatOpenAI else cls(**kw, **({} if compat else {"server_compat": False}))
            runnable = chat.bind_tools([run_python]) if bind else chat
            out.append(await runnable.ainvoke(messages, **(call_kw or {})))
        log = mock.log()
    return log, out[0], out[1]


@pytest.mark.parametrize("case", sorted(CASES))
async def test_same_request_bytes_and_same_message(case):
    reply, options, bind, messages = CASES[case]
    log, sdk, direct = await _both(reply, options, bind, messages)
    assert len(log) == 2 and [e["outcome"] for e in log] == ["200", "200"]
    assert log[0]["body"] == log[1]["body"]  # byte-identical request bodies
    assert log[0]["content_type"].split(";")[0] == log[1]["content_type"].split(";")[0] == "application/json"
    assert _message_view(direct) == _message_view(sdk)
    # LangChain's run id on both (ChatOpenAIDirect's unobserved fast path names it as BaseChatModel does)
    assert re.fullmatch(RUN_ID, direct.id) and re.fullmatch(RUN_ID, sdk.id), (direct.id, sdk.id)


RUN_ID = r"lc_run--[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-0"


@pytest.mark.parametrize("case", sorted(CASES))
async def test_with_server_compat_the_body_is_the_sdk_body_after_the_same_adaptation(case):
    """For servers other than api.openai.com ChatOpenAIDirect adapts the body for stricter servers
    (llama-cpp-python): its bytes equal the SDK's body after the same :func:`compat_payload`, serialised as the
    SDK serialises (``wire_body``); the AIMessage is the same."""
    reply, options, bind, messages = CASES[case]
    log, sdk, direct = await _both(reply, options, bind, messages, compat=True)
    assert log[1]["body"] == wire_body(compat_payload(json.loads(log[0]["body"]))).decode("utf-8")
    assert _message_view(direct) == _message_view(sdk)


async def test_server_compat_changes_what_llama_cpp_needs_and_nothing_else():
    """Hand-checked: the tool-result turn's assistant message (content null) and max_tokens."""
    log, _, _ = await _both(*CASES["tool_result_turn"], compat=True)
    sdk, direct = json.loads(log[0]["body"]), json.loads(log[1]["body"])
    assert sdk["messages"][1]["content"] is None and direct["messages"][1]["content"] == ""
    assert {**direct, "messages": None} == {**sdk, "messages": None}
    log, _, _ = await _both(*CASES["usage_and_length"], compat=True)
    sdk, direct = json.loads(log[0]["body"]), json.loads(log[1]["body"])
    assert (sdk["max_completion_tokens"], "max_tokens" in sdk) == (7, False)
    assert direct == {**sdk, "max_tokens": 7}


async def test_the_bodies_carry_what_was_asked():
    """Hand-checked fields of two of the bodies (so "identical" cannot mean "both empty")."""
    log, sdk, _ = await _both(*CASES["extra_body"])
    body = json.loads(log[1]["body"])
    assert list(body)[:3] == ["model", "stream", "messages"] and body["stream"] is False
    assert body["top_k"] == 5 and body["repetition_penalty"] == 1.1 and "extra_body" not in body
    assert body["messages"][0] == {"content": "Réponds brièvement: unités SI.", "role": "system"}
    assert "Réponds" in log[1]["body"]  # UTF-8 as is, not \\u escapes
    log, sdk, direct = await _both(*CASES["tool_calls"])
    body = json.loads(log[1]["body"])
    assert [t["function"]["name"] for t in body["tools"]] == ["run_python"] and body["temperature"] == 0.2
    assert direct.tool_calls == [{"name": "run_python", "args": {"code": "print(2)"}, "id": "c1", "type": "tool_call"}]
    assert direct.response_metadata["finish_reason"] == "tool_calls"
    log, _, direct = await _both(*CASES["usage_and_length"])
    assert (
        direct.usage_metadata["input_tokens"],
        direct.usage_metadata["output_tokens"],
        direct.response_metadata["finish_reason"],
    ) == (50, 7, "length")


@pytest.mark.parametrize(
    "fault, status, retried, retry_after",
    [("429", 429, True, 2.0), ("500", 500, True, None), ("400", 400, False, None)],
)
async def test_errors_are_classified_alike(fault, status, retried, retry_after):
    with MockOpenAI(faults=lambda index, body: fault, retry_after_s=2.0) as mock:
        kw = dict(base_url=mock.url, api_key="k", model="gpt-4o-mini", max_retries=0)
        seen = []
        for cls in (ChatOpenAI, ChatOpenAIDirect):
            with pytest.raises(Exception) as ei:
                await cls(**kw).ainvoke([HumanMessage("hi")])
            e = ei.value
            seen.append((calls._status(e), calls._retryable(e), retry_after_s(e)))
    assert seen == [(status, retried, retry_after)] * 2


async def test_reasoning_text_is_the_one_documented_difference():
    """A server's separate ``reasoning_content`` is kept by ChatOpenAIDirect in ``additional_kwargs``
    (METRICS.md D.8; ChatOpenAI drops it): that key is the only difference, the request bytes are the same."""
    reply = {"content": "42", "reasoning_content": "6 times 7 is 42"}
    log, sdk, direct = await _both(reply, dict(temperature=0), False, CONVERSATION)
    assert log[0]["body"] == log[1]["body"]
    assert direct.additional_kwargs.pop("reasoning_content") == "6 times 7 is 42"
    assert "reasoning_content" not in sdk.additional_kwargs
    assert _message_view(direct) == _message_view(sdk)


@pytest.mark.parametrize("bind", [False, True])
async def test_prompt_cache_key_is_sent_as_chat_openai_sends_it(bind):
    """The judge calls' ``prompt_cache_key`` (a call keyword, as models.calls passes it): the same bytes from both
    transports, the key where the openai SDK puts it (after presence_penalty, before temperature)."""
    key = {"prompt_cache_key": "sgieval:*/rigor"}
    log, sdk, direct = await _both("ok", dict(temperature=0, presence_penalty=0.5), bind, CONVERSATION, call_kw=key)
    assert log[0]["body"] == log[1]["body"]
    body = json.loads(log[1]["body"])
    assert body["prompt_cache_key"] == "sgieval:*/rigor" and log[1]["prompt_cache_key"] == "sgieval:*/rigor"
    keys = list(body)
    assert keys.index("presence_penalty") < keys.index("prompt_cache_key") < keys.index("temperature")
    assert _message_view(direct) == _message_view(sdk)
