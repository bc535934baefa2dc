"""``sgieval ask ... --into RUN --judge J --dry-run`` on a finished run, through the CLI, the real graph and the
openai client against the local mock server: the dry run makes and changes nothing in the run folder (every path's
mode, size, mtime and SHA-256 the same), and its estimate counts only what the --into would call: the added judge's
pass on the stored responses, not the run's own judge (whose scores are in the run) nor its targets.  A real --into
then keeps the run's estimate and writes its own beside it, naming its invocation, and the report's estimate table
adds the two up.

The run is the one of :mod:`tests.graphs.test_into_judge` (2 SGI-Bench items, targets ``openai:model-a`` and
``openai:model-b``, judge ``openai:judge``; a judge makes 3 calls per (target, item): 2 pairwise and 1 rubric).
"""

from __future__ import annotations

import json
from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.tests.graphs.test_into_judge import _rows, served  # noqa: F401 - the fixture
from sgieval.tests.reports.test_received_runs import snapshot

runner = CliRunner()


def _estimate_block(out: str) -> list[str]:
    lines = out.splitlines()
    start = lines.index("Estimate before any call")
    return [x.strip() for x in lines[start + 1 :] if x.startswith("  ")]


def test_a_dry_run_into_writes_nothing_and_counts_only_the_added_judge(served):  # noqa: F811
    run_dir, mock, replies, into = served
    before = snapshot(run_dir)
    assert not (run_dir / "state.sqlite-wal").exists()
    (first,) = _rows(run_dir / "estimate.jsonl")

    res = runner.invoke(app, [*into, "--judge", "openai:judge2", "--dry-run"], input="y\n", terminal_width=400)
    assert res.exit_code == 0, res.output
    assert mock.stats()["served"] == 16  # no call
    # nothing in the run folder is made or changed: no estimate.jsonl or log.jsonl line, no .run.lock touched,
    # no state.sqlite-wal/-shm, no checkpoint
    assert snapshot(run_dir) == before

    block = _estimate_block(res.stdout)
    # only the added judge's pass: 4 stored (target, item) pairs x 3 calls; no row for the run's judge or targets
    assert block[0].startswith("openai:judge2 (judge): 12 calls, ")
    assert not any(x.startswith(("openai:judge (judge)", "openai:model-a", "openai:model-b")) for x in block)
    assert block[1].startswith("total: 12 calls, ") and "input tokens, about 3,000 output tokens, " in block[1]
    assert any(
        "ask --into: the 4 responses and 56 scores the run holds are reused, not asked again; the rows count only "
        "the calls this invocation makes (nothing to call for openai:model-a (target), openai:model-b (target), "
        "openai:judge (judge))" in x
        for x in block
    )

    # the real --into then adds the judge: 12 calls, as estimated; its estimate is kept beside the run's
    res = runner.invoke(app, [*into, "--judge", "openai:judge2"], input="y\n")
    assert res.exit_code == 0, res.output
    assert replies.since(16) == {"judge2": 12}
    run_est, into_est = _rows(run_dir / "estimate.jsonl")
    assert run_est == first  # the run's own estimate stays as it was
    (_, added) = _rows(run_dir / "invocations.jsonl")
    assert (into_est["invocation"], into_est["kind"]) == (added["id"], "into")
    assert [(r["model"], r["role"], r["calls"]) for r in into_est["rows"]] == [("openai:judge2", "judge", 12)]
    assert [(r["model"], r["role"], r["calls"]) for r in first["rows"]] == [
        ("openai:model-a", "target", 2),
        ("openai:model-b", "target", 2),
        ("openai:judge", "judge", 12),
    ]
    # the report's estimate table: the run's estimate and the --into's, beside what each model used
    report = json.loads((run_dir / "report.json").read_text())
    cost = next(s for s in report["sections"] if s["key"] == "usage")
    table = next(b for b in cost["blocks"] if b.get("name") == "estimate")
    assert [r[:4] for r in table["rows"]] == [
        ["openai:model-a", "target", 2, 2],
        ["openai:model-b", "target", 2, 2],
        ["openai:judge", "judge", 12, 12],
        ["openai:judge2", "judge", 12, 12],
    ]
    text = " ".join(b["text"] for b in cost["blocks"] if b.get("kind") == "text")
    assert f"the run's estimate, then the estimate of ask --into (invocation {added['id']})" in text


def test_a_dry_run_into_of_a_new_target_counts_its_calls_and_the_run_judges_on_it_only(served):  # noqa: F811
    run_dir, mock, replies, into = served
    before = snapshot(run_dir)
    res = runner.invoke(app, [*into, "--models", "openai:model-c", "--dry-run"], input="y\n", terminal_width=400)
    assert res.exit_code == 0, res.output
    assert snapshot(run_dir) == before and mock.stats()["served"] == 16
    block = _estimate_block(res.stdout)
    # the new target answers the 2 items; the run's judge scores only its 2 responses (3 calls each)
    assert block[0].startswith("openai:model-c (target): 2 calls, ")
    assert block[1].startswith("openai:judge (judge): 6 calls, ")
    assert block[2].startswith("total: 8 calls, ")
    res = runner.invoke(app, [*into, "--models", "openai:model-c"], input="y\n")
    assert res.exit_code == 0, res.output
    assert replies.since(16) == {"model-c": 2, "judge": 6}
