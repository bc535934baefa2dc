"""Sampling parameters per role and per model family (models/params.py, models/calls.py):
families known to reject a parameter do not get it, and an HTTP 400 naming a parameter that was sent is retried
once without it, against the local mock server made to reject ``temperature`` as the OpenAI API does."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core import InputError, ModelCallError
from sgieval.models.calls import ainvoke
from sgieval.models.openai_direct import OpenAIHTTPError
from sgieval.models.params import rejected_param, sampling_params
from sgieval.models.registry import resolve_model


@pytest.mark.parametrize(
    "spec, sent, dropped",
    [
        ("openai:o4-mini", {"reasoning_effort": "low"}, ["temperature"]),
        ("openai:o1", {"reasoning_effort": "low"}, ["temperature"]),
        ("openai:openai/o3-mini", {"reasoning_effort": "low"}, ["temperature"]),  # a router's path
        ("openai:gpt-5", {"reasoning_effort": "low"}, ["temperature"]),
        ("openai:gpt-5-chat-latest", {"temperature": 0.0, "reasoning_effort": "low"}, []),
        ("openai:deepseek-reasoner", {"reasoning_effort": "low"}, ["temperature"]),
        ("openai:gpt-4.1", {"temperature": 0.0}, ["reasoning_effort"]),  # not a reasoning model
        ("openai:qwen3-32b", {"temperature": 0.0, "reasoning_effort": "low"}, []),  # unknown: sent, 400 decides
    ],
)
def test_family_policy(spec, sent, dropped):
    got_sent, got_dropped = sampling_params(spec, temperature=0.0, reasoning_effort="low")
    assert got_sent == sent and sorted(got_dropped) == dropped


def test_reasons_and_unset_parameters():
    assert sampling_params("openai:o4-mini", temperature=0.0)[1] == {
        "temperature": "OpenAI o-series models reject it (asked 0)"
    }
    assert sampling_params("openai:o4-mini") == ({}, {})
    assert sampling_params("anthropic:claude-x", temperature=0.3, reasoning_effort="high", openai_compatible=False) == (
        {"temperature": 0.3},
        {"reasoning_effort": "only OpenAI-compatible models take it (asked high)"},
    )


def test_resolved_judge_sends_only_what_its_family_takes(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    j = resolve_model("openai:o4-mini", "judge", temperature=0.0, reasoning_effort="low")
    assert j.params == {"reasoning_effort": "low"} and list(j.dropped) == ["temperature"]
    payload = j.chat.request_payload([HumanMessage(content="hi")])
    assert "temperature" not in payload and payload["reasoning_effort"] == "low"
    # langchain gives o1 models temperature 1 by itself: nothing is sent instead
    o1 = resolve_model("openai:o1", "judge", temperature=0.0)
    assert "temperature" not in o1.chat.request_payload([HumanMessage(content="hi")])
    t = resolve_model("openai:gpt-4.1", "target", temperature=0.7)
    assert t.chat.request_payload([HumanMessage(content="hi")])["temperature"] == 0.7


def test_rejected_param_reads_the_error():
    body = {
        "error": {
            "message": "Unsupported value: 'temperature' does not support 0 with this model.",
            "param": "temperature",
            "code": "unsupported_value",
        }
    }
    assert rejected_param(OpenAIHTTPError(400, {}, body, "u"), ["temperature", "reasoning_effort"]) == "temperature"
    # vLLM / other servers: no param field, the name in the message
    other = OpenAIHTTPError(
        400, {}, {"error": {"message": "Unrecognized request argument supplied: reasoning_effort"}}, "u"
    )
    assert rejected_param(other, ["temperature", "reasoning_effort"]) == "reasoning_effort"
    # a 400 about something else, or about a parameter that was not sent
    assert (
        rejected_param(
            OpenAIHTTPError(400, {}, {"error": {"message": "context length exceeded"}}, "u"), ["temperature"]
        )
        is None
    )
    assert rejected_param(OpenAIHTTPError(400, {}, body, "u"), ["reasoning_effort"]) is None


@pytest.mark.parametrize("transport", ["direct", "sdk"])
async def test_http_400_on_temperature_is_retried_once_without_it(monkeypatch, transport):
    monkeypatch.setenv("SGIEVAL_OPENAI_TRANSPORT", transport)
    bodies = []

    def reply(body, index):
        bodies.append(body)
        return "ok"

    with MockOpenAI(reject_params={"temperature"}, replies=reply) as mock:
        # an unknown family gets temperature; its server rejects it
        m = resolve_model("openai:my-reasoner", "judge", base_url=mock.url, temperature=0.0)
        assert m.params == {"temperature": 0.0}
        out = await ainvoke(m, [HumanMessage(content="hi")], use_cache=False, max_attempts=1)
        assert out.content == "ok"
        assert [e["outcome"] for e in mock.log()] == ["400", "200"]
        assert "temperature" not in bodies[0]
        assert m.params == {} and m.dropped["temperature"].startswith("rejected by the server: HTTP 400")
        assert "Unsupported value: 'temperature'" in m.dropped["temperature"]
        # later calls do not send it any more
        await ainvoke(m, [HumanMessage(content="again")], use_cache=False)
        assert [e["outcome"] for e in mock.log()] == ["400", "200", "200"]


async def test_a_bound_temperature_is_dropped_too_and_only_once():
    with MockOpenAI(reject_params={"temperature", "reasoning_effort"}) as mock:
        m = resolve_model("openai:my-reasoner", "target", base_url=mock.url, temperature=None)
        runnable = m.chat.bind(temperature=0.7)  # as the AidanBench protocol binds its 0.7
        out = await ainvoke(m, [HumanMessage(content="hi")], runnable=runnable, use_cache=False)
        assert out.content == "echo: hi" and "temperature" in m.dropped
        # two rejected parameters: only one retry, then the call fails with the reason
        m2 = resolve_model("openai:my-reasoner", "target", base_url=mock.url, temperature=0.0, reasoning_effort="low")
        with pytest.raises(ModelCallError, match="HTTP 400"):
            await ainvoke(m2, [HumanMessage(content="hi")], use_cache=False)
        assert list(m2.dropped) == ["reasoning_effort"]


@pytest.mark.parametrize(
    ("spec", "fix"),
    [
        ("opnai:gpt-4.1", "did you mean openai:gpt-4.1?"),
        ("antropic:claude-3-5-sonnet", "did you mean anthropic:claude-3-5-sonnet?"),
        ("replya:o1-mini", "did you mean replay:o1-mini?"),
    ],
)
def test_a_typo_in_the_provider_prefix_names_the_provider_meant(spec, fix):
    with pytest.raises(InputError) as e:
        resolve_model(spec, "target")
    assert e.value.one_line() == (
        f"{spec}: unknown provider {spec.split(':')[0]!r}. Fix: {fix} (prefixes: replay, "
        "local, openai, openai-api, or an init_chat_model provider)"
    )
