"""Issue 14 items 5 and 8: a refused key stops the run at the first reply, naming provider, model string and
the variable to set; a key embedded in a URL never lands in a run folder, a log, a report or the terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app
from sgieval.core import redact_secrets, redact_url

runner = CliRunner()
FAKE_KEY = "sk-fake-7e3a1c9b5d2f4e6a8c0b"


@pytest.fixture(autouse=True)
def _user_env(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key-not-in-url-000")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SGIEVAL_CACHE_DIR", str(tmp_path / "cache"))


def bench(tmp_path: Path, n: int = 4) -> Path:
    p = tmp_path / "qa.jsonl"
    p.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"What is {i} + {i}?", "reference": str(2 * i)}) + "\n"
                         for i in range(n)))
    return p


def test_redaction_rules():
    assert redact_url(f"http://user:{FAKE_KEY}@127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert redact_url(f"https://api.example/v1?api_key={FAKE_KEY}&model=x") == "https://api.example/v1?api_key=***&model=x"
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert redact_secrets(f"error at http://u:{FAKE_KEY}@h/v1 with key {FAKE_KEY}.") == \
        "error at http://h/v1 with key sk-***."


def test_key_in_base_url_appears_in_no_file_of_the_run(tmp_path):
    with MockOpenAI(replies=lambda body, i: "<answer>2</answer>") as mock:
        url = mock.url.replace("http://", f"http://user:{FAKE_KEY}@")
        out = tmp_path / "runs"
        res = runner.invoke(app, ["ask", "", "-b", str(bench(tmp_path)), "-m", "openai:gpt-4o-mini", "--base-url", url,
                                  "--tools", "", "--yes", "--out", str(out)])
        assert res.exit_code == 0, res.output
        assert mock.stats()["served"] == 4  # the calls did reach the server the user named
    (run,) = out.iterdir()
    files = [p for p in run.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"config.json", "report.md", "log.jsonl", "responses.jsonl", "state.sqlite"}
    for p in files:
        assert FAKE_KEY.encode() not in p.read_bytes(), p
    assert FAKE_KEY not in res.output
    assert json.loads((run / "config.json").read_text())["base_url"] == mock.url


@pytest.mark.parametrize("status", ["401", "403"])
def test_refused_key_stops_the_run_at_the_first_reply(tmp_path, status):
    with MockOpenAI(faults=lambda index, body: status) as mock:
        out = tmp_path / "runs"
        res = runner.invoke(app, ["ask", "", "-b", str(bench(tmp_path, n=6)), "-m", "openai:gpt-4o-mini",
                                  "--base-url", mock.url, "--tools", "", "--yes", "--max-concurrency", "1",
                                  "--out", str(out)])
        requests = mock.stats()["requests"]
    assert res.exit_code == 2, res.output
    what = "refused the credentials" if status == "401" else "refused access (forbidden)"
    assert res.output.strip().splitlines()[-1] == (
        f"error: openai:gpt-4o-mini: the OpenAI-compatible server at {mock.url} {what} (HTTP {status}) for model "
        "openai:gpt-4o-mini; the run stops here. Fix: set OPENAI_API_KEY to a valid key for this model (or check "
        "--base-url), then run again (a kept run folder resumes with `sgieval resume`)")
    assert requests == 1  # not retried, and no other item was tried
    assert not list(out.glob("*/responses.jsonl")) or all(
        not p.read_text().strip() for p in out.glob("*/responses.jsonl"))


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
        res = runner.invoke(app, ["ask", "", "-b", str(bench(tmp_path, n=2)), "-m", "openai:gpt-4o-mini",
                                  "--base-url", mock.url, "--tools", "", "--yes", "--max-concurrency", "1",
                                  "--out", str(out)])
        assert res.exit_code == 0, res.output
        assert mock.stats()["requests"] == 4
    (run,) = out.iterdir()
    assert [json.loads(x)["status"] for x in (run / "responses.jsonl").read_text().splitlines()] == ["ok", "ok"]
