"""``sgieval report RUN`` re-renders a finished run's report from its records, with the settings the run recorded
(not the shell's): no target or judge is called, so no API key is needed (a run made with ``OPENAI_BASE_URL`` and
``OPENAI_API_KEY`` set re-renders with neither, to the same report); only an agent model, which writes the
narrative, still needs its key, and the error says so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app

runner = CliRunner()


def _reply(body: dict, index: int):
    if body["model"].startswith("model-"):
        return f"answer {index}: a controlled experiment with a blinded comparison and a stated error bound"
    text = "\n".join(m["content"] for m in body["messages"] if isinstance(m.get("content"), str))
    import re

    names = re.findall(r"^- (.+?) \(weight [^)]*\)", text, flags=re.M)
    score = 3 + len(text) % 5
    return json.dumps(
        {"scores": [{"criterion": n, "score": score, "rationale": "stated", "evidence": []} for n in names]}
    )


@pytest.fixture(scope="module")
def served_run(tmp_path_factory) -> Path:
    """A judged run (openai:model-a, openai:model-b judged by openai:judge on 3 items) made on the mock server
    through OPENAI_BASE_URL and OPENAI_API_KEY, as a user with the official client variables would."""
    tmp = tmp_path_factory.mktemp("rerender")
    items = tmp / "questions.jsonl"
    items.write_text(
        "".join(json.dumps({"id": f"q{k}", "prompt": f"Propose a test of claim {k}."}) + "\n" for k in range(3))
    )
    mp = pytest.MonkeyPatch()
    try:
        with MockOpenAI(replies=_reply) as mock:
            mp.setenv("OPENAI_BASE_URL", mock.url)
            mp.setenv("OPENAI_API_KEY", "sk-test")
            mp.setenv("SGIEVAL_CACHE_DIR", str(tmp / "cache"))
            argv = ["ask", "Which model is the most rigorous?", "-b", str(items), "-m", "openai:model-a,openai:model-b"]
            res = runner.invoke(app, [*argv, "--judge", "openai:judge", "--yes", "--out", str(tmp / "runs")])
            assert res.exit_code == 0, res.output
            assert mock.stats()["requests"] > 0
    finally:
        mp.undo()
    (run,) = [p for p in (tmp / "runs").iterdir() if (p / "report.md").is_file()]
    return run


def test_report_rerenders_a_judged_run_without_any_api_key(served_run, tmp_path, monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    run = tmp_path / "run"
    shutil.copytree(served_run, run)
    before = (run / "report.md").read_text()
    (run / "report.md").unlink()
    res = runner.invoke(app, ["report", str(run)])
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == f"report: {run / 'report.md'}"
    after = (run / "report.md").read_text()
    assert "| openai:model-a |" in after and "| openai:model-b |" in after
    assert after == before  # the same report: every score, rank and cost, and the run's own settings and servers
    servers = next(line for line in after.splitlines() if line.startswith("| model servers |"))
    assert servers.startswith("| model servers | openai:model-a: http://127.0.0.1:")  # the mock, not api.openai.com
    assert "OPENAI_API_KEY=set" in after and "OPENAI_BASE_URL=http://127.0.0.1:" in after
    assert "| judge | openai:judge |" in after


def test_report_of_a_run_with_an_agent_model_names_the_agent_when_its_key_is_missing(served_run, tmp_path, monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    run = tmp_path / "run"
    shutil.copytree(served_run, run)
    config = json.loads((run / "config.json").read_text())
    config["agent_model"] = "openai:planner"
    (run / "config.json").write_text(json.dumps(config))
    res = runner.invoke(app, ["report", str(run), "--trust-config"])
    assert res.exit_code == 2, res.output
    assert (
        "openai:planner: no OPENAI_API_KEY set and no base URL given (the agent model writes the report's "
        "narrative; no other model is called to re-render it)."
    ) in " ".join(res.output.split())
