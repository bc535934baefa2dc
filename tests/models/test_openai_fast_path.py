"""ChatOpenAIDirect.ainvoke skips LangChain's callback machinery only when nothing observes the call
(models/openai_direct.observed): unobserved, BaseChatModel.agenerate is not entered and the message
is the one LangChain's path gives; with a callback handler (in the config or on the model) or a LangSmith
tracing context, LangChain's path runs and the handler sees the call."""

from __future__ import annotations

import pytest
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tracers.context import tracing_v2_enabled

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.models.openai_direct import ChatOpenAIDirect

pytestmark = pytest.mark.usefixtures("fresh_call_cache")


class Seen(AsyncCallbackHandler):
    def __init__(self) -> None:
        self.events: list[str] = []

    async def on_chat_model_start(self, serialized, messages, **kw) -> None:
        self.events.append("start:" + messages[0][-1].content)

    async def on_llm_end(self, response, **kw) -> None:
        self.events.append("end:" + response.generations[0][0].text)


@pytest.fixture
def langchain_path(monkeypatch):
    """How many times BaseChatModel.agenerate (LangChain's observed path) was entered."""
    entered: list[int] = []
    real = BaseChatModel.agenerate

    async def counting(self, *a, **kw):
        entered.append(1)
        return await real(self, *a, **kw)

    monkeypatch.setattr(BaseChatModel, "agenerate", counting)
    return entered


def _view(msg: AIMessage) -> dict:
    d = msg.model_dump()
    d.pop("id")
    d["response_metadata"].pop("id")
    return d


async def test_unobserved_call_skips_langchains_path_with_the_same_message(langchain_path):
    with MockOpenAI() as mock:
        chat = ChatOpenAIDirect(base_url=mock.url, api_key="k", model="m", max_retries=0, temperature=0)
        fast = await chat.ainvoke([HumanMessage("q1")])
        assert langchain_path == []
        seen = Seen()
        slow = await chat.ainvoke([HumanMessage("q1")], config={"callbacks": [seen]})
        assert langchain_path == [1]
    assert seen.events == ["start:q1", "end:echo: q1"]
    assert fast.content == "echo: q1"
    assert _view(fast) == _view(slow)
    assert fast.response_metadata["finish_reason"] == "stop" and fast.response_metadata["model_name"] == "m"


@pytest.mark.parametrize("how", ["model_callbacks", "tracing_context"])
async def test_observed_calls_take_langchains_path(langchain_path, how, monkeypatch):
    monkeypatch.setenv("LANGSMITH_API_KEY", "test")  # the tracer is built, never reached: no network in tests
    monkeypatch.setenv("LANGSMITH_ENDPOINT", "http://127.0.0.1:9")
    seen = Seen()
    with MockOpenAI() as mock:
        kw = dict(base_url=mock.url, api_key="k", model="m", max_retries=0)
        if how == "model_callbacks":
            chat = ChatOpenAIDirect(**kw, callbacks=[seen])
            msg = await chat.ainvoke("q2")
            assert seen.events == ["start:q2", "end:echo: q2"]
        else:
            chat = ChatOpenAIDirect(**kw)
            with tracing_v2_enabled(project_name="sgieval-test"):
                msg = await chat.ainvoke("q2")
    assert langchain_path == [1]
    assert msg.content == "echo: q2"


async def test_an_llm_cache_is_honoured(langchain_path):
    """A LangChain LLM cache observes the call too: the global one answers the repeated prompt (one request
    served), and ``cache=True`` without one raises LangChain's error instead of silently calling."""
    from langchain_core.caches import InMemoryCache
    from langchain_core.globals import set_llm_cache

    with MockOpenAI() as mock:
        kw = dict(base_url=mock.url, api_key="k", model="m", max_retries=0)
        set_llm_cache(InMemoryCache())
        try:
            first = await ChatOpenAIDirect(**kw).ainvoke("q3")
            again = await ChatOpenAIDirect(**kw).ainvoke("q3")
        finally:
            set_llm_cache(None)
        assert mock.stats()["served"] == 1
        with pytest.raises(ValueError, match="no cache found"):
            await ChatOpenAIDirect(**kw, cache=True).ainvoke("q4")
        assert mock.stats()["served"] == 1
    assert first.content == again.content == "echo: q3"
    assert len(langchain_path) == 3
