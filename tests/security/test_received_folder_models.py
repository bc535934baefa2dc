"""A received run folder decides nothing that costs money.

The probe: a received folder's ``"yes": true`` skipped the metric confirmation, and its models (e.g.
``openai:o1-pro``) were called with the user's key without a prompt.  The user's own server here is a
local mock (``OPENAI_BASE_URL``, as the user's environment sets it); the folder names only models.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app
from sgieval.core import RunConfig
from sgieval.core.trust import is_own_run, live_models, sensitive_settings
from sgieval.tests.security.run_folders import user_env

runner = CliRunner()
KEY = "sk-test-received-0123456789"


@pytest.fixture(autouse=True)
def _user_env(tmp_path, monkeypatch):
    user_env(monkeypatch, tmp_path, KEY)


def bench(tmp_path: Path) -> Path:
    p = tmp_path / "bench" / "qa.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {"id": "q1", "prompt": "Unit of magnetic flux density?", "reference": "tesla"},
        {"id": "q2", "prompt": "Symbol of gold?", "reference": "Au"},
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def received(tmp_path: Path, **config) -> Path:
    """A run folder as received: only its config.json, with ``"yes": true``."""
    folder = tmp_path / "runs" / "their-run"
    folder.mkdir(parents=True)
    b = tmp_path / "bench" / "qa.jsonl"
    cfg = {"run_id": folder.name, "yes": True, "tools": [], "benchmarks": [str(b if b.exists() else bench(tmp_path))]}
    cfg.update(config)
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def test_live_models_are_sensitive_offline_ones_are_not():
    assert live_models(["openai:o1-pro", "replay:o1-mini", "local:smollm2", "anthropic:claude-x"]) == [
        "openai:o1-pro",
        "anthropic:claude-x",
    ]
    cfg = RunConfig(
        run_id="r", models=["replay:o1-mini"], judges=["openai:gpt-5-pro"], agent_model="local:smollm2", tools=[]
    )
    assert sensitive_settings(cfg) == {"judges": ["openai:gpt-5-pro"]}


@pytest.mark.parametrize(
    "config,shown",
    [
        ({"models": ["openai:o1-pro"]}, "models = ['openai:o1-pro']"),  # the probe's case
        (
            {"models": ["replay:x"], "judges": ["openai:gpt-5-pro"], "agent_model": "openai:o3"},
            "judges = ['openai:gpt-5-pro']; agent_model = openai:o3",
        ),
    ],
)
def test_the_folders_models_are_shown_and_not_called_unconfirmed(tmp_path, monkeypatch, config, shown):
    with MockOpenAI(replies=["tesla"]) as mine:
        monkeypatch.setenv("OPENAI_BASE_URL", mine.url)
        run = received(tmp_path, **config)
        for answer in ("", "n\n"):
            res = runner.invoke(app, ["resume", str(run), "--yes"], input=answer)
            assert res.exit_code == 2, res.output
            assert f"models billed to your key: {shown}" in " ".join(res.output.split())
            assert res.output.strip().splitlines()[-1] == (
                f"error: {run / 'config.json'}: not confirmed: {shown}. Fix: pass --trust-config after checking them"
            )
        assert mine.stats()["requests"] == 0 and not (run / "responses.jsonl").exists()


def test_the_folders_yes_never_skips_the_metric_confirmation(tmp_path, monkeypatch):
    with MockOpenAI(replies=["tesla"]) as mine:
        monkeypatch.setenv("OPENAI_BASE_URL", mine.url)
        run = received(tmp_path, models=["openai:o1-pro"])
        # the models accepted (--trust-config), the folder's "yes" still does not answer the metric question
        res = runner.invoke(app, ["resume", str(run), "--trust-config"], input="")
        assert res.exit_code == 3, res.output
        assert "Run with these metrics?" in res.output
        assert mine.stats()["requests"] == 0
        (tmp_path / "runs" / "their-run").rename(tmp_path / "cancelled")
        run = received(tmp_path, models=["openai:o1-pro"])  # the same folder received again, answered "y"
        res = runner.invoke(app, ["resume", str(run), "--trust-config"], input="y\n")
        assert res.exit_code == 0, res.output
        assert "Run with these metrics?" in res.output
        assert mine.stats()["requests"] == 2  # one call per item, after both confirmations


def test_the_users_own_run_keeps_its_yes_and_models(tmp_path, monkeypatch):
    """Variant: a run this machine started needs neither prompt on resume; the same folder with a model
    changed is someone else's choice again."""
    with MockOpenAI(replies=["tesla"]) as mine:
        monkeypatch.setenv("OPENAI_BASE_URL", mine.url)
        out = tmp_path / "runs"
        args = ["ask", "", "-b", str(bench(tmp_path)), "-m", "openai:gpt-4o-mini", "--tools", "", "--out", str(out)]
        res = runner.invoke(app, [*args, "--yes"])
        assert res.exit_code == 0, res.output
        (run,) = out.iterdir()
        cfg = json.loads((run / "config.json").read_text())
        assert is_own_run(RunConfig.model_validate(cfg))
        (run / "report.md").unlink()
        res = runner.invoke(app, ["resume", str(run)], input="")
        assert res.exit_code == 0, res.output
        assert "billed to your key" not in res.output and "Run with these metrics?" not in res.output
        cfg["models"] = ["openai:o1-pro"]
        (run / "config.json").write_text(json.dumps(cfg))
        res = runner.invoke(app, ["resume", str(run)], input="")
        assert res.exit_code == 2 and "not confirmed: models = ['openai:o1-pro']" in res.output
