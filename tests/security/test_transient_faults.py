"""Transient faults and stalls: a reply that is not a usable completion is retried like a 5xx, and a server
that never answers costs at most the call's total time (``--timeout``).

The probe: invalid JSON bodies, HTTP 200 with an error body and empty ``choices`` were not retried (42 of
320 items lost to one-off faults); a server that never answers took 4 x 300 s per call and there was no
timeout option.  Real CLI runs against the mock server on 127.0.0.1.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app
from sgieval.core import RunStore
from sgieval.tests.security.run_folders import ask_mock, sums_bench, user_env

runner = CliRunner()


@pytest.fixture(autouse=True)
def _user_env(tmp_path, monkeypatch):
    user_env(monkeypatch, tmp_path, "sk-test-transient-000000")


def ask(tmp_path: Path, url: str, *extra: str):
    out = tmp_path / "runs"
    bench = sums_bench(tmp_path / "qa.jsonl")
    return ask_mock(url, bench, out, "--max-concurrency", "1", *extra, model="openai:mock"), out


def _answer(body, i):
    q = body["messages"][-1]["content"]
    n = int(q.split("What is ", 1)[1].split(" ", 1)[0])
    return f"<answer>{2 * n}</answer>"


@pytest.mark.parametrize(
    "faults",
    [
        {0: "bad_json", 2: "error_200", 4: "no_choices"},  # the probe's three faults, one each
        {0: "bad_json", 1: "error_200", 2: "no_choices", 4: "no_choices", 5: "bad_json"},  # in a row
    ],
)
@pytest.mark.slow
def test_malformed_replies_are_retried_and_every_item_is_scored(tmp_path, faults):
    with MockOpenAI(replies=_answer, faults=lambda i, body: faults.get(i)) as mock:
        res, out = ask(tmp_path, mock.url)
        assert res.exit_code == 0, res.output
        log = mock.log()
    assert sorted(e["outcome"] for e in log if e["outcome"] != "200") == sorted(faults.values())
    assert sum(e["outcome"] == "200" for e in log) == 4
    (run,) = out.iterdir()
    store = RunStore(run)
    responses = store.read("responses")
    assert sorted((r.item_id, r.text, r.error) for r in responses) == [
        (f"jsonl:qa/q{i}", f"<answer>{2 * i}</answer>", None) for i in range(4)
    ]
    assert all(s.status == "ok" for s in store.read("scores"))


@pytest.mark.slow
def test_a_malformed_reply_every_time_is_a_failure_with_its_reason(tmp_path):
    """Variant: it never gets better: after the attempts the response is failed, naming the fault."""
    with MockOpenAI(faults=lambda i, body: "error_200") as mock:
        res, out = ask(tmp_path, mock.url, "--k", "1")
        assert res.exit_code == 0, res.output
        assert mock.stats()["requests"] == 4  # every attempt of the one call
    (run,) = out.iterdir()
    (r,) = RunStore(run).read("responses")
    assert r.error.startswith("call failed after 4 attempt(s): malformed reply: an error object in an HTTP 200 reply")


@pytest.mark.parametrize("timeout", ["1", "0.5"])
@pytest.mark.slow
def test_a_server_that_never_answers_costs_the_calls_total_time(tmp_path, timeout):
    """--timeout S bounds each attempt; all attempts of a call get 2 S in all, then the call fails."""
    with MockOpenAI(faults=lambda i, body: "hang") as mock:
        t0 = time.monotonic()
        res, out = ask(tmp_path, mock.url, "--k", "2", "--timeout", timeout)
        took = time.monotonic() - t0
        assert res.exit_code == 0, res.output
        hung = mock.stats()["hung"]
    s = float(timeout)
    (run,) = out.iterdir()
    responses = RunStore(run).read("responses")
    assert len(responses) == 2 and all(r.error for r in responses)
    # two calls one after the other, each stopped at its total time 2 S (plus start-up and the report)
    assert took < 2 * (2 * s) + 15
    assert 2 <= hung <= 2 * 3  # 1-3 attempts per call fit in 2 S (backoff 0.25-0.75 s after the first)
    assert json.loads((run / "config.json").read_text())["timeout_s"] == s
    for r in responses:
        assert f"timeout after {s:g} s" in r.error or f"total time of {2 * s:g} s is spent" in r.error


@pytest.mark.parametrize("bad", ["0", "-3", "nan"])
def test_a_bad_timeout_is_one_line_and_leaves_no_run_folder(tmp_path, bad):
    res, out = ask(tmp_path, "http://127.0.0.1:9/v1", "--timeout", bad)
    assert res.exit_code == 2, res.output
    assert "timeout" in res.output and "must be a positive number of seconds" in res.output
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.slow
def test_terminal_escapes_from_a_server_are_escaped_in_every_output_file(tmp_path):
    """The probe: raw terminal escapes from a server error reached report.md.  Item 0's call always gets an
    HTTP 500 whose message clears the screen; item 1's reply text carries escapes too (variant)."""
    from sgieval.bench.mock_openai import ANSI_MESSAGE

    def reply(body, i):
        return "<answer>\x1b[31m2\x1b[0m</answer>" if "1 + 1" in body["messages"][-1]["content"] else _answer(body, i)

    with MockOpenAI(replies=reply, faults=lambda i, body: "ansi_500" if "0 + 0" in str(body) else None) as mock:
        res, out = ask(tmp_path, mock.url)
        assert res.exit_code == 0, res.output
        assert mock.stats()["500"] == 4
    (run,) = out.iterdir()
    for cmd in (["view", str(run)], ["export", str(run), "-f", "csv"], ["export", str(run), "-f", "jsonl"]):
        r = runner.invoke(app, cmd)
        assert r.exit_code == 0, r.output
    text_files = [p for p in run.rglob("*") if p.is_file() and p.suffix in (".md", ".json", ".jsonl", ".csv", ".js")]
    assert {p.name for p in text_files} >= {"report.md", "responses.jsonl", "items.csv", "data.js", "text.js"}
    for p in text_files:
        data = p.read_bytes()
        assert b"\x1b" not in data and b"\x07" not in data, p
    report = (run / "report.md").read_text(encoding="utf-8")
    assert "\\x1b[2J\\x1b[1;31mserver on fire\\x1b[0m\\x07" in report  # shown, escaped
    (resp,) = [r for r in RunStore(run).read("responses") if r.error]
    assert ANSI_MESSAGE in resp.error  # the record keeps the text as received (JSON-escaped on disk)
    assert "<answer>\\x1b[31m2\\x1b[0m</answer>" in (run / "export" / "responses.csv").read_text(encoding="utf-8")


def test_the_runs_stderr_log_lines_escape_terminal_escapes(tmp_path):
    """Variant on the terminal: a log line naming a server's text shows its escapes as \\xNN."""
    import io

    from sgieval.core.logs import get_logger, run_logging

    stream = io.StringIO()
    with run_logging(tmp_path, "r1", stream=stream):
        get_logger().warning("call failed", reason="HTTP 500: \x1b[2J\x1b[31mfire\x1b[0m\x07")
    line = stream.getvalue()
    assert "\x1b" not in line and "\x07" not in line
    assert "\\x1b[2J\\x1b[31mfire\\x1b[0m\\x07" in line
    assert "\x1b" not in (tmp_path / "log.jsonl").read_text()  # JSON escapes it in the file
