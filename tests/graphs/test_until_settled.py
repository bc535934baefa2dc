"""``--until-settled`` through the real graph, against the project's OpenAI-compatible mock server: a benchmark of
300 questions with a clear leader stops early, reports the items used, the calls saved and the intervals, and a
resumed run (its graph state gone, or killed with SIGKILL twice: ``--slow``) stops at the same item."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import sgieval
from sgieval.agents.settle import chunk_size, settle_order
from sgieval.bench.mock_openai import MockOpenAI, last_user
from sgieval.cli import app
from sgieval.core import InputError, RunStore

N = 300
ACCURACY = {"strong": 0.9, "mid": 0.55, "weak": 0.45}
RIGHT = {m: np.random.default_rng(k).random(N) < p for k, (m, p) in enumerate(ACCURACY.items())}
MODELS = [f"openai:{m}" for m in ACCURACY]


def _reply(body, index):
    n = int(re.search(r"Question (\d+):", last_user(body["messages"])).group(1))
    return "Tesla" if RIGHT[body["model"]][n] else "Gauss"


@pytest.fixture
def bench(tmp_path):
    rows = [
        {"id": str(n), "prompt": f"Question {n}: who is the unit of flux density named after?", "reference": "Tesla"}
        for n in range(N)
    ]
    (tmp_path / "units.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "units.jsonl"


def _run(bench, mock, out, run_id):
    return sgieval.evaluate(
        "Which model is most accurate?",
        benchmark=str(bench),
        models=MODELS,
        base_url=mock.url,
        out_dir=out,
        run_id=run_id,
        until_settled=True,
        use_cache=False,
        bootstrap_resamples=199,
    )


def test_a_clear_leader_stops_the_run_early_with_items_used_and_calls_saved(bench, tmp_path):
    with MockOpenAI(replies=_reply) as mock:
        run = _run(bench, mock, tmp_path / "runs", "settle")
        served = mock.stats()["served"]
    rec = run.state["evaluated"]["settled"]
    used = rec["items_used"]
    chunk = chunk_size(N, 3, 16)  # 2 x 16 calls in flight over 3 targets: 11 items per chunk
    assert chunk == 11 and rec["chunk"] == 11
    assert rec["settled"] and rec["leader"] == "openai:strong"
    assert used < N and used % chunk == 0  # stopped early, at a chunk's end
    # every target answered exactly the first `used` items of the seeded order, one call each, nothing else
    assert len(run.items) == N
    order = [i.id for i in settle_order(run.items, 0)]
    assert rec["item_ids"] == order[:used]
    assert served == 3 * used == len(run.responses) == rec["calls"]
    assert {r.item_id for r in run.responses} == set(order[:used])
    assert rec["units_saved"] == 3 * (N - used) and rec["calls_saved"] == 3 * (N - used)
    # the intervals: the leader's two comparisons lie above 0, each the difference of accuracies on the used items
    got = {c["model"]: c for c in rec["comparisons"]}
    for other in ("openai:mid", "openai:weak"):
        c = got[other]
        diff = np.mean(
            [
                RIGHT["strong"][int(i.split("/")[-1])] * 1.0 - RIGHT[other.split(":")[1]][int(i.split("/")[-1])]
                for i in order[:used]
            ]
        )
        assert c["n"] == used and c["mean"] == pytest.approx(diff) and 0 < c["low"] <= c["mean"] <= c["high"]
    text = run.report.read_text()
    assert "## Stopped when settled" in text
    assert f"The run stopped after {used} of the {N} selected items" in text
    assert f"Not evaluated: {3 * (N - used)} (target, item) pairs" in text
    assert f"about {3 * (N - used)} model calls were saved" in text
    run_table = text.split("## Run", 1)[1].split("\n## ", 1)[0]
    assert f"(selected {N} items;" in run_table
    assert f"| until settled | {used} of the {N} selected items used (the ranking settled) |" in run_table
    assert f"| openai:strong | {np.mean([RIGHT['strong'][int(i.split('/')[-1])] for i in order[:used]]):.2f} |" in text
    print(f"until-settled: stopped after {used} of {N} items, {served} calls, {3 * (N - used)} saved")


def test_a_resumed_run_stops_at_the_same_item(bench, tmp_path):
    with MockOpenAI(replies=_reply) as mock:
        ref = _run(bench, mock, tmp_path / "ref", "ref")
        ref_used = ref.state["evaluated"]["settled"]["items_used"]
        # a run killed half-way: half of its records kept, its graph state gone
        run_dir = tmp_path / "killed" / "ref"
        shutil.copytree(ref.run_dir, run_dir)
        for name in ("responses", "scores"):
            lines = (run_dir / f"{name}.jsonl").read_text().splitlines(keepends=True)
            (run_dir / f"{name}.jsonl").write_text("".join(lines[: len(lines) // 2]))
        kept = len((run_dir / "responses.jsonl").read_text().splitlines())
        for f in run_dir.glob("state.sqlite*"):
            f.unlink()
        (run_dir / "report.md").unlink()
        before = mock.stats()["served"]
        res = CliRunner().invoke(app, ["resume", str(run_dir), "--yes"])
        assert res.exit_code == 0, res.output
        served = mock.stats()["served"] - before
    got = sgieval.load_run(run_dir).state["evaluated"]["settled"]
    assert got["items_used"] == ref_used and got["item_ids"] == ref.state["evaluated"]["settled"]["item_ids"]
    assert served == 3 * ref_used - kept  # only the missing responses were asked for
    assert len(RunStore(run_dir).read("responses")) == 3 * ref_used


def test_until_settled_refuses_an_unbounded_or_corpus_metric_and_one_target(bench, tmp_path):
    with MockOpenAI(replies=_reply) as mock:
        with pytest.raises(InputError, match="two or more target models"):
            sgieval.evaluate(
                benchmark=str(bench), models=MODELS[:1], base_url=mock.url, out_dir=tmp_path, until_settled=True
            )
        assert mock.stats()["served"] == 0
    # SciAidanBench's ranking metric counts accepted answers: no upper bound, so no confidence sequence
    with pytest.raises(InputError, match=r"bounded ranking metric.*aidan_accepted_answers has the range \[0, inf\]"):
        sgieval.evaluate(
            "Which model is the most creative in chemistry?",
            models="replay:o1-mini,replay:phi4",
            out_dir=tmp_path,
            until_settled=True,
        )


def _cli(args, cache, log: Path | None = None):
    """The ``sgieval`` command in a process of its own; its stderr goes to ``log`` (appended) when given."""
    env = {**os.environ, "SGIEVAL_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1"}
    err = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115 (the child holds it)
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("sgieval")), *args], env=env, stdout=subprocess.DEVNULL, stderr=err
    )


def _wait(cond, what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.mark.slow
def test_sigkill_twice_then_resume_stops_at_the_same_item(bench, tmp_path):
    with MockOpenAI(replies=_reply) as mock:
        ref = _run(bench, mock, tmp_path / "ref", "ref")
    want = ref.state["evaluated"]["settled"]
    out, cache = tmp_path / "out", tmp_path / "cache"
    ask = ["ask", "Which model is most accurate?", "-b", str(bench), "-m", ",".join(MODELS), "--until-settled"]
    ask += ["--yes", "--out", str(out)]
    with MockOpenAI(replies=_reply, latency_ms=10) as mock:
        proc = _cli([*ask, "--base-url", mock.url, "--bootstrap-resamples", "199"], cache)
        run_dir = None
        for k in (20, 3 * want["items_used"] - 25):  # in the first chunks, then in the chunk before the stop
            mock.hold_at(k)
            _wait(lambda: mock.stats()["served"] >= k or proc.poll() is not None, f"{k} served calls")
            assert proc.poll() is None, f"run exited (rc {proc.returncode}) before the kill at {k} served calls"
            mock.hold()
            _wait(lambda: mock.passed() == mock.stats()["served"], "the calls past the gate to be answered")
            time.sleep(1.0)  # the call cache commits a reply within 0.2 s
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(timeout=30) == -signal.SIGKILL
            mock.release()
            run_dir = run_dir or next(p for p in out.iterdir() if (p / "config.json").is_file())
            proc = _cli(["resume", str(run_dir), "--yes"], cache, log=tmp_path / "resume.log")
        assert proc.wait(timeout=300) == 0, (tmp_path / "resume.log").read_text()[-3000:]
        served = mock.stats()["served"]
    got = sgieval.load_run(run_dir).state["evaluated"]["settled"]
    assert got["items_used"] == want["items_used"] and got["item_ids"] == want["item_ids"]
    assert got["comparisons"] == want["comparisons"] and got["settled"] and got["leader"] == "openai:strong"
    assert served == 3 * want["items_used"]  # each response asked for once, none past the stop
    assert len(RunStore(run_dir).read("responses")) == 3 * want["items_used"]


def test_a_dry_run_refuses_an_until_settled_run_that_cannot_stop_and_names_the_option_once(tmp_path):
    """``--dry-run --until-settled`` with an unbounded ranking metric stops as the run would, before any call,
    rather than estimating a run that stops at its first step; the error names the option once as its subject
    ("--until-settled: it needs ..."), not twice."""
    from sgieval.cli import app

    args = ["ask", "Which model is the most creative in chemistry?", "--models", "replay:o1-mini,replay:phi4"]
    args += ["--until-settled", "--out", str(tmp_path), "--dry-run"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())
    assert "--until-settled: it needs a bounded ranking metric" in out, out
    assert "aidan_accepted_answers has the range [0, inf]" in out
    assert out.count("--until-settled") == 2  # the subject, and the fix: leave out --until-settled
    assert "Estimate before any call" not in out
