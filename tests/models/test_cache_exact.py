"""The call cache asserted exactly (mutants test_cache.py left alive).

Keys are compared with the sha256 of hand-written canonical JSON; model parameters as whole dicts; the store's
rows are read back with a separate sqlite3 connection (what another process sees); the writer thread's timing
contract (a full batch commits at once, a lone reply after WINDOW_S, nothing before) is observed from outside."""

from __future__ import annotations

import datetime as dt
import hashlib
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel

from sgieval.models import cache
from sgieval.models.base import NamedModel

pytestmark = pytest.mark.usefixtures("fresh_call_cache")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _rows(path: Path) -> list[tuple]:
    """(key, model, reply) rows as another connection sees them."""
    with sqlite3.connect(path) as c:
        return c.execute("SELECT key, model, reply FROM calls ORDER BY key").fetchall()


def _wait_for(cond, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "condition not reached in time"
        time.sleep(0.01)


# -------------------------------------------------------------------------------------------------- keys
def test_key_of_messages_is_the_sha256_of_this_exact_canonical_json():
    # type/data per message; id, response_metadata and usage_metadata left out; non-ASCII kept as is
    msgs = [
        HumanMessage("é", id="x1", response_metadata={"a": 1}),
        AIMessage(
            "ok",
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
            response_metadata={"model_name": "m"},
        ),
    ]
    blob = (
        '{"messages":[{"data":{"additional_kwargs":{},"content":"é","name":null,"type":"human"},'
        '"type":"human"},{"data":{"additional_kwargs":{},"content":"ok","invalid_tool_calls":[],'
        '"name":null,"tool_calls":[],"type":"ai"},"type":"ai"}],"model":"m","params":{"t":0}}'
    )
    assert cache.cache_key("m", {"t": 0}, msgs) == _sha(blob)


def test_key_of_plain_dict_messages_keeps_their_plain_data():
    msgs = [{"role": "user", "content": "hi", "client": object()}]
    assert cache.cache_key("m", {}, msgs) == _sha(
        '{"messages":[{"content":"hi","role":"user"}],"model":"m","params":{}}'
    )


def test_plain_keeps_plain_data_and_drops_the_rest():
    class Cfg(BaseModel):
        a: int = 1
        b: list[int] = [2]

    class Broken:
        def model_dump(self):
            raise RuntimeError("no")

    got = cache._plain({"x": None, 1: [True, 2.5, "s", object(), (3,)], "cfg": Cfg(), "bad": Broken(), "obj": object()})
    assert got == {"x": None, "1": [True, 2.5, "s", [3]], "cfg": {"a": 1, "b": [2]}}


# ------------------------------------------------------------------------------------------ model params
def test_temperature_none_in_params_means_the_provider_default():
    m = NamedModel(name="a", role="target", chat=SimpleNamespace(temperature=0.0), params={"temperature": None})
    assert cache.temperature_of(m) is None


def test_temperature_and_identity_are_read_through_a_wrapper_that_does_not_forward_attributes():
    inner = SimpleNamespace(temperature=0.0, _identifying_params={"model_name": "m1"}, base_url="http://h:1/v1")
    wrapper = SimpleNamespace(bound=inner, kwargs={"tools": ["t"]})
    m = NamedModel(name="a", role="target", chat=wrapper)
    assert cache.temperature_of(m) == 0.0
    assert cache.model_params(m) == {"model_name": "m1", "base_url": "http://h:1/v1", "bound": {"tools": ["t"]}}


def test_a_chat_model_naming_its_server_base_url_is_keyed_by_it():
    chat = SimpleNamespace(_identifying_params={"model": "llama"}, base_url="http://127.0.0.1:11434")
    m = NamedModel(name="ollama:llama", role="target", chat=chat, params={"temperature": 0})
    assert cache.model_params(m) == {"model": "llama", "base_url": "http://127.0.0.1:11434", "temperature": 0}


def test_model_params_memo_is_kept_while_nothing_changes_and_dropped_alone_recomputes():
    chat = SimpleNamespace(_identifying_params={"model": "m", "temperature": 0.0})
    m = NamedModel(name="a", role="target", chat=chat, params={"reasoning_effort": "low"})
    first = cache.model_params(m)
    assert first == {"model": "m", "temperature": 0.0, "reasoning_effort": "low"}
    assert cache.model_params(m) is first
    # the server rejected temperature: the chat object is changed in place and the drop recorded
    chat._identifying_params = {"model": "m"}
    m.dropped["temperature"] = "rejected by the server"
    assert cache.model_params(m) == {"model": "m", "reasoning_effort": "low"}


# ------------------------------------------------------------------------------------------------ store
def test_configure_points_the_current_context_at_the_given_file(tmp_path):
    cache.configure(path=tmp_path / "elsewhere.sqlite")
    assert cache.get_cache().path == tmp_path / "elsewhere.sqlite"


def test_new_cache_creates_missing_folders_and_uses_wal_with_a_30_s_busy_timeout(tmp_path):
    c = cache.CallCache(tmp_path / "a" / "b" / "calls.sqlite")
    assert c.error is None
    assert c._read("PRAGMA journal_mode")[0] == "wal"
    assert c._read("PRAGMA busy_timeout")[0] == 30000
    c.close()


def test_stored_rows_keep_model_text_unescaped_and_non_json_metadata_as_text(tmp_path):
    path = tmp_path / "c.sqlite"
    c = cache.CallCache(path)
    when = dt.datetime(2026, 1, 2, 3, 4, 5)
    c.put("k1", AIMessage("café", response_metadata={"created": when}))
    c.put("k2", AIMessage("b"), model="openai:m")
    c.flush()
    (k1, m1, r1), (k2, m2, _) = _rows(path)
    assert (k1, m1, k2, m2) == ("k1", "", "k2", "openai:m")
    assert '"content": "café"' in r1 and '"created": "2026-01-02 03:04:05"' in r1
    assert c.get("k1").response_metadata == {"created": "2026-01-02 03:04:05"}
    assert c.get("nope") is None  # after a commit: nothing pending, nothing being written
    c.close()


def test_a_lone_reply_is_committed_by_the_writer_thread_after_the_window(tmp_path):
    path = tmp_path / "c.sqlite"
    c = cache.CallCache(path)
    c.put("k", AIMessage("x"))
    assert c._writer.name == "sgieval-call-cache" and c._writer.daemon is True
    _wait_for(lambda: len(_rows(path)) == 1)  # no flush, no close: the 0.2 s window did it
    c.close()
    assert not c._writer.is_alive()


def test_nothing_is_committed_before_the_window_ends(tmp_path, monkeypatch):
    path = tmp_path / "c.sqlite"
    c = cache.CallCache(path)
    monkeypatch.setattr(c, "WINDOW_S", 0.95)  # under a second: a writer that waits only "left > 1" commits at once
    c.put("k", AIMessage("x"))
    time.sleep(0.3)
    assert _rows(path) == []
    _wait_for(lambda: len(_rows(path)) == 1)
    c.close()


def test_a_full_batch_is_committed_at_once_without_waiting_for_the_window(tmp_path, monkeypatch):
    path = tmp_path / "c.sqlite"
    c = cache.CallCache(path)
    monkeypatch.setattr(c, "WINDOW_S", 3600.0)
    monkeypatch.setattr(c, "BATCH", 2)
    c.put("a", AIMessage("1"))
    time.sleep(0.3)  # the writer thread is now waiting for the window
    c.put("b", AIMessage("2"))  # the batch is full: it is woken and commits both
    _wait_for(lambda: len(_rows(path)) == 2)
    c.close()


def test_an_idle_writer_waits_instead_of_spinning(tmp_path):
    c = cache.CallCache(tmp_path / "c.sqlite")
    calls = []
    real = c._commit_pending
    c._commit_pending = lambda: (calls.append(1), real())[1]
    c.put("k", AIMessage("x"))
    _wait_for(lambda: len(_rows(tmp_path / "c.sqlite")) == 1)
    time.sleep(0.5)
    assert len(calls) == 1
    c.close()


def test_a_reply_being_committed_is_served_and_a_failed_commit_is_recorded(tmp_path):
    path = tmp_path / "c.sqlite"
    c = cache.CallCache(path)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock: the batch waits in _writing
    c.put("k", AIMessage("in flight"))
    t = threading.Thread(target=c.flush)
    t.start()
    _wait_for(lambda: "k" in c._writing)
    assert c.get("k").content == "in flight"
    other.execute("DROP TABLE calls")  # the commit then fails: recorded, the replies dropped, no exception
    other.execute("COMMIT")
    t.join(40)
    assert c.error == "OperationalError: no such table: calls"
    other.close()
    c.close()


def test_clear_is_seen_by_other_connections_and_reads_reopen_after_close(tmp_path):
    path = tmp_path / "c.sqlite"
    c = cache.CallCache(path)
    c.put("k", AIMessage("x"))
    c.close()
    assert c.get("k").content == "x"  # the read connection is reopened
    c.clear()
    assert _rows(path) == []
    c.close()


def test_a_put_after_close_is_written_through(tmp_path):
    path = tmp_path / "c.sqlite"
    c = cache.CallCache(path)
    c.close()
    c.put("late", AIMessage("y"), model="m")
    assert [r[:2] for r in _rows(path)] == [("late", "m")]


def test_a_process_ending_without_close_exits_and_commits_at_exit(tmp_path):
    path = tmp_path / "c.sqlite"
    code = (
        "from langchain_core.messages import AIMessage\nfrom sgieval.models.cache import CallCache\n"
        f"c = CallCache({str(path)!r}); c.WINDOW_S = 3600.0\nc.put('k', AIMessage('x'))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert [r[:2] for r in _rows(path)] == [("k", "")]


# ------------------------------------------------------------------ damaged cache files
def _corrupt_message(path: Path, why: str) -> str:
    return (
        f"{path}: the call cache is corrupted ({why}). Fix: delete {path} (it only holds cached replies; "
        "nothing else is lost) or run with --no-cache"
    )


def test_a_file_that_is_not_a_database_stops_with_the_file_and_the_fix(tmp_path):
    from sgieval.core import CacheCorruptError

    path = tmp_path / "calls.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(CacheCorruptError) as e:
        cache.CallCache(path)
    assert str(e.value) == _corrupt_message(path, "file is not a database")
    assert (e.value.what, e.value.fix) == (
        str(path),
        f"delete {path} (it only holds cached replies; nothing else is lost) or run with --no-cache",
    )


def test_a_file_damaged_after_opening_stops_the_next_read(tmp_path):
    from sgieval.core import CacheCorruptError

    path = tmp_path / "calls.sqlite"
    c = cache.CallCache(path)
    c.close()  # the read connection is reopened on the next read, on the damaged file
    path.write_bytes(b"garbage!" * 1000)
    for p in (tmp_path / "calls.sqlite-wal", tmp_path / "calls.sqlite-shm"):
        p.unlink(missing_ok=True)
    with pytest.raises(CacheCorruptError) as e:
        c.get("k")
    assert str(e.value) == _corrupt_message(path, "file is not a database")


@pytest.mark.parametrize("blob", ["{not json", '{"type": "nope", "data": {}}', '{"data": {"content": "x"}}', "[]"])
def test_an_entry_that_does_not_decode_is_a_miss(tmp_path, blob):
    path = tmp_path / "calls.sqlite"
    c = cache.CallCache(path)
    c.put("bad", AIMessage("x"))
    c.put("good", AIMessage("two"))
    c.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE calls SET reply = ? WHERE key = 'bad'", (blob,))
    c = cache.CallCache(path)
    assert c.get("bad") is None and c.get("good").content == "two"
    c.close()


def test_a_repeated_judge_draw_has_its_own_key_the_first_draw_keeps_the_plain_one():
    import dataclasses

    chat = SimpleNamespace(_identifying_params={"model": "j"})
    first = NamedModel(name="judge", role="judge", chat=chat)
    third = dataclasses.replace(first, repeat=2)
    assert cache.model_params(first) == {"model": "j"}
    assert cache.model_params(third) == {"model": "j", "repeat": 2}
