"""Judge calls the call cache will serve are counted as cached in the estimate (no call, no USD), as target calls
are, and a run whose calls were all served by the cache costs 0 USD in its report's Cost table, as `sgieval runs`
says.  Through the CLI, the real graph and the openai client against the local mock server.

The run: the 2 SGI-Bench idea-generation fixture items, targets ``openai:model-a``/``openai:model-b`` at
temperature 0 (so their answers are cached), judge ``openai:judge`` (temperature 0 by default); per (target, item)
the judge makes 3 calls (2 pairwise, 1 rigor rubric): 4 target and 12 judge calls.  Priced with ``--price``.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app
from sgieval.tests.graphs.test_into_judge import Replies
from sgieval.tests.graphs.test_rigor_scripted import REQUEST, sgi_data

runner = CliRunner()
A, B = "openai:model-a", "openai:model-b"
PRICES = ["--price", f"{A}=1,2", "--price", f"{B}=1,2", "--price", "openai:judge=3,4"]


def _usage(run_dir) -> list[list]:
    report = json.loads((run_dir / "report.json").read_text())
    usage = next(s for s in report["sections"] if s["key"] == "usage")
    return next(b["rows"] for b in usage["blocks"] if b.get("name") == "usage")


def test_cached_judge_calls_are_counted_as_cached_and_cost_nothing(tmp_path, fresh_call_cache, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = sgi_data(tmp_path)
    replies = Replies(data)
    out = tmp_path / "runs"
    with MockOpenAI(replies=replies) as mock:
        args = [
            "ask", REQUEST, "-b", "sgi-bench", "--data-dir", str(data), "--out", str(out), "--base-url", mock.url,
            "--models", f"{A},{B}", "--judge", "openai:judge", "--temperature", "0", "--yes", *PRICES,
        ]  # fmt: skip
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
        assert replies.since(0) == {"model-a": 2, "model-b": 2, "judge": 12}
        (first,) = [p for p in out.iterdir() if p.is_dir()]

        # the same run again under --dry-run: every target answer and every judge reply is in the call cache
        res = runner.invoke(app, [*args, "--dry-run"], terminal_width=400)
        assert res.exit_code == 0, res.output
        assert len(replies.models) == 16
        lines = res.stdout.splitlines()
        est = [x.strip() for x in lines[lines.index("Estimate before any call") + 1 :]]
        assert est[0].startswith(f"{A} (target): 0 calls (+2 from the call cache), 0 input tokens, ")
        assert est[0].endswith(", 0.0000 USD")
        assert est[2].startswith("openai:judge (judge): 0 calls (+12 from the call cache), 0 input tokens, ")
        assert est[2].endswith(", 0.0000 USD")
        assert est[3] == "total: 0 calls, 0 input tokens, about 0 output tokens, 0.0000 USD"

        # the real second run: no call reaches the server, and the Cost table says 0 USD, not n/a
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
        assert len(replies.models) == 16
    # run ids of one second order by their random suffix, not by start: the second run is the folder the first is not
    (second,) = [p for p in out.iterdir() if p.is_dir() and p != first]
    rows = _usage(second)
    # model, role, calls, cached, failed, input tokens, output tokens, latency, cost (USD)
    assert [(r[0], r[1], r[2], r[3], r[8]) for r in rows] == [
        (A, "target", 0, 2, "0.0000"),
        (B, "target", 0, 2, "0.0000"),
        ("openai:judge", "judge", 0, 12, "0.0000"),
        ("*", "*", 0, 16, "0.0000"),
    ]
    # the estimate stored with the run says the same
    (stored,) = [json.loads(x) for x in (second / "estimate.jsonl").read_text().splitlines()]
    assert [(r["model"], r["calls"], r["cached_calls"], r["usd"]) for r in stored["rows"]] == [
        (A, 0, 2, 0.0),
        (B, 0, 2, 0.0),
        ("openai:judge", 0, 12, 0.0),
    ]
    res = runner.invoke(app, ["runs", "--out", str(out), "--json"])
    by_id = {e["run_id"]: e for e in json.loads(res.output)}
    assert by_id[second.name]["cost_usd"] == 0.0
