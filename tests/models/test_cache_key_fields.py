"""The call-cache key separates every parameter that changes a reply.

Planted bug: the key drops the base URL, the model id or the bound tools, so two servers (or two models, or a
call with and without tools) share cached answers."""

from __future__ import annotations

from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from sgieval.models.base import NamedModel
from sgieval.models.cache import cache_key_for, model_params

MSGS = [HumanMessage(content="What is 2 + 2?")]


def _model(
    base_url: str = "http://127.0.0.1:9001/v1", model: str = "m1", name: str = "openai:m1", tools: list | None = None
) -> NamedModel:
    chat = ChatOpenAI(model=model, base_url=base_url, api_key="sk-test", temperature=0.0, max_retries=0)
    if tools:
        chat = chat.bind_tools(tools)
    return NamedModel(name=name, role="target", chat=chat, provider="openai")


@tool
def web_search(query: str) -> str:
    """Search the web."""
    return query


def test_same_call_same_key():
    assert cache_key_for(_model(), MSGS) == cache_key_for(_model(), MSGS)


def test_base_url_is_part_of_the_key():
    a, b = _model(base_url="http://127.0.0.1:9001/v1"), _model(base_url="http://127.0.0.1:9002/v1")
    assert model_params(a)["base_url"] == "http://127.0.0.1:9001/v1"
    assert model_params(b)["base_url"] == "http://127.0.0.1:9002/v1"
    assert cache_key_for(a, MSGS) != cache_key_for(b, MSGS)


def test_model_id_is_part_of_the_key_even_under_one_display_name():
    a, b = _model(model="m1", name="openai:served"), _model(model="m2", name="openai:served")
    assert model_params(a)["model_name"] == "m1" and model_params(b)["model_name"] == "m2"
    assert cache_key_for(a, MSGS) != cache_key_for(b, MSGS)


def test_bound_tools_are_part_of_the_key():
    plain, with_tools = _model(), _model(tools=[web_search])
    bound = model_params(with_tools)["bound"]
    assert [t["function"]["name"] for t in bound["tools"]] == ["web_search"]
    assert cache_key_for(plain, MSGS) != cache_key_for(with_tools, MSGS)


def test_messages_are_part_of_the_key():
    assert cache_key_for(_model(), MSGS) != cache_key_for(_model(), [HumanMessage(content="What is 2 + 3?")])
