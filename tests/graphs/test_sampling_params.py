"""Reasoning models as targets and judges through the CLI, the graph and the openai client, against the local mock
server made to reject ``temperature`` as the OpenAI API does: the o-series model never gets it,
an unknown model's 400 is retried once without it, the run header says what was not sent, and config.json and
the report's Run table record every parameter actually sent."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app


def test_reasoning_models_get_only_the_parameters_they_take(tmp_path, monkeypatch):
    monkeypatch.setenv("SGIEVAL_NO_CACHE", "1")
    bench = tmp_path / "q.jsonl"
    bench.write_text("".join(json.dumps({"id": i, "prompt": f"{i} + 1?", "reference": i + 1}) + "\n" for i in (1, 2)))
    bodies = []

    def reply(body, index):
        bodies.append(body)
        return str(int(body["messages"][-1]["content"].split(" ")[0]) + 1)

    with MockOpenAI(reject_params={"temperature"}, replies=reply) as mock:
        res = CliRunner().invoke(
            app,
            [
                "ask",
                "-b",
                str(bench),
                "--models",
                "openai:o4-mini,openai:my-reasoner",
                "--base-url",
                mock.url,
                "--reasoning-effort",
                "low",
                "--temperature",
                "0.3",
                "--yes",
                "--out",
                str(tmp_path / "runs"),
            ],
        )
        assert res.exit_code == 0, res.output
        # o4-mini: known family, never sent; my-reasoner: rejected (once per call already in flight, the two
        # items run concurrently), each call retried once without it, then never sent again
        outcomes = [e["outcome"] for e in mock.log()]
        assert outcomes.count("400") in (1, 2) and outcomes.count("200") == 4
    assert all("temperature" not in b and b["reasoning_effort"] == "low" for b in bodies)
    # the run header names what the o-series model does not get
    assert "openai:o4-mini (target): temperature not sent: OpenAI o-series models reject it (asked 0.3)" in res.output
    (run,) = (tmp_path / "runs").iterdir()
    cfg = json.loads((run / "config.json").read_text())
    assert (cfg["temperature"], cfg["reasoning_effort"]) == (0.3, "low")
    assert cfg["sent_params"] == {
        "openai:o4-mini": {"reasoning_effort": "low"},
        "openai:my-reasoner": {"reasoning_effort": "low"},
    }
    assert cfg["dropped_params"]["openai:o4-mini"] == {"temperature": "OpenAI o-series models reject it (asked 0.3)"}
    assert cfg["dropped_params"]["openai:my-reasoner"]["temperature"].startswith(
        "rejected by the server: HTTP 400 OpenAIHTTPError: 400 from"
    )
    report = (run / "report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| sampling parameters |"))
    assert "openai:o4-mini: reasoning_effort=low (temperature not sent: OpenAI o-series models reject it" in row
    assert "openai:my-reasoner: reasoning_effort=low (temperature not sent: rejected by the server" in row
    # both models answered every item: 2 x exact_match 1.0
    scores = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    assert sorted((s["model"], s["value"]) for s in scores if s["metric"] == "exact_match") == [
        ("openai:my-reasoner", 1.0),
        ("openai:my-reasoner", 1.0),
        ("openai:o4-mini", 1.0),
        ("openai:o4-mini", 1.0),
    ]


def test_the_python_api_takes_the_same_sampling_parameters(tmp_path, monkeypatch):
    import sgieval

    monkeypatch.setenv("SGIEVAL_NO_CACHE", "1")
    bench = tmp_path / "q.jsonl"
    bench.write_text(json.dumps({"id": 1, "prompt": "1 + 1?", "reference": 2}) + "\n")
    bodies = []

    def reply(body, index):
        bodies.append(body)
        return "2"

    with MockOpenAI(reject_params={"reasoning_effort"}, replies=reply) as mock:
        run = sgieval.evaluate(
            "",
            models="openai:gpt-4.1-mini, openai:qwen3",
            benchmark=str(bench),
            base_url=mock.url,
            temperature=0.7,
            reasoning_effort="high",
            out_dir=tmp_path / "runs",
            run_id="api",
            bootstrap_resamples=999,
        )
    cfg = json.loads((run.run_dir / "config.json").read_text())
    # gpt-4.1-mini is not a reasoning model: no reasoning_effort; qwen3's server rejects it (HTTP 400), dropped
    assert cfg["sent_params"] == {"openai:gpt-4.1-mini": {"temperature": 0.7}, "openai:qwen3": {"temperature": 0.7}}
    assert cfg["dropped_params"]["openai:gpt-4.1-mini"] == {
        "reasoning_effort": "gpt-4.1-mini is not a reasoning model (asked high)"
    }
    assert list(cfg["dropped_params"]["openai:qwen3"]) == ["reasoning_effort"]
    assert [b.get("temperature") for b in bodies] == [0.7, 0.7]
    assert run.means("exact_match") == {"openai:gpt-4.1-mini": 1.0, "openai:qwen3": 1.0}
