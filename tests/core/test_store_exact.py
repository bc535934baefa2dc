"""The run store asserted exactly (mutants the store tests left alive): damaged lines named with
file, line and reason (once), torn last lines repaired, the symbolic-link refusal, config claims and reads, the
rubric path and the graph-state check, each with its whole message."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from sgieval.core import InputError, Response, RunConfig, RunStore
from sgieval.core.statefile import check_state_file


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
    assert str(e.value) == (
        f"{run}: the run folder holds symbolic link(s) scores.jsonl, report.md: writing there "
        "could change files outside the run. Fix: replace each link by the file it points to "
        "(or remove it), then retry"
    )


def test_damaged_record_lines_are_skipped_and_named_once(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    p = run / "responses.jsonl"
    p.write_bytes((_line(1) + "\n\n" + '{"item_id": "q2"}\n' + "not json\n" + _line(3) + "\n").encode() + b"\xff\xfe\n")
    store = RunStore(run)
    assert [r.item_id for r in store.read("responses")] == ["q1", "q3"]
    assert store.problems == [
        f"{p} line 3: not a valid Response record (model: Field required); the record is skipped (fix: correct or "
        "delete that line)",
        f"{p} line 4: not a valid Response record (Invalid JSON: expected ident at line 1 column 2); the record is "
        "skipped (fix: correct or delete that line)",
        f"{p} line 6: not a valid Response record (Invalid JSON: expected value at line 1 column 1); the record is "
        "skipped (fix: correct or delete that line)",
    ]
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
    assert store.problems == [
        f"{p} line 4: not JSON (Expecting ',' delimiter: line 1 column 8 (char 7)); the record "
        "is skipped (fix: correct or delete that line)"
    ]
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
    assert str(e.value) == (
        f"{tmp_path / 'run'}: this run folder already holds a run. Fix: resume it with "
        f"`sgieval resume {tmp_path / 'run'}`, or start the new run with another run id"
    )
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
    assert str(e.value) == (
        f"{bad}: the run's graph state is unreadable (file is not a database). Fix: restore it "
        f"from a backup, or move it away and run `sgieval resume {bad.parent}`: the run is planned "
        "again and every stored response and score is kept"
    )


def test_nested_folders_are_made():
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        store = RunStore(Path(d) / "runs" / "deep" / "run")
        assert store.root.is_dir() and store.created is True


def test_an_unreferenced_store_closes_its_files():
    import gc
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        store = RunStore(Path(d) / "run")
        store.append("responses", [_resp(1)])
        handle = store._files["responses"]
        del store
        gc.collect()
        assert handle.closed


@pytest.mark.parametrize(
    "torn,kept",
    [
        ('{}\n{"n": 2', "{}\n"),  # the third byte is a newline: still the last byte decides
        ('{"a": 1}\n{"b": 2}\n{', '{"a": 1}\n{"b": 2}\n'),  # one torn byte after two whole lines: both kept
    ],
)
def test_torn_journal_tails(tmp_path, torn, kept):
    run = tmp_path / "run"
    run.mkdir()
    (run / "ledger.jsonl").write_text(torn)
    RunStore(run)
    assert (run / "ledger.jsonl").read_text() == kept


def test_invalid_utf8_in_a_journal_is_replaced_not_fatal(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "ledger.jsonl").write_bytes(b'{"m": "\xff\xfe"}\n{"n": "\xc3\xa9"}\n')
    store = RunStore(run)
    assert store.read_rows("ledger") == [{"m": "\ufffd\ufffd"}, {"n": "\u00e9"}]
    assert store.problems == []


def test_reading_a_missing_file_names_no_problem(tmp_path):
    store = RunStore(tmp_path / "run")
    assert store.read("scores") == [] and store.read("items") == []
    assert store.problems == []


def test_a_record_with_several_errors_names_three_with_their_fields(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    p = run / "responses.jsonl"
    p.write_text(
        '{"item_id": 1, "model": 2, "text": 3, "status": 4}\n{"item_id": "q", "model": "m", "tokens": {"in": "x"}}\n'
    )
    store = RunStore(run)
    assert store.read("responses") == []
    tail = "; the record is skipped (fix: correct or delete that line)"
    assert store.problems == [
        f"{p} line 1: not a valid Response record (item_id: Input should be a valid string; model: Input should be "
        f"a valid string; text: Input should be a valid string){tail}",
        f"{p} line 2: not a valid Response record (tokens.in: Input should be a valid integer, unable to parse "
        f"string as an integer){tail}",
    ]


def test_a_long_reason_is_cut_at_200_characters(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    p = run / "responses.jsonl"
    p.write_text(
        '{"item_id": "q", "model": "m", "status": "a", "tokens": {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": '
        '"x"}, "latency_s": "slow"}\n'
    )
    store = RunStore(run)
    store.read("responses")
    [problem] = store.problems
    reason = problem.split("not a valid Response record (", 1)[1]
    reason = reason[: reason.index("); the record is skipped")]
    assert len(reason) == 200 and reason.startswith("latency_s: Input should be a valid number")


def test_damaged_lines_are_logged_with_file_line_and_reason(tmp_path):
    from structlog.testing import capture_logs

    run = tmp_path / "run"
    run.mkdir()
    p = run / "ledger.jsonl"
    p.write_text('{"n": 1}\nnot json\n')
    with capture_logs() as logs:
        RunStore(run).read_rows("ledger")
    assert logs == [
        {
            "event": "unreadable record skipped",
            "log_level": "warning",
            "file": str(p),
            "line": 2,
            "reason": "not JSON (Expecting value: line 1 column 1 (char 0))",
        }
    ]


def test_config_file_is_indented_json_with_the_redacted_url(tmp_path):
    store = RunStore(tmp_path / "run")
    cfg = RunConfig(run_id="run", base_url="https://user:secret@example.com/v1")
    store.write_config(cfg, new=True)
    text = (tmp_path / "run" / "config.json").read_text()
    stored = cfg.model_copy(update={"base_url": "https://example.com/v1"})
    assert text == stored.model_dump_json(indent=2)
    store.write_config(cfg)
    assert (tmp_path / "run" / "config.json").read_text() == stored.model_dump_json(indent=2)
