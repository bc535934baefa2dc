"""The run store keeps its JSONL files open and the records it read."""

from __future__ import annotations

import os

from sgieval.core import Response, RunStore, sync_open_stores


def _resp(i: int) -> Response:
    return Response(item_id=f"q{i}", model="m", text=f"answer {i}")


def test_appends_share_one_open_file_flushed_per_record(tmp_path):
    store = RunStore(tmp_path / "run")
    store.append("responses", [_resp(1)])
    handle = store._files["responses"]
    store.append("responses", [_resp(2)])
    assert store._files["responses"] is handle  # opened once for the run
    # flushed per append: another reader sees both records before any close
    assert [r.item_id for r in RunStore(tmp_path / "run").read("responses")] == ["q1", "q2"]
    store.close()
    assert store._files == {} and handle.closed
    store.append("responses", [_resp(3)])  # reopened on the next append
    assert [r.item_id for r in RunStore(tmp_path / "run").read("responses")] == ["q1", "q2", "q3"]
    sync_open_stores()  # what the command line calls before it ends the process
    assert store._files == {}


def test_read_reuses_the_records_it_holds_until_another_writer_appends(tmp_path):
    store = RunStore(tmp_path / "run")
    store.append("responses", [_resp(1), _resp(2)])
    first = store.read("responses")
    store.append("responses", [_resp(3)])
    again = store.read("responses")
    # the records already read are reused (same objects), its own append is added without a re-read
    assert again[0] is first[0] and again[1] is first[1] and [r.item_id for r in again] == ["q1", "q2", "q3"]
    again.append(_resp(99))  # callers get their own list
    assert len(store.read("responses")) == 3
    other = RunStore(tmp_path / "run")  # another writer (e.g. a second process) appends
    other.append("responses", [_resp(4)])
    other.close()
    fresh = store.read("responses")
    assert [r.item_id for r in fresh] == ["q1", "q2", "q3", "q4"] and fresh[0] is not first[0]
    # and an append after the other writer's is still exact
    store.append("responses", [_resp(5)])
    assert [r.item_id for r in store.read("responses")] == ["q1", "q2", "q3", "q4", "q5"]
    assert [r.item_id for r in RunStore(tmp_path / "run").read("responses")] == ["q1", "q2", "q3", "q4", "q5"]


def test_journal_rows_go_through_the_open_file(tmp_path):
    store = RunStore(tmp_path / "run")
    store.append_rows("ledger", [{"n": 1}])
    store.append_rows("ledger", [{"n": 2}, {"n": 3}])
    assert store.read_rows("ledger") == [{"n": 1}, {"n": 2}, {"n": 3}]
    store.close()
    assert os.path.getsize(store.path("ledger")) == len('{"n": 1}\n') * 3
