"""Keys are masked by value: a key of any shape that a server echoes is stored nowhere.

The probe: a key not shaped ``sk-...`` that a server echoed in an error body was stored verbatim in
responses, scores, the ledger, the viewer and every export (masking matched patterns, not the value sent).
A real run of the CLI against the mock server on 127.0.0.1, then `view` and every `export` format; every
file of the run folder and every line printed is searched for the key (and its escaped forms).
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest
from typer.testing import CliRunner

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app
from sgieval.core import SecretValues
from sgieval.tests.security.run_folders import ask_mock, sums_bench, user_env

runner = CliRunner()
ENV_KEY = "mock-live-7f3a9c2e1b5d4a60"  # no sk- prefix: no pattern matches it
URL_KEY = "Zq8wLm3Rt5Vb7Nc9"  # a key of another shape, inside the base URL's user-info


@pytest.fixture(autouse=True)
def _user_env(tmp_path, monkeypatch):
    user_env(monkeypatch, tmp_path, ENV_KEY)


def test_secret_values_mask_every_form():
    sv = SecretValues([ENV_KEY, "short", None])
    assert len(sv) == 1 and repr(sv) == "SecretValues(1 value(s))"  # never shows a value
    assert sv.mask(f"bad key {ENV_KEY}!") == "bad key ***!"
    assert sv.mask(f"q?k={quote(ENV_KEY + '/x', safe='')}") == "q?k=***%2Fx"
    odd = 'a"b\\c-long-key'  # JSON-escaped as a\"b\\c-long-key
    sv2 = SecretValues([odd])
    assert sv2.mask(json.dumps({"e": f"echo {odd}"})) == '{"e": "echo ***"}'
    assert sv2.mask(f"x={quote(odd, safe='')}") == "x=***"
    assert sv.mask_data({"a": [f"{ENV_KEY}", {ENV_KEY: 1}]}) == {"a": ["***", {"***": 1}]}
    assert SecretValues().mask("sk-abcdefghijkl") == "sk-***"  # the patterns still apply


def _run(tmp_path: Path, url: str) -> tuple[Path, list[str]]:
    out = tmp_path / "runs"
    res = ask_mock(url, sums_bench(tmp_path / "qa.jsonl"), out, "--max-concurrency", "1")
    assert res.exit_code == 0, res.output
    (run,) = out.iterdir()
    outputs = [res.output]
    for cmd in (["view", str(run)], *(["export", str(run), "-f", f] for f in ("jsonl", "csv", "parquet"))):
        r = runner.invoke(app, cmd)
        assert r.exit_code == 0, r.output
        outputs.append(r.output)
    return run, outputs


def _forms(key: str) -> list[bytes]:
    return [key.encode(), json.dumps(key)[1:-1].encode(), quote(key, safe="").encode(), key[4:].encode()]


@pytest.mark.parametrize(
    "where,key",
    [("environment", ENV_KEY), ("base URL user-info", URL_KEY)],
)
def test_an_echoed_key_of_any_shape_is_in_no_file_and_no_output(tmp_path, where, key, fresh_call_cache):
    """Request 0 is answered 400 with the key in its error message, request 1 with the key as its reply
    text; the others normally."""
    faults = {0: "echo_key", 1: "echo_key_200"}
    with MockOpenAI(replies=lambda body, i: "<answer>2</answer>", faults=lambda i, body: faults.get(i)) as mock:
        url = mock.url if where == "environment" else mock.url.replace("http://", f"http://user:{URL_KEY}@")
        run, outputs = _run(tmp_path, url)
        sent = mock.log()
    assert [e["outcome"] for e in sent] == ["400", "200", "200", "200"]
    assert all(e["authorization"] == f"Bearer {key}" for e in sent)  # the key really was sent, and echoed
    files = [p for p in run.rglob("*") if p.is_file()]
    names = {str(p.relative_to(run)) for p in files}
    assert {"responses.jsonl", "scores.jsonl", "ledger.jsonl", "log.jsonl", "report.md", "report.json"} <= names
    assert {"viewer/data.js", "viewer/text.js", "export/items.jsonl", "export/items.csv", "export/items.parquet"} <= (
        names
    )
    for p in files:
        data = p.read_bytes()
        for form in _forms(key):
            assert form not in data, (p, form)
    for text in outputs:
        assert key not in text
    # the user's call cache keeps the replies too: masked there as well
    from sgieval.models import cache

    cache.get_cache().close()  # its last batch committed
    cached = [p for p in tmp_path.glob("calls.sqlite*") if p.is_file()]
    assert cached and b"your key is ***" in b"".join(p.read_bytes() for p in cached)
    for p in cached:
        assert key.encode() not in p.read_bytes(), p
    # what was masked is still there, masked: the error and the echoed reply
    responses = [json.loads(line) for line in (run / "responses.jsonl").read_text().splitlines()]
    assert any("Malformed request for key *** (mock)" in (r.get("error") or "") for r in responses)
    assert any(r.get("text") == "your key is ***" for r in responses)
    ledger = (run / "ledger.jsonl").read_text()
    assert "Malformed request for key *** (mock)" in ledger
