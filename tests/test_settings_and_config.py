"""Settings and option validation: one pydantic-settings object reads every SGIEVAL_* variable
and names a bad one; the CLI and the Python API validate options through the same RunConfig and give the same
error (the option named as each spells it: ``--max-concurrency`` / ``max_concurrency``)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import sgieval
from sgieval.cli import app
from sgieval.core import InputError, RunConfig, load_settings

runner = CliRunner()
CHEM = "creative in chemistry"


def _cli_error(tmp_path, *opts) -> str:
    res = runner.invoke(app, ["ask", CHEM, "--yes", "--out", str(tmp_path / "runs"), *opts])
    assert res.exit_code == 2, res.output
    assert not (tmp_path / "runs").exists()
    (line,) = [ln for ln in res.output.splitlines() if ln.startswith("error: ")]
    return line.removeprefix("error: ")


def _api_error(tmp_path, **kw) -> str:
    with pytest.raises(InputError) as ei:
        sgieval.evaluate(CHEM, out_dir=tmp_path / "runs", **kw)
    assert not (tmp_path / "runs").exists()
    return ei.value.one_line()


@pytest.mark.parametrize(
    "cli_opts, api_kw, cli_line, api_line",
    [
        (
            ["--max-concurrency", "0"],
            {"max_concurrency": 0},
            "--max-concurrency: must be a positive integer (model calls in flight), got 0. "
            "Fix: pass --max-concurrency 1 or more (default 16)",
            "max_concurrency: must be a positive integer (model calls in flight), got 0. "
            "Fix: pass max_concurrency 1 or more (default 16)",
        ),
        (
            ["--sandbox", "nope"],
            {"sandbox": "nope"},
            "--sandbox: unknown sandbox backend 'nope'. Fix: use one of auto, bubblewrap, bwrap, e2b, unsafe-local, local",
            "sandbox: unknown sandbox backend 'nope'. Fix: use one of auto, bubblewrap, bwrap, e2b, unsafe-local, local",
        ),
        (
            ["--sandbox", "local"],
            {"sandbox": "local"},
            "--sandbox local: the unsafe local backend runs model code without isolation. "
            "Fix: add --unsafe-local-exec to allow it explicitly",
            "sandbox local: the unsafe local backend runs model code without isolation. "
            "Fix: add unsafe_local_exec=True to allow it explicitly",
        ),
        (
            ["--budget", "-2.5"],
            {"budget_usd": -2.5},
            "--budget: must be >= 0 USD, got -2.5. Fix: pass a non-negative amount in USD, or leave --budget out for no limit",
            "budget_usd: must be >= 0 USD, got -2.5. Fix: pass a non-negative amount in USD, or leave budget_usd out for "
            "no limit",
        ),
    ],
)
def test_cli_and_api_give_the_same_error(tmp_path, cli_opts, api_kw, cli_line, api_line):
    assert _cli_error(tmp_path, *cli_opts) == cli_line
    assert _api_error(tmp_path, **api_kw) == api_line


def test_run_config_is_the_one_validation():
    """The same check holds when a RunConfig is built directly (e.g. read back from config.json)."""
    with pytest.raises(InputError, match=r"^executor: unknown executor 'dask'\. Fix: use one of local, ray$"):
        RunConfig.checked(run_id="x", executor="dask")
    with pytest.raises(
        InputError,
        match=r"^tools: unknown tool\(s\) 'web'\. Fix: give a comma-separated list of "
        r"search, pdf, python \(e\.g\. tools search,pdf\)$",
    ):
        RunConfig.checked(run_id="x", tools=["search", "web"])
    assert RunConfig.checked(run_id="x", sandbox="unsafe-local", unsafe_local_exec=True).sandbox == "unsafe-local"


def test_core_lists_match_the_tools_and_executors():
    """RunConfig's allowed values (core) are exactly what the sandbox, the tool pool and the executors accept."""
    from sgieval.agents.executors import EXECUTORS
    from sgieval.core import EXECUTORS as CORE_EXECUTORS, SANDBOX_BACKENDS, TOOL_NAMES
    from sgieval.tools.pool import TOOL_GROUPS
    from sgieval.tools.sandbox import BACKENDS

    assert tuple(BACKENDS) == SANDBOX_BACKENDS
    assert tuple(TOOL_GROUPS) == TOOL_NAMES
    assert EXECUTORS == CORE_EXECUTORS == ("local", "ray")


@pytest.mark.parametrize(
    "var, value, line",
    [
        (
            "SGIEVAL_LOCAL_THREADS",
            "two",
            "SGIEVAL_LOCAL_THREADS: must be a positive integer. Fix: unset it or set e.g. SGIEVAL_LOCAL_THREADS=2",
        ),
        (
            "SGIEVAL_NETWORK",
            "sometimes",
            "SGIEVAL_NETWORK: unknown network mode 'sometimes'. "
            "Fix: set it to auto (probe), online or offline, or unset it",
        ),
        (
            "SGIEVAL_OPENAI_TRANSPORT",
            "curl",
            "SGIEVAL_OPENAI_TRANSPORT: unknown OpenAI transport 'curl'. "
            "Fix: set it to 'direct' (default) or 'sdk', or unset it",
        ),
    ],
)
def test_a_bad_variable_is_named(monkeypatch, var, value, line):
    monkeypatch.setenv(var, value)
    with pytest.raises(InputError) as ei:
        load_settings()
    assert ei.value.one_line() == line


def test_settings_values_and_masking(monkeypatch, tmp_path):
    monkeypatch.setenv("SGIEVAL_NO_CACHE", "yes")
    monkeypatch.setenv("SGIEVAL_LOCAL_THREADS", "3")
    monkeypatch.setenv("SGIEVAL_RUBRIC_DIR", str(tmp_path / "r"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    monkeypatch.delenv("E2B_API_KEY", raising=False)
    shown = load_settings().shown()
    assert shown["SGIEVAL_NO_CACHE"] is True and shown["SGIEVAL_LOCAL_THREADS"] == 3
    assert shown["SGIEVAL_RUBRIC_DIR"] == str(tmp_path / "r")
    assert shown["OPENAI_API_KEY"] == "set" and shown["E2B_API_KEY"] == "not set"
    assert "sk-secret-value" not in json.dumps(shown)


def test_a_run_stores_and_prints_its_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("SGIEVAL_LOCAL_THREADS", "2")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-shown")
    run = sgieval.evaluate(CHEM, models="replay:o1-mini", out_dir=tmp_path, run_id="s", bootstrap_resamples=99)
    cfg = json.loads((run.run_dir / "config.json").read_text())
    assert cfg["settings"]["SGIEVAL_LOCAL_THREADS"] == 2 and cfg["settings"]["OPENAI_API_KEY"] == "set"
    report = run.report.read_text()
    (row,) = [ln for ln in report.splitlines() if ln.startswith("| settings |")]
    assert "SGIEVAL_LOCAL_THREADS=2" in row and "OPENAI_API_KEY=set" in row
    assert "sk-never-shown" not in report and "sk-never-shown" not in (run.run_dir / "config.json").read_text()
