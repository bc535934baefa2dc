"""The run store asserted exactly (issue 15 item 3: mutants the store tests left alive): damaged lines named with
file, line and reason (once), torn last lines repaired, the symbolic-link refusal, config claims and reads, the
rubric path and the graph-state check, each with its whole message."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from sgieval.core import InputError, Response, RunConfig, RunStore
from sgieval.core.store import check_state_file


def _resp(i: int) -> Response:
    return Response(item_id=f"q{i}", model="m", text=f"answer {i}")


def _line(i: int) -> str:
    return _resp(i).model_dump_json()


def test_a_new_folder_is_created_and_marked_so(tmp_path):
    store = RunStore(tmp_path / "run")
    assert store.created is True and store.problems == []
    assert (tmp_path / "run" / "figures").is_dir()
    assert RunStore(tmp_path / "run").created is False


def test_symbolic_links_among_the_files_written_are_refused_by_name(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "elsewhere").write_text("")
    (run / "scores.jsonl").symlink_to(tmp_path / "elsewhere")
    (run / "report.md").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(InputError) as e:
        RunStore(run)
    assert str(e.value) == (f"{run}: the run folder holds symbolic link(s) scores.jsonl, report.md: writing there "
                            "could change files outside the run. Fix: replace each link by the file it points to "
                            "(or remove it), then retry")


def test_damaged_record_lines_are_skipped_and_named_once(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    p = run / "responses.jsonl"
    p.write_bytes((_line(1) + "\n\n" + '{"item_id": "q2"}\n' + "not json\n" + _line(3) + "\n").encode()
                  + b"\xff\xfe\n")
    store = RunStore(run)
    assert [r.item_id for r in store.read("responses")] == ["q1", "q3"]
    assert store.problems == [
        f"{p} line 3: not a valid Response record (model: Field required); the record is skipped (fix: correct or "
        "delete that line)",
        f"{p} line 4: not a valid Response record (Invalid JSON: expected ident at line 1 column 2); the record is "
        "skipped (fix: correct or delete that line)",
        f"{p} line 6: not a valid Response record (Invalid JSON: expected value at line 1 column 1); the record is "
        "skipped (fix: correct or delete that line)"]
    store._records.clear()
    store.read("responses")  # read again: not named twice
    assert len(store.problems) == 3


def test_journal_lines_that_are_not_json_objects(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    p = run / "ledger.jsonl"
    p.write_text('{"n": 1}\n\n[1, 2]\n{"n": 2\n{"n": 3}\n')
    store = RunStore(run)
    assert store.read_rows("ledger") == [{"n": 1}, {"n": 3}]
    assert store.problems == [f"{p} line 4: not JSON (Expecting ',' delimiter: line 1 column 8 (char 7)); the record "
                              "is skipped (fix: correct or delete that line)"]
    assert RunStore(tmp_path / "other").read_rows("ledger") == []


def test_a_torn_last_line_is_cut_before_the_next_append(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "responses.jsonl").write_text(_line(1) + "\n" + _line(2)[:15])
    (run / "scores.jsonl").write_text('{"item_id": "q1", "mod')  # no whole line at all
    (run / "items.jsonl").write_text("")
    store = RunStore(run)
    assert (run / "responses.jsonl").read_text() == _line(1) + "\n"
    assert (run / "scores.jsonl").read_text() == ""
    store.append("responses", [_resp(3)])
    assert [r.item_id for r in RunStore(run).read("responses")] == ["q1", "q3"]
    assert store.problems == []


def test_append_of_nothing_writes_nothing(tmp_path):
    store = RunStore(tmp_path / "run")
    store.append("responses", [])
    store.append_rows("ledger", [])
    assert not store.path("responses").exists() and not store.path("ledger").exists()
    assert store._files == {}


def test_read_of_a_missing_file_is_empty_and_kept(tmp_path):
    store = RunStore(tmp_path / "run")
    assert store.read("scores") == []
    store.append("responses", [_resp(1)])
    assert [r.item_id for r in store.read("responses")] == ["q1"]
    store.append("responses", [_resp(2)])  # extends what it holds
    assert store._records["responses"][0] == store.path("responses").stat().st_size
    assert [r.item_id for r in store._records["responses"][1]] == ["q1", "q2"]


def test_config_claim_read_and_redaction(tmp_path):
    store = RunStore(tmp_path / "run")
    with pytest.raises(InputError) as e:
        store.read_config()
    assert str(e.value) == f"{tmp_path / 'run'}: no config.json. Fix: give the id of a run listed by `sgieval runs`"
    cfg = RunConfig(run_id="run", base_url="https://user:secret@example.com/v1?api_key=abc")
    store.write_config(cfg, new=True)
    text = (tmp_path / "run" / "config.json").read_text()
    assert "secret" not in text and "abc" not in text
    assert json.loads(text)["run_id"] == "run"
    with pytest.raises(InputError) as e:
        store.write_config(cfg, new=True)
    assert str(e.value) == (f"{tmp_path / 'run'}: this run folder already holds a run. Fix: resume it with "
                            "`sgieval resume run`, or start the new run with another run id")
    store.write_config(cfg.model_copy(update={"base_url": "http://h/v1"}))  # a rewrite replaces it
    assert store.read_config().base_url == "http://h/v1"


def test_rubric_path_stays_inside_the_run(tmp_path):
    store = RunStore(tmp_path / "run")
    assert store.rubric_path("../../../Rigor Check!") == tmp_path / "run" / "rubrics" / "rigor_check.yaml"
    with pytest.raises(InputError, match=re.escape("rubric name: '..' has no letters or digits")):
        store.rubric_path("..")


def test_state_file_check(tmp_path):
    check_state_file(tmp_path / "missing.sqlite")
    good = tmp_path / "state.sqlite"
    sqlite3.connect(good).execute("CREATE TABLE t (x)").connection.close()
    check_state_file(good)
    bad = tmp_path / "bad" / "state.sqlite"
    bad.parent.mkdir()
    bad.write_bytes(b"garbage" * 200)
    with pytest.raises(InputError) as e:
        check_state_file(bad)
    assert str(e.value) == (f"{bad}: the run's graph state is unreadable (file is not a database). Fix: restore it "
                            f"from a backup, or move it away and run `sgieval resume {bad.parent}`: the run is planned "
                            "again and every stored response and score is kept")
