"""A refused key stops the run at the first reply, naming provider, model string and
the variable to set; a key embedded in a URL never lands in a run folder, a log, a report or the terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app
from sgieval.core import redact_secrets, redact_url
from sgieval.tests.security.run_folders import ask_mock, sums_bench, user_env

runner = CliRunner()
FAKE_KEY = "sk-fake-7e3a1c9b5d2f4e6a8c0b"


@pytest.fixture(autouse=True)
def _user_env(tmp_path, monkeypatch):
    user_env(monkeypatch, tmp_path, "sk-env-key-not-in-url-000")


def bench(tmp_path: Path, n: int = 4) -> Path:
    return sums_bench(tmp_path / "qa.jsonl", n)


def test_redaction_rules():
    assert redact_url(f"http://user:{FAKE_KEY}@127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert (
        redact_url(f"https://api.example/v1?api_key={FAKE_KEY}&model=x") == "https://api.example/v1?api_key=***&model=x"
    )
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert (
        redact_secrets(f"error at http://u:{FAKE_KEY}@h/v1 with key {FAKE_KEY}.")
        == "error at http://h/v1 with key sk-***."
    )


def test_key_in_base_url_appears_in_no_file_of_the_run(tmp_path):
    with MockOpenAI(replies=lambda body, i: "<answer>2</answer>") as mock:
        url = mock.url.replace("http://", f"http://user:{FAKE_KEY}@")
        out = tmp_path / "runs"
        res = ask_mock(url, bench(tmp_path), out)
        assert res.exit_code == 0, res.output
        assert mock.stats()["served"] == 4  # the calls did reach the server the user named
    (run,) = out.iterdir()
    files = [p for p in run.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"config.json", "report.md", "log.jsonl", "responses.jsonl", "state.sqlite"}
    for p in files:
        assert FAKE_KEY.encode() not in p.read_bytes(), p
    assert FAKE_KEY not in res.output
    assert json.loads((run / "config.json").read_text())["base_url"] == mock.url


ENV_KEY = "sk-envkey-9f8e7d6c5b4a3210"


@pytest.mark.parametrize("where", ["userinfo", "query", "both"])
def test_no_key_in_any_file_of_a_run(tmp_path, monkeypatch, where):
    # a recognisable key in the environment and one inside the base URL (user-info, query, both): after a run
    # (with a damaged line to warn about and a failing call to log), no file of the run folder holds either
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    with MockOpenAI(
        replies=lambda body, i: "<answer>2</answer>", faults=lambda index, body: "400" if index == 0 else None
    ) as mock:
        url = mock.url
        if where in ("userinfo", "both"):
            url = url.replace("http://", f"http://user:{FAKE_KEY}@")
        if where in ("query", "both"):
            url += f"?api_key={FAKE_KEY}&token={FAKE_KEY}"
        out = tmp_path / "runs"
        res = ask_mock(url, bench(tmp_path), out, "--max-concurrency", "1")
        assert res.exit_code == 0, res.output
        sent = mock.log()
    (run,) = out.iterdir()
    res2 = runner.invoke(app, ["report", str(run)])
    assert res2.exit_code == 0, res2.output
    files = [p for p in run.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {
        "config.json",
        "report.md",
        "report.json",
        "log.jsonl",
        "responses.jsonl",
        "scores.jsonl",
        "ledger.jsonl",
        "state.sqlite",
    }
    for p in files:
        data = p.read_bytes()
        assert FAKE_KEY.encode() not in data and ENV_KEY.encode() not in data, p
        assert FAKE_KEY[3:].encode() not in data, p  # not even without its prefix
    for text in (res.output, res2.output):
        assert FAKE_KEY not in text and ENV_KEY not in text
    if where == "userinfo":  # a URL's user-info password is sent as the API key (the calls did reach the server)
        assert len(sent) == 4 and all(e["authorization"] == f"Bearer {FAKE_KEY}" for e in sent)
    else:  # the client appends its path after the query: the calls fail, and their logged reasons hold no key
        assert "failed" in (run / "report.md").read_text()
    stored = json.loads((run / "config.json").read_text())["base_url"]
    assert stored == mock.url + ("?api_key=***&token=***" if where != "userinfo" else "")


@pytest.mark.parametrize("status", ["401", "403"])
def test_refused_key_stops_the_run_at_the_first_reply(tmp_path, status):
    with MockOpenAI(faults=lambda index, body: status) as mock:
        out = tmp_path / "runs"
        res = ask_mock(mock.url, bench(tmp_path, n=6), out, "--max-concurrency", "1")
        requests = mock.stats()["requests"]
    assert res.exit_code == 2, res.output
    what = "refused the credentials" if status == "401" else "refused access (forbidden)"
    assert res.output.strip().splitlines()[-1] == (
        f"error: openai:gpt-4o-mini: the OpenAI-compatible server at {mock.url} {what} (HTTP {status}) for model "
        "openai:gpt-4o-mini; the run stops here. Fix: set OPENAI_API_KEY to a valid key for this model (or check "
        "--base-url), then run again (a kept run folder resumes with `sgieval resume`)"
    )
    assert requests == 1  # not retried, and no other item was tried
    assert not list(out.glob("*/responses.jsonl")) or all(
        not p.read_text().strip() for p in out.glob("*/responses.jsonl")
    )


def test_429_and_500_keep_their_retries(tmp_path):
    # every first attempt of a request fails (429 then 500 alternately), the retry succeeds: all items ok
    seen: set[str] = set()

    def faults(index, body):
        key = json.dumps(body["messages"])
        if key in seen:
            return None
        seen.add(key)
        return "429" if index % 2 == 0 else "500"

    with MockOpenAI(faults=faults, retry_after_s=0.01, replies=lambda body, i: "ok") as mock:
        out = tmp_path / "runs"
        res = ask_mock(mock.url, bench(tmp_path, n=2), out, "--max-concurrency", "1")
        assert res.exit_code == 0, res.output
        assert mock.stats()["requests"] == 4
    (run,) = out.iterdir()
    assert [json.loads(x)["status"] for x in (run / "responses.jsonl").read_text().splitlines()] == ["ok", "ok"]


def test_run_log_masks_keys_in_every_field(tmp_path):
    # sink level: whatever an event carries (a URL with a key, a bare key), log.jsonl and the terminal line hold none
    import io

    from sgieval.core.logs import get_logger, log_traceback, run_logging

    stream = io.StringIO()
    with run_logging(tmp_path, "r1", stream=stream):
        get_logger("sgieval").warning(
            "call failed",
            url=f"http://u:{FAKE_KEY}@h/v1?api_key={FAKE_KEY}",
            reason=f"bad key {FAKE_KEY}",
            nested={"key": FAKE_KEY},
        )
    try:
        raise RuntimeError(f"at http://u:{FAKE_KEY}@h/v1")
    except RuntimeError as e:
        log_traceback(tmp_path, "r1", e)
    text = (tmp_path / "log.jsonl").read_text()
    assert FAKE_KEY not in text and FAKE_KEY not in stream.getvalue()
    first, second = (json.loads(x) for x in text.splitlines())
    assert (first["url"], first["reason"], first["nested"]) == (
        "http://h/v1?api_key=***",
        "bad key sk-***",
        {"key": "sk-***"},
    )
    assert second["error"] == "RuntimeError: at http://h/v1"


def test_report_files_mask_keys(tmp_path, monkeypatch):
    # sink level: a narrative (an agent model's words) quoting a key never reaches report.md or report.json
    from sgieval.core import MetricSpec
    from sgieval.reports import build

    monkeypatch.setattr(build, "render_report", lambda data: f"# Report\n\n{data['narrative']}\n")
    draft = build.ReportDraft(
        data={"ranking": {}},
        stats=[],
        top=None,
        tables_text="",
        spec=MetricSpec(
            name="m",
            tasks=["generic"],
            kind="objective",
            range=(0, 1),
            higher_is_better=True,
            description="d",
            source="s",
        ),
    )
    build.write_report_files(tmp_path, draft, f"Served by http://u:{FAKE_KEY}@h/v1 with {FAKE_KEY}.")
    assert (tmp_path / "report.md").read_text() == "# Report\n\nServed by http://h/v1 with sk-***.\n"
    assert json.loads((tmp_path / "report.json").read_text())["narrative"] == "Served by http://h/v1 with sk-***."
    assert not (tmp_path / ".report-pending").exists()
