"""A budget holds at the providers' list prices (genai-prices): a run of o1-pro stops at its budget (o1's price,
ten times lower, never stopped it), and a budget with a model whose price is unknown refuses to start unless
--price gives one.  The real command against the mock OpenAI server on 127.0.0.1, serving the model names."""

from __future__ import annotations

import json
import re
import shutil
from importlib.metadata import version

import pytest
from typer.testing import CliRunner

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app
from sgieval.tests.conftest import FIXTURES

runner = CliRunner()
USAGE = {"prompt_tokens": 1000, "completion_tokens": 500}
REPLY = {"content": json.dumps({"score": 0, "explanation": "- x"}), "usage": USAGE}


def _data(tmp_path):
    d = tmp_path / "data" / "sfbench"
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "sfbench" / "claims.jsonl", d)  # 10 claims
    return d.parent


def _ask(tmp_path, url, model, *extra):
    return runner.invoke(
        app,
        [
            "ask",
            "feasibility of claims",
            "-b",
            "sfbench",
            "--data-dir",
            str(_data(tmp_path)),
            "--yes",
            "--models",
            model,
            "--base-url",
            url,
            "--out",
            str(tmp_path / "runs"),
            "--no-cache",
            "--max-concurrency",
            "1",
            *extra,
        ],
    )


@pytest.mark.parametrize(
    "model, budget, calls, spent",
    [
        # o1-pro: 1000 * 150/1e6 + 500 * 600/1e6 = 0.45 USD a call; calls start while spent < 0.5:
        # at 0 and 0.45, then 0.90 >= 0.5 stops (at o1's 15/60 a call is 0.045: all 10 cost 0.45 < 0.5)
        ("openai:o1-pro", "0.5", 2, "0.9000"),
        # o3-pro: 1000 * 20/1e6 + 500 * 80/1e6 = 0.06 a call; calls at 0, 0.06, 0.12, then 0.18 >= 0.15
        # (at o3's 2/8 a call is 0.006: all 10 cost 0.06 < 0.15)
        ("openai:o3-pro", "0.15", 3, "0.1800"),
    ],
)
def test_budget_stops_at_list_price(tmp_path, monkeypatch, model, budget, calls, spent):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with MockOpenAI(replies=[REPLY]) as mock:
        res = _ask(tmp_path, mock.url, model, "--budget", budget)
        assert res.exit_code == 0, res.output
        assert mock.stats()["served"] == calls
    (run,) = (tmp_path / "runs").iterdir()
    report = (run / "report.md").read_text()
    assert "The run stopped at its budget" in report
    assert f"Budget {budget} USD; spent {spent} USD in all." in report
    assert (
        f"Prices: list prices of genai-prices {version('genai-prices')} (bundled data, standard tier) for {model}."
    ) in report
    rows = [json.loads(x) for x in (run / "ledger.jsonl").read_text().splitlines()]
    assert [(r["model"], r["input_tokens"], r["output_tokens"]) for r in rows] == [(model, 1000, 500)] * calls


def test_budget_with_an_unpriced_model_needs_a_price(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with MockOpenAI(replies=[REPLY]) as mock:
        res = _ask(tmp_path, mock.url, "openai:my-llm", "--budget", "1")
        assert res.exit_code == 2 and mock.stats()["requests"] == 0
        (line,) = [ln for ln in res.output.splitlines() if ln.strip()]
        assert line == (
            f"error: --budget: --budget 1.0 USD cannot be kept: no price is known for openai:my-llm (not listed by "
            f"genai-prices {version('genai-prices')} under that exact name, and no --price given), so its calls "
            "would count as 0 USD. Fix: pass --price openai:my-llm=IN,OUT (USD per 1M input and output tokens) for "
            "it, or leave out --budget"
        )
        assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
        # a longer name of a listed model is no price either (o1-pro-max is not o1-pro)
        res = _ask(tmp_path, mock.url, "openai:o1-pro-max", "--budget", "1")
        assert res.exit_code == 2 and "no price is known for openai:o1-pro-max" in res.output
        # with a price: 1000 * 1000/1e6 + 500 * 2000/1e6 = 2 USD a call, so the second call is refused
        res = _ask(tmp_path, mock.url, "openai:my-llm", "--budget", "1", "--price", "openai:my-llm=1000,2000")
        assert res.exit_code == 0, res.output
        assert mock.stats()["served"] == 1
    (run,) = (tmp_path / "runs").iterdir()
    report = (run / "report.md").read_text()
    assert "Budget 1.0 USD; spent 2.0000 USD in all." in report
    assert "Prices: given by the user (--price) for openai:my-llm." in report
    assert json.loads((run / "config.json").read_text())["prices"] == ["openai:my-llm=1000,2000"]


@pytest.mark.parametrize("value", ["openai:my-llm", "openai:my-llm=1", "openai:my-llm=a,b", "openai:my-llm=-1,2"])
def test_bad_price_option_is_one_line(tmp_path, value):
    res = runner.invoke(app, ["ask", "x", "--price", value, "--out", str(tmp_path / "runs")])
    assert res.exit_code == 2
    (line,) = [ln for ln in res.output.splitlines() if ln.strip()]
    assert re.fullmatch(
        r"error: --price: (not MODEL=IN,OUT|prices are not numbers|prices must be finite and >= 0): "
        + re.escape(repr(value))
        + r"\. Fix: give --price MODEL=IN,OUT with IN and OUT in USD per 1M input and output tokens, e\.g\. "
        r"openai:o1-pro=150,600",
        line,
    ), line


def test_prices_keyword_in_python():
    from sgieval.core import InputError, RunConfig

    cfg = RunConfig.checked(run_id="p", prices={"openai:my-llm": (0.5, 1.5)})
    assert cfg.prices == ["openai:my-llm=0.5,1.5"] and cfg.price_table() == {"openai:my-llm": (0.5, 1.5)}
    with pytest.raises(InputError) as ei:
        RunConfig.checked(run_id="p", prices=["openai:my-llm=0.5"])
    assert ei.value.one_line().startswith("prices: not MODEL=IN,OUT: 'openai:my-llm=0.5'. Fix: give --price")


@pytest.mark.parametrize("transport", ["direct", "sdk"])
async def test_cached_and_reasoning_tokens_from_the_server_are_priced_as_billed(monkeypatch, transport):
    """An OpenAI-style reply reporting cached prompt tokens and reasoning tokens, through either transport:
    the ledger keeps them and prices the cached part at the cache-read price."""
    from sgieval.models.accounting import Ledger
    from sgieval.models.calls import ainvoke
    from sgieval.models.registry import resolve_model

    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("SGIEVAL_OPENAI_TRANSPORT", transport)
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 500,
        "prompt_tokens_details": {"cached_tokens": 400},
        "completion_tokens_details": {"reasoning_tokens": 300},
    }
    with MockOpenAI(replies=[{"content": "hi", "usage": usage}]) as mock:
        model = resolve_model("openai:gpt-4o", "target", base_url=mock.url)
        ledger = Ledger()
        with ledger.activate():
            await ainvoke(model, "x")
    (row,) = ledger.to_dicts()
    assert (row["input_tokens"], row["cache_read_tokens"], row["output_tokens"], row["reasoning_tokens"]) == (
        1000,
        400,
        500,
        300,
    )
    # gpt-4o: 600 * 2.5/1e6 + 400 * 1.25/1e6 + 500 * 10/1e6 = 0.0015 + 0.0005 + 0.005 = 0.007
    assert row["cost"] == pytest.approx(0.007)
