"""The warm report worker (core.offload): same numbers in another process, never an orphan.

Timing belongs to ``python -m sgieval.bench.e2e``; these tests check that the
worker computes exactly what the calling process would, that a dead worker
is not an error, that the worker is bound to its block only, and that
SIGKILL of ``sgieval`` leaves no worker behind.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sgieval.core.offload import call_in_worker, submit_to_worker, warm_worker, worker_active
from sgieval.metric_pool.stats import Summary, paired_test, summarize


def _pid() -> int:
    return os.getpid()


def _boom(x: int) -> int:
    raise ValueError(f"bad value {x}")


A = {"q1": 1.0, "q2": 2.0, "q3": 3.0, "q4": 5.0}
B = {"q1": 1.0, "q2": 1.0, "q3": 2.0, "q4": 2.0}


def test_calls_run_in_the_worker_with_the_same_results():
    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    here = summarize(values, n_resamples=999, seed=7)
    pair_here = paired_test(A, B, n_resamples=999, seed=7)
    assert not worker_active()
    with warm_worker(("scipy.stats",)) as pool:
        assert pool is not None and worker_active()
        worker_pid = call_in_worker(_pid)
        there = call_in_worker(summarize, values, n_resamples=999, seed=7)
        pair_there = call_in_worker(paired_test, A, B, n_resamples=999, seed=7)
        with pytest.raises(ValueError, match="bad value 3"):  # an exception reaches the caller unchanged
            call_in_worker(_boom, 3)
    assert worker_pid != os.getpid()
    assert isinstance(there, Summary) and there == here  # n, mean, total, std, CI bounds: all equal
    assert pair_there == pair_here
    assert here.mean == 3.875 and here.total == 31.0
    assert not worker_active() and call_in_worker(_pid) == os.getpid()  # after the block: in-process again


def test_a_dead_worker_makes_the_call_run_here():
    with warm_worker(()) as pool:
        worker_pid = call_in_worker(_pid)
        os.kill(worker_pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # wait until the pool has noticed
            try:
                os.kill(worker_pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        time.sleep(0.2)
        assert pool is not None
        assert call_in_worker(_pid) == os.getpid()
        assert call_in_worker(summarize, [1.0, 0.0, 1.0, 1.0]).mean == 0.75


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        out.update(int(t) for t in text)
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigkill_of_sgieval_leaves_no_worker_behind(tmp_path):
    # the main job pauses at the metric confirmation (no --yes, stdin kept open): the worker is alive then
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sgieval.cli",
            "ask",
            "Which model is the most creative in chemistry?",
            "--out",
            str(tmp_path / "runs"),
        ],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        workers: set[int] = set()
        while time.monotonic() < deadline and not workers:
            workers = _children(proc.pid)
            time.sleep(0.1)
        assert len(workers) == 1, "the ask command forks one warm worker"
        (worker,) = workers
        cmdline = Path(f"/proc/{worker}/cmdline").read_bytes()
        assert b"sgieval.cli" in cmdline  # a fork of the command itself
    finally:
        proc.kill()
        proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            break
        try:  # a zombie reaped by init counts as gone
            if Path(f"/proc/{worker}/stat").read_text().split(") ")[1].startswith("Z"):
                break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        os.kill(worker, signal.SIGKILL)
        pytest.fail("the warm worker outlived its SIGKILLed parent")


def _stable(report: str) -> str:
    """report.md without what differs between two runs of the same request (run id, times, paths)."""
    report = re.sub(r"\d{8}-\d{6}-[\w-]+", "<run>", report)
    report = re.sub(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(\+00:00|Z)?", "<time>", report)
    return re.sub(r"\d+(\.\d+)? s\b", "<s>", report)


@pytest.mark.slow
def test_the_command_with_its_worker_writes_the_same_report_as_the_api(tmp_path):
    """The console script (warm worker: bootstrap CIs, paired tests and the chart computed in the
    worker) and the in-process app (no worker) give the same report, number for number."""
    request = "Which model is the most creative in chemistry?"
    res = subprocess.run(
        [sys.executable, "-m", "sgieval.cli", "ask", request, "--yes", "--out", "console"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    code = (
        f"from sgieval.cli import app\nimport sys\ntry:\n    app(['ask', {request!r}, '--yes', '--out', 'inproc'])\n"
        "except SystemExit as e:\n    sys.exit(e.code)\n"
    )
    res2 = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res2.returncode == 0, res2.stderr
    (a,) = (tmp_path / "console").iterdir()
    (b,) = (tmp_path / "inproc").iterdir()
    ra, rb = (a / "report.md").read_text(), (b / "report.md").read_text()
    assert "| 1 | replay:o1-mini | 11.84 | 7.80 to 17.52 | 296 | 25 | 0 |" in ra
    assert _stable(ra) == _stable(rb)
    assert (a / "figures" / "ranking.png").stat().st_size > 10_000
    assert (a / "figures" / "ranking.png").read_bytes() == (b / "figures" / "ranking.png").read_bytes()


def test_the_worker_runs_numpy_on_one_blas_thread_unless_the_user_chose(tmp_path):
    """The worker imports numpy while the run imports LangGraph: a BLAS pool of one thread per core took
    CPU from the run before its first model call.  The worker sets the pool sizes to 1 before numpy loads,
    keeps a size the user set, and leaves the run's own process alone.  A fresh interpreter, so numpy is not
    loaded before the fork (as in the ``sgieval`` command)."""
    code = """
import json, os
os.environ.pop("OPENBLAS_NUM_THREADS", None)
os.environ.pop("MKL_NUM_THREADS", None)
os.environ["OMP_NUM_THREADS"] = "2"
from sgieval.core.offload import call_in_worker, warm_worker

def blas():
    from threadpoolctl import threadpool_info
    return sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"})

def env():
    return [os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")]

with warm_worker(("numpy",)):
    there = [call_in_worker(env), call_in_worker(blas)]
print(json.dumps({"worker": there, "here": env()}))
"""
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    got = __import__("json").loads(res.stdout.strip().splitlines()[-1])
    assert got == {"worker": [["1", "1", "2"], [1]], "here": [None, None, "2"]}


def _touch_after(path: str, marker: str) -> str:
    Path(path).write_text(marker)
    return marker


def test_submit_starts_the_work_in_the_worker_before_its_result_is_asked(tmp_path):
    """``submit`` hands the function to the worker at once (the report draws its chart while it builds
    its tables); without a worker it runs only when its result is asked, here."""
    started = tmp_path / "started"
    with warm_worker(()):
        result = submit_to_worker(_touch_after, str(started), "in the worker")
        deadline = time.monotonic() + 30
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert started.read_text() == "in the worker"  # before result() was called
        assert result() == "in the worker"
    started.unlink()
    later = submit_to_worker(_touch_after, str(started), "here")
    assert not started.exists()
    assert later() == "here" and started.read_text() == "here"
    with warm_worker(()):
        failing = submit_to_worker(_boom, 4)
        with pytest.raises(ValueError, match="bad value 4"):
            failing()
