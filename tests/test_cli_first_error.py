"""The first error is the real one: no data is named before --models, a model the request
names without stored responses stops the run, `catalog` lists the stored models, every Fix names a working command."""

from __future__ import annotations

import pytest

import json

from typer.testing import CliRunner

from sgieval.benchmarks import data as data_mod
from sgieval.benchmarks import sciaidanbench as sciaidanbench_mod
from sgieval.cli import app

runner = CliRunner()


def test_no_data_anywhere_is_said_first(tmp_path, monkeypatch):
    monkeypatch.setattr(data_mod, "data_roots", lambda data_dir=None: [tmp_path / "empty"])
    res = runner.invoke(app, ["ask", "Which model is the most creative?", "--yes", "--out", str(tmp_path / "runs")])
    assert res.exit_code == 2
    assert res.output.startswith(
        "error: catalog: no benchmark data found in any lookup location. Fix: run "
        "`sgieval data pull sciaidanbench` when online"
    )
    assert "--models" not in res.output
    assert not (tmp_path / "runs").exists()
    # the same with an explicit (empty) benchmark list and with -b sciaidanbench
    res = runner.invoke(app, ["ask", "creative", "-b", "sciaidanbench", "--yes", "--out", str(tmp_path / "runs")])
    assert res.exit_code == 2 and "--models" not in res.output
    assert res.output.startswith("error: sciaidanbench: no sciaidanbench data found")
    assert (
        "Fix: run `sgieval data pull sciaidanbench` (online), or pass --data-dir <folder holding sciaidanbench/>"
        in res.output
    )


def test_unstored_model_named_in_request_exits_2_with_one_line(tmp_path):
    res = runner.invoke(app, ["ask", "How good is gpt-4.1 at physics?", "--yes", "--out", str(tmp_path / "runs")])
    assert res.exit_code == 2
    assert res.output == (
        "error: request: gpt-4.1 has no stored responses (stored: llama3.3:latest, mistral:latest, o1-mini, openai/4o, "
        "phi4:latest, qwen2.5:latest), so the run would answer about other models. Fix: run it live with --models "
        "openai:gpt-4.1 (an OpenAI-compatible server: --base-url), or ask about a stored model\n"
    )
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    # a variant: a version of a stored family that is not stored
    res = runner.invoke(
        app, ["ask", "Is llama3.1 more creative than phi4 in chemistry?", "--yes", "--out", str(tmp_path / "runs")]
    )
    assert res.exit_code == 2 and res.output.startswith("error: request: llama3.1 has no stored responses")
    assert "--models ollama:llama3.1" in res.output


def test_catalog_lists_stored_models_per_benchmark():
    res = runner.invoke(app, ["catalog", "--json"])
    assert res.exit_code == 0
    data = json.loads(res.output)
    assert data["stored_responses"] == {
        "sciaidanbench": {
            "llama3.3:latest": 155,
            "mistral:latest": 155,
            "o1-mini": 155,
            "openai/4o": 155,
            "phi4:latest": 155,
            "qwen2.5:latest": 155,
        }
    }
    assert data["unavailable"]["sfbench"].startswith("no local data (sfbench has no public download: put its files in")
    assert "sgieval data pull sfbench" not in res.output
    text = runner.invoke(app, ["catalog"]).output
    assert "models with stored responses" in text and "o1-mini" in text


def test_fix_lines_name_working_commands(tmp_path, monkeypatch):
    from sgieval.core import DataNotFoundError, OfflineError

    monkeypatch.setattr(data_mod, "data_roots", lambda data_dir=None: [tmp_path / "empty"])
    try:
        data_mod.find_benchmark_dir("sfbench")
    except DataNotFoundError as e:
        assert "sgieval data pull" not in e.one_line() and "DATASETS.md" not in e.one_line()
        assert "Fix: sfbench has no public download: put its files in <folder>/sfbench/" in e.one_line()

    def refused(address, *args, **kwargs):
        raise ConnectionRefusedError(f"{address} refused")

    monkeypatch.delenv("SGIEVAL_NETWORK", raising=False)  # auto: the pull tries one connection
    monkeypatch.setattr(sciaidanbench_mod.socket, "create_connection", refused)
    with pytest.raises(OfflineError) as ei:
        data_mod.pull("sciaidanbench", tmp_path / "dest")
    assert ei.value.one_line().startswith(
        "data pull sciaidanbench: cannot reach codeload.github.com (the files come from "
        "github.com/CFN-softbio/SciAidanBench (commit aaa03c4, results/per_model/*.json))."
    )
    res = runner.invoke(app, ["data", "pull", "sfbench"])
    assert res.exit_code == 2 and "no public download for 'sfbench'" in res.output


def _commands(cmd, path=()):
    yield path, cmd
    if hasattr(cmd, "commands"):
        for name, sub in cmd.commands.items():
            yield from _commands(sub, path + (name,))


def test_every_flag_and_option_has_help_and_no_bool_placeholder():
    import typer

    root = typer.main.get_command(app)
    seen = 0
    for path, cmd in _commands(root):
        res = runner.invoke(app, [*path, "--help"])
        assert res.exit_code == 0 and "<bool>" not in res.output, (path, res.output)
        for p in cmd.params:
            if p.param_type_name == "option":
                seen += 1
                assert (p.help or "").strip(), f"sgieval {' '.join(path)} {p.opts[0]} has no help text"
    assert seen >= 30
