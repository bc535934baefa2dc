"""Call cache: keys, when it applies, SQLite round trip of replies."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from sgieval.models import cache
from sgieval.models.context import current_call_context
from sgieval.models.base import NamedModel

pytestmark = pytest.mark.usefixtures("fresh_call_cache")


def test_key_is_sha256_of_canonical_json():
    # canonical JSON: keys sorted, no spaces
    expected = hashlib.sha256(b'{"messages":"hi","model":"m","params":{}}').hexdigest()
    assert cache.cache_key("m", {}, "hi") == expected


def test_key_ignores_message_ids_but_not_content_model_or_params():
    a = [SystemMessage("sys", id="1"), HumanMessage("q", id="2")]
    b = [SystemMessage("sys", id="other"), HumanMessage("q", id="ids")]
    k = cache.cache_key("m", {"temperature": 0}, a)
    assert cache.cache_key("m", {"temperature": 0}, b) == k
    assert cache.cache_key("m", {"temperature": 0}, [SystemMessage("sys"), HumanMessage("q2")]) != k
    assert cache.cache_key("m2", {"temperature": 0}, a) != k
    assert cache.cache_key("m", {"temperature": 0.5}, a) != k
    # a HumanMessage and an AIMessage with the same text differ
    assert cache.cache_key("m", {}, [HumanMessage("x")]) != cache.cache_key("m", {}, [AIMessage("x")])


def test_model_params_include_chat_settings_base_url_and_tools():
    chat = ChatOpenAI(model="gpt-4o", api_key="secret-key", base_url="http://127.0.0.1:9/v1", temperature=0)
    p = cache.model_params(NamedModel(name="openai:gpt-4o", role="judge", chat=chat))
    assert p["model"] == "gpt-4o" and p["temperature"] == 0.0
    assert p["base_url"] == "http://127.0.0.1:9/v1"
    assert "secret-key" not in repr(p)
    bound = chat.bind_tools([{"type": "function", "function": {"name": "f", "parameters": {}}}])
    pb = cache.model_params(NamedModel(name="openai:gpt-4o", role="agent", chat=bound))
    assert pb["bound"]["tools"][0]["function"]["name"] == "f"
    assert pb["temperature"] == 0.0


def test_temperature_sources_and_should_cache():
    fake = FakeMessagesListChatModel(responses=[AIMessage("x")])
    assert cache.temperature_of(NamedModel(name="a", role="target", chat=fake)) is None
    assert cache.should_cache(NamedModel(name="a", role="target", chat=fake)) is False
    m0 = NamedModel(name="a", role="target", chat=fake, params={"temperature": 0})
    assert cache.should_cache(m0) is True
    chat = ChatOpenAI(model="gpt-4o", api_key="k", temperature=0)
    assert cache.should_cache(NamedModel(name="b", role="judge", chat=chat)) is True
    hot = ChatOpenAI(model="gpt-4o", api_key="k", temperature=0.7)
    assert cache.should_cache(NamedModel(name="b", role="judge", chat=hot)) is False
    assert cache.should_cache(NamedModel(name="b", role="judge", chat=hot), use_cache=True) is True
    cache.configure(enabled=False)
    assert cache.should_cache(m0) is False
    assert cache.should_cache(m0, use_cache=True) is True


def test_no_cache_env(monkeypatch):
    current_call_context().use_cache = None  # outside a run: follow SGIEVAL_NO_CACHE
    monkeypatch.setenv("SGIEVAL_NO_CACHE", "1")
    assert cache.enabled() is False
    monkeypatch.setenv("SGIEVAL_NO_CACHE", "0")
    assert cache.enabled() is True


def test_cache_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("SGIEVAL_CACHE_DIR", str(tmp_path / "c"))
    assert cache.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("SGIEVAL_CACHE_DIR")
    assert cache.cache_dir().name == "sgieval"


def test_round_trip_keeps_tool_calls_and_usage(tmp_path):
    store = cache.CallCache(tmp_path / "x" / "c.sqlite")
    msg = AIMessage(
        content="",
        tool_calls=[{"name": "run_python", "args": {"code": "print(1)"}, "id": "call_1", "type": "tool_call"}],
        usage_metadata={"input_tokens": 10, "output_tokens": 3, "total_tokens": 13},
        response_metadata={"model_name": "gpt-4o", "sgieval": {"cached": False}},
    )
    store.put("k1", msg, model="openai:gpt-4o")
    got = store.get("k1")
    assert isinstance(got, AIMessage)
    assert got.tool_calls == msg.tool_calls
    assert got.usage_metadata == {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13}
    assert got.response_metadata == {"model_name": "gpt-4o"}  # per-call annotation not stored
    assert store.get("missing") is None
    assert len(store) == 1
    # a second connection (another process) sees the entry
    assert cache.CallCache(Path(tmp_path / "x" / "c.sqlite")).get("k1").tool_calls == msg.tool_calls
    store.clear()
    assert len(store) == 0


def _other_connection_count(path: Path) -> int:
    import sqlite3

    with sqlite3.connect(path) as c:
        return int(c.execute("SELECT COUNT(*) FROM calls").fetchone()[0])


def test_replies_are_committed_in_batches_off_the_caller(tmp_path, monkeypatch):
    path = tmp_path / "c.sqlite"
    store = cache.CallCache(path)
    monkeypatch.setattr(store, "WINDOW_S", 3600.0)  # only a full batch or flush() commits
    monkeypatch.setattr(store, "BATCH", 3)
    store.put("a", AIMessage("1"))
    store.put("b", AIMessage("2"))
    # pending: served to this process at once, not yet in the file
    assert store.get("a").content == "1" and store.get("b").content == "2"
    assert _other_connection_count(path) == 0
    store.put("c", AIMessage("3"))  # the third reply fills the batch: the writer thread commits all three
    deadline = time.monotonic() + 60
    while _other_connection_count(path) != 3:
        assert time.monotonic() < deadline, "the full batch was never committed"
        time.sleep(0.01)
    store.put("d", AIMessage("4"))
    assert _other_connection_count(path) == 3
    store.close()  # an orderly close commits what is pending
    assert _other_connection_count(path) == 4
    assert cache.CallCache(path).get("d").content == "4"


def test_location_is_resolved_once_until_configure(tmp_path, monkeypatch):
    monkeypatch.setattr(current_call_context(), "cache_path", None)  # located by $SGIEVAL_CACHE_DIR
    monkeypatch.setenv("SGIEVAL_CACHE_DIR", str(tmp_path / "one"))
    cache.configure()
    first = cache.get_cache()
    assert first.path == tmp_path / "one" / "calls.sqlite"
    monkeypatch.setenv("SGIEVAL_CACHE_DIR", str(tmp_path / "two"))
    assert cache.get_cache() is first  # not looked up again per call
    cache.configure()  # a new run
    assert cache.get_cache().path == tmp_path / "two" / "calls.sqlite"


def test_model_params_are_read_once_per_model_chat_and_params():
    chat = ChatOpenAI(model="gpt-4o", api_key="k", base_url="http://127.0.0.1:9/v1", temperature=0)
    m = NamedModel(name="openai:gpt-4o", role="target", chat=chat)
    first = cache.model_params(m)
    assert cache.model_params(m) is first  # not recomputed per call
    key = cache.cache_key_for(m, [HumanMessage("q")])
    assert key == cache.cache_key("openai:gpt-4o", first, [HumanMessage("q")])
    m.params["temperature"] = 0.5  # other params: recomputed, and a different key
    assert cache.model_params(m)["temperature"] == 0.5
    assert cache.cache_key_for(m, [HumanMessage("q")]) != key
    m.params.clear()
    chat.temperature = None  # a parameter the server rejected (models/params.drop_param) is recorded in dropped
    m.dropped["temperature"] = "rejected by the server"
    assert "temperature" not in cache.model_params(m)
    m.chat = ChatOpenAI(model="gpt-4.1", api_key="k", temperature=0)  # another chat model: recomputed
    assert cache.model_params(m)["model"] == "gpt-4.1"
