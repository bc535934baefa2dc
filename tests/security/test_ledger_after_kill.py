"""The ledger counts every call whose request went out, also when the process is killed before the call's
record is written.

The probe: calls in flight at a kill were missing from the cost ledger (384 requests served, 320
recorded).  Here the real CLI runs against the mock server; the server holds the requests that arrive after
the first ones (they wait at its gate, sent and unanswered), the process is SIGKILLed, and the run is
resumed: the ledger's calls equal the requests the server received, the held ones as interrupted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core import RunStore
from sgieval.models.accounting import INTERRUPTED, Ledger

N = 6


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OPENAI_API_KEY="sk-test-ledger-kill-0000",
        XDG_STATE_HOME=str(tmp_path / "state"),
        SGIEVAL_CACHE_DIR=str(tmp_path / "cache"),
    )
    env.pop("OPENAI_BASE_URL", None)
    return env


def _cli(tmp_path: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "sgieval.cli", *args],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait(cond, what: str, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def _answer(body, i):
    q = body["messages"][-1]["content"]
    return f"<answer>{2 * int(q.split('What is ', 1)[1].split(' ', 1)[0])}</answer>"


def _rows(run: Path, name: str) -> list[dict]:
    p = run / f"{name}.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines() if x.strip()] if p.exists() else []


def test_recover_counts_each_unrecorded_call_once():
    led = Ledger()
    sent: list[dict] = []
    led.on_send = sent.append
    a, b = led.begin("m", "target"), led.begin("m", "judge")
    led.record("m", "target", usage={"input": 3, "output": 2}, call_id=a)
    (rec,) = led.recover(sent)  # b went out and was never recorded
    assert (rec.call_id, rec.role, rec.interrupted, rec.error, rec.cost) == (b, "judge", True, INTERRUPTED, None)
    assert led.recover(sent) == [] and led.total().calls == 2 and led.total().failed_calls == 1


@pytest.mark.slow
def test_calls_in_flight_at_a_sigkill_are_in_the_ledger(tmp_path):
    bench = tmp_path / "qa.jsonl"
    bench.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "prompt": f"What is {i} + {i}?", "reference": str(2 * i)}) + "\n"
            for i in range(N)
        )
    )
    out = tmp_path / "runs"
    with MockOpenAI(replies=_answer, latency_ms=10) as mock:
        mock.hold_at(2)  # two calls answered; the ones after wait at the server's gate, sent and unanswered
        args = ["-m", "openai:mock", "--base-url", mock.url, "--tools", "", "--yes", "--no-cache", "--out", str(out)]
        proc = _cli(tmp_path, "ask", "", "-b", str(bench), "--max-concurrency", "3", *args)
        _wait(lambda: mock.stats()["requests"] >= 5, "3 requests held at the gate")
        _wait(lambda: any(out.glob("*/ledger.jsonl")) and len(_rows(next(out.iterdir()), "ledger")) == 2, "2 records")
        run = next(out.iterdir())
        assert len(_rows(run, "inflight")) == 5 and len(_rows(run, "ledger")) == 2
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
        mock.release()  # the held requests are dropped: their client is gone
        res = _cli(tmp_path, "resume", str(run), "--yes", "--out", str(out))
        assert res.wait(timeout=120) == 0, res.stderr.read()
        received = mock.stats()["requests"]
        served = mock.stats()["served"]
    rows = RunStore(run).read_rows("ledger")
    made = [r for r in rows if not r["cached"]]
    assert received == 2 + 3 + (N - 2) and served == N  # resume asked only the 4 items without a response
    assert len(made) == received  # every request the server received is one call in the ledger
    interrupted = [r for r in made if r["interrupted"]]
    assert len(interrupted) == 3 and all(r["error"] == INTERRUPTED and r["cost"] is None for r in interrupted)
    assert sum(1 for r in made if r["error"] is None) == N
    # a second resume of the finished run adds nothing and counts nothing twice
    res = _cli(tmp_path, "resume", str(run), "--yes", "--out", str(out))
    assert res.wait(timeout=120) == 0
    assert len(RunStore(run).read_rows("ledger")) == len(rows)
    report = " ".join((run / "report.md").read_text().split())
    assert (
        "3 call(s) were interrupted: the process ended after their requests were sent and before their replies "
        "were recorded. They are counted as failed; their tokens and cost are unknown and not in the totals"
    ) in report
