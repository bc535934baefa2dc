"""Every bad input gets one line and exit 2 (no traceback); writes are whole or not at
all; a damaged record is named and skipped while the run stays readable."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.core import InputError, Response, RunStore, atomic_write_text, escape_control_chars

runner = CliRunner()
CHEM = "Which model is the most creative in chemistry?"


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SGIEVAL_CACHE_DIR", str(tmp_path / "cache"))


def one_error_line(res, code: int = 2) -> str:
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output
    lines = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, res.output
    return lines[0]


@pytest.fixture(scope="module")
def done_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    res = runner.invoke(app, ["ask", CHEM, "--k", "3", "--yes", "--out", str(out)])
    assert res.exit_code == 0, res.output
    (run,) = out.iterdir()
    return run


def copy_run(done_run: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "runs" / done_run.name
    shutil.copytree(done_run, dest)
    return dest


@pytest.mark.parametrize("garbage", [b"SQLite format 3\x00" + b"\x07" * 90, b"not a database at all" * 50])
def test_garbage_state_sqlite_report_and_resume(tmp_path, done_run, garbage):
    run = copy_run(done_run, tmp_path)
    (run / "state.sqlite").write_bytes(garbage)
    for cmd in (["report", str(run)], ["resume", str(run), "--yes"], ["resume", str(run), "--budget", "5"]):
        err = one_error_line(runner.invoke(app, cmd))
        assert err == (
            f"error: {run / 'state.sqlite'}: the run's graph state is unreadable (file is not a database). "
            f"Fix: restore it from a backup, or move it away and run `sgieval resume {run}`: the run is "
            "planned again and every stored response and score is kept"
        )
    assert (run / "state.sqlite").read_bytes() == garbage


def test_state_sqlite_moved_away_resumes_with_the_stored_records(tmp_path, done_run):
    # the fix the error names works: the run is planned again and nothing stored is recomputed
    run = copy_run(done_run, tmp_path)
    responses = (run / "responses.jsonl").read_text()
    (run / "state.sqlite").write_bytes(b"garbage" * 100)
    (run / "state.sqlite").rename(tmp_path / "state.sqlite.bad")
    res = runner.invoke(app, ["resume", str(run), "--yes"])
    assert res.exit_code == 0, res.output
    assert (run / "responses.jsonl").read_text() == responses


@pytest.mark.parametrize("garbage", [b"garbage, not sqlite" * 100, b"SQLite format 3\x00" + b"\x00" * 84])
def test_garbage_call_cache_is_named_with_the_fix(tmp_path, monkeypatch, fresh_call_cache, garbage):
    from sgieval.bench.mock_openai import MockOpenAI

    cache = tmp_path / "calls.sqlite"  # fresh_call_cache: the cache file of this test
    cache.write_bytes(garbage)
    bench = tmp_path / "qa.jsonl"
    bench.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"q{i}", "reference": "a"}) + "\n" for i in range(3)))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-000000")
    with MockOpenAI(replies=["a"]) as mock:
        res = runner.invoke(
            app,
            [
                "ask",
                "",
                "-b",
                str(bench),
                "-m",
                "openai:gpt-4o-mini",
                "--base-url",
                mock.url,
                "--yes",
                "--tools",
                "",
                "--out",
                str(tmp_path / "runs"),
            ],
        )
        err = one_error_line(res)
        assert err == (
            f"error: {cache}: the call cache is corrupted (file is not a database). Fix: delete {cache} "
            "(it only holds cached replies; nothing else is lost) or run with --no-cache"
        )
        assert mock.stats()["requests"] == 0  # stopped before any call: no score recorded as a parse_error
        assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())
        res = runner.invoke(
            app,
            [
                "ask",
                "",
                "-b",
                str(bench),
                "-m",
                "openai:gpt-4o-mini",
                "--base-url",
                mock.url,
                "--yes",
                "--tools",
                "",
                "--no-cache",
                "--out",
                str(tmp_path / "runs2"),
            ],
        )
        assert res.exit_code == 0, res.output
        assert mock.stats()["requests"] == 3


def test_damaged_cache_entry_is_a_miss(tmp_path):
    import sqlite3

    from langchain_core.messages import AIMessage

    from sgieval.models.cache import CallCache

    c = CallCache(tmp_path / "calls.sqlite")
    c.put("k1", AIMessage(content="one"))
    c.put("k2", AIMessage(content="two"))
    c.close()
    with sqlite3.connect(tmp_path / "calls.sqlite") as db:
        db.execute("UPDATE calls SET reply = ? WHERE key = 'k1'", ("{not json",))
    c = CallCache(tmp_path / "calls.sqlite")
    assert c.get("k1") is None and c.get("k2").content == "two"
    c.close()


@pytest.mark.parametrize(
    "markup, options",
    [
        ("[/]", []),
        # the tag names are words naming no facet, quality, metric or model: --all ranks what was understood
        ("[bold]x[/bold] [/red]", ["--all"]),
        ("\x1b[2J[/]", []),
    ],
)
def test_rich_markup_in_a_request_or_an_error_never_crashes_the_cli(tmp_path, markup, options):
    out = tmp_path / "runs"
    res = runner.invoke(app, ["ask", f"creative chemistry {markup}", "--k", "2", "--yes", *options, "--out", str(out)])
    assert res.exit_code == 0, res.output
    listing = runner.invoke(app, ["runs", "--out", str(out)])
    assert listing.exit_code == 0, listing.output
    (run,) = out.iterdir()
    if options:  # the words left out are named, as words (no markup)
        assert "--all: 'bold', 'red' matched nothing and were left out |" in (run / "report.md").read_text()
    assert (
        listing.output.splitlines()[0].split()
        == (
            # 6 target models x 2 items: 12 responses, each with 6 per-item AidanBench scores (accepted answers,
            # published count, README and leaderboard scores, coherence and novelty per item), and 4 corpus-level
            # scores per model (mean coherence, mean novelty, with the first answer, leaderboard total): 72 + 24
            f"{run.name}\tcomplete\tresponses=12\tscores=96\t"
            f"{escape_control_chars(repr(f'creative chemistry {markup}'))}\n"
        ).split()
    )
    # an error message holding markup is printed, not parsed
    err = one_error_line(runner.invoke(app, ["report", f"no-such-run-{markup}", "--out", str(out)]))
    assert err == (
        f"error: {escape_control_chars(f'no-such-run-{markup}')}: no such run. Fix: give a run id listed "
        f"by `sgieval runs --out {out}`, the run folder, or its report.md"
    )


def test_unexpected_error_in_a_run_is_one_line_with_the_traceback_in_the_log(tmp_path, monkeypatch):
    from sgieval.agents import run as agent_steps

    def boom(*a, **kw):
        raise RuntimeError("kaput [/] \x1b[2J")

    monkeypatch.setattr(agent_steps, "_check_open_creativity_judges", boom)
    out = tmp_path / "runs"
    res = runner.invoke(app, ["ask", CHEM, "--k", "2", "--yes", "--out", str(out)])
    err = one_error_line(res, code=1)
    (run,) = out.iterdir()
    assert err == (
        f"error: unexpected RuntimeError: kaput [/] \\x1b[2J; the full traceback is in {run / 'log.jsonl'}; "
        f"every finished response and score is kept: continue with `sgieval resume {run}`"
    )
    logged = [json.loads(x) for x in (run / "log.jsonl").read_text().splitlines()]
    assert logged[-1]["event"] == "unexpected error" and logged[-1]["error"] == "RuntimeError: kaput [/] \x1b[2J"
    assert "Traceback (most recent call last)" in logged[-1]["traceback"] and "in boom" in logged[-1]["traceback"]


def test_unexpected_error_outside_any_command_is_one_line(tmp_path, monkeypatch, capsys):
    from sgieval.cli.process import CommandLine

    app2 = CommandLine(add_completion=False)

    @app2.command()
    def crash() -> None:
        raise KeyError("no [/] such key")

    @app2.command()
    def other() -> None:
        pass

    codes = []
    from sgieval.core.startup import ConsoleProcess

    monkeypatch.setattr(
        ConsoleProcess, "exit", lambda self, code: codes.append(code) or (_ for _ in ()).throw(SystemExit)
    )
    monkeypatch.setattr("sys.argv", ["sgieval", "crash"])
    with pytest.raises(SystemExit):
        app2()
    log = tmp_path / "state" / "sgieval" / "log" / "last-error.log"
    assert codes == [1]
    assert (
        capsys.readouterr().err == f"error: unexpected KeyError: 'no [/] such key' (the full traceback is in {log})\n"
    )
    assert "raise KeyError" in log.read_text()


def test_damaged_mid_file_record_is_named_and_the_run_stays_readable(tmp_path):
    store = RunStore(tmp_path / "run")
    store.append("responses", [Response(item_id="a", model="m", text="x")])
    with store.path("responses").open("a") as f:
        f.write('{"item_id": 3, "model": "m"}\n')
        f.write("[" * 100_000 + "\n")
    with store.path("responses").open("ab") as f:
        f.write(b'{"item_id": "c\xff", "model": "m"}\n')
    store.append("responses", [Response(item_id="b", model="m", text="y")])
    fresh = RunStore(tmp_path / "run")
    assert [r.item_id for r in fresh.read("responses")] == ["a", "c\ufffd", "b"]
    p = store.path("responses")
    assert fresh.problems == [
        f"{p} line 2: not a valid Response record (item_id: Input should be a valid string); the record is skipped "
        "(fix: correct or delete that line)",
        f"{p} line 3: not a valid Response record (Invalid JSON: recursion limit exceeded at line 1 column 202); "
        "the record is skipped (fix: correct or delete that line)",
    ]
    with store.path("ledger").open("a") as f:
        f.write('{"model": "m"}\n{torn\n')
        f.write('{"model": "n"}\n')
    assert fresh.read_rows("ledger") == [{"model": "m"}, {"model": "n"}]
    assert fresh.problems[-1] == (
        f"{store.path('ledger')} line 2: not JSON (Expecting property name enclosed in "
        "double quotes: line 1 column 2 (char 1)); the record is skipped (fix: correct or "
        "delete that line)"
    )


def test_damaged_record_in_a_run_folder_keeps_report_working(tmp_path, done_run):
    run = copy_run(done_run, tmp_path)
    lines = (run / "scores.jsonl").read_text().splitlines()
    lines.insert(3, '{"item_id": "x", "model": "m", "metric": "z", "value": "not a number"}')
    (run / "scores.jsonl").write_text("\n".join(lines) + "\n")
    res = runner.invoke(app, ["report", str(run)])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "unreadable record skipped" in said and "line=4" in said
    assert "reason='not a valid Score record (value: Input should be a valid number" in said


def full_disk(*a, **kw):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_atomic_write_keeps_the_old_file_on_a_full_disk(tmp_path, monkeypatch):
    target = tmp_path / "report.md"
    target.write_text("old report")
    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(InputError) as ei:
        atomic_write_text(target, "new report")
    monkeypatch.undo()
    assert target.read_text() == "old report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temporary file left
    msg = str(ei.value)
    assert msg.startswith(f"{target}: the disk holding ") and " is full (" in msg
    assert msg.endswith(
        " MiB free); nothing was half-written. Fix: free space on "
        f"{msg.split('the disk holding ')[1].split(' is full')[0]} (or use --out on another disk), "
        "then `sgieval resume`"
    )


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_full_disk_while_writing_the_report_leaves_the_run_incomplete(tmp_path, done_run, monkeypatch, failing):
    run = copy_run(done_run, tmp_path)
    old = (run / "report.md").read_text()
    old_json = (run / "report.json").read_text()
    monkeypatch.setattr(os, failing, full_disk)
    err = one_error_line(runner.invoke(app, ["report", str(run)]))
    monkeypatch.undo()
    assert err.startswith(f"error: {run / 'report.md'}: the disk holding ") and "is full" in err
    assert "Fix: free space on" in err
    assert (run / "report.md").read_text() == old and (run / "report.json").read_text() == old_json
    assert not [p for p in run.iterdir() if p.name.endswith(".tmp")]
    listing = runner.invoke(app, ["runs", "--out", str(run.parent)])
    assert listing.output.split()[:4] == [run.name, "incomplete", "(sgieval", "resume)"]
    # once there is room again, the report is written and the run is complete
    res = runner.invoke(app, ["report", str(run)])
    assert res.exit_code == 0, res.output
    listing = runner.invoke(app, ["runs", "--out", str(run.parent)])
    assert listing.output.split()[:2] == [run.name, "complete"]


def test_markup_in_a_user_rubric_and_a_benchmark_field_is_printed_literally(tmp_path, monkeypatch):
    from sgieval.metric_pool.rubrics import load_rubric

    udir = tmp_path / "user-rubrics"
    udir.mkdir()
    hostile = load_rubric("rigor").model_copy(update={"name": "grit", "description": "tough [/] \x1b[31mred [bold]"})
    hostile.to_yaml(udir / "grit.yaml")
    monkeypatch.setenv("SGIEVAL_RUBRIC_DIR", str(udir))
    res = runner.invoke(app, ["metric", "list"])
    assert res.exit_code == 0, res.output
    (row,) = [ln for ln in res.output.splitlines() if "grit" in ln]
    assert [c.strip() for c in row.split("│")[1:5]] == ["grit", "user", "6", "tough [/] \\x1b[31mred [bold]"]
    bench = tmp_path / "qa.jsonl"
    bench.write_text(json.dumps({"id": "q1", "prompt": "p", "reference": "a", "discipline": "[/]chem[bold]"}) + "\n")
    res = runner.invoke(app, ["catalog", "-b", str(bench)])
    assert res.exit_code == 0, res.output
    assert "[/]chem[bold]" in res.output


@pytest.mark.parametrize("raw", [b"caf\xe9 au lait\n", b"\xff\xfe\x00x"])
def test_metric_test_response_file_with_invalid_utf8(tmp_path, raw):
    answer = tmp_path / "answer.txt"
    answer.write_bytes(raw)
    err = one_error_line(
        runner.invoke(
            app,
            [
                "metric",
                "test",
                "rigor",
                "--response",
                str(answer),
                "--judge",
                "openai:gpt-4o-mini",
                "--base-url",
                "http://127.0.0.1:9/v1",
            ],
        )
    )
    assert err.startswith(f"error: --response {answer}: cannot read file: 'utf-8' codec can't decode byte ")
    assert err.endswith(". Fix: save the response as UTF-8 text")


def test_full_disk_while_a_run_appends_its_records_is_one_line(tmp_path, monkeypatch):
    from sgieval.core import RunStore as Store

    real = Store._write

    def write(self, name, data):
        if name == "responses":
            raise OSError(errno.ENOSPC, "No space left on device", str(self.path(name)))
        return real(self, name, data)

    monkeypatch.setattr(Store, "_write", write)
    out = tmp_path / "runs"
    err = one_error_line(runner.invoke(app, ["ask", CHEM, "--k", "2", "--yes", "--out", str(out)]))
    (run,) = out.iterdir()
    assert err.startswith(f"error: {run / 'responses.jsonl'}: the disk holding ") and " is full (" in err
    assert err.endswith(
        "MiB free); nothing was half-written. Fix: free space on "
        f"{err.split('the disk holding ')[1].split(' is full')[0]} (or use --out on another disk), "
        "then `sgieval resume`"
    )
    assert (run / "config.json").is_file()  # the run is kept for resume
