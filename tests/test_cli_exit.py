"""The command line ends promptly after its last write, without losing one.

``app()`` with no arguments (the console script, ``python -m sgieval.cli``) runs
the threads' and ``atexit`` clean-ups, fsyncs the run's records, flushes
stdout/stderr, then ends the process without the interpreter's module
teardown.  Timing belongs to ``python -m sgieval.bench.e2e``; these tests check
that nothing written is lost and that the teardown is what is skipped.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core import RunStore


def test_entry_point_runs_atexit_and_flushes_but_skips_teardown(tmp_path):
    code = """
import atexit, sys
class Teardown:
    def __del__(self):
        print("module teardown ran")
keep = Teardown()
atexit.register(lambda: print("atexit ran"))
print("unflushed line", end="")
sys.argv = ["sgieval", "runs", "--out", "nowhere"]
from sgieval.cli import app
app()
print("not reached")
"""
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "unflushed lineno runs in nowhere\natexit ran\n"


def test_entry_point_exit_codes_and_messages_survive(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "sgieval.cli", "ask", "x", "--k", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2
    assert "--k: must be a positive integer" in res.stderr


def test_a_run_ended_by_the_entry_point_keeps_every_record_and_cached_call(tmp_path):
    bench = tmp_path / "qa.jsonl"
    bench.write_text(
        "".join(json.dumps({"id": f"q{n}", "prompt": f"Question {n}", "reference": "a"}) + "\n" for n in range(20))
    )
    env = {**os.environ, "SGIEVAL_CACHE_DIR": str(tmp_path / "cache")}
    with MockOpenAI(replies=lambda body, i: "<answer>a</answer>") as mock:
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "sgieval.cli",
                "ask",
                "",
                "-b",
                str(bench),
                "-m",
                "openai:mock",
                "--base-url",
                mock.url,
                "--out",
                str(tmp_path / "runs"),
                "--yes",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        served = mock.stats()["served"]
    assert res.returncode == 0, res.stderr
    assert served == 20 and res.stdout.startswith("report: ")
    (run,) = (tmp_path / "runs").iterdir()
    store = RunStore(run)
    assert len(store.read("responses")) == 20
    assert len([s for s in store.read("scores") if s.item_id != "*"]) == 40  # exact_match + normalised
    assert len(store.read_rows("ledger")) == 20
    assert (run / "report.md").read_text().startswith("# ")
    with sqlite3.connect(tmp_path / "cache" / "calls.sqlite") as db:  # the last batch was committed at exit
        assert db.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 20
