"""One run folder, one writer (concurrent runs): while a process runs a run, another `sgieval` neither
repairs nor appends to its files; `sgieval runs` lists it as running; the lock ends with the process, SIGKILL
included."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sgieval.core import RUN_LOCK, InputError, RunStore, run_holder

HOLD = """
import sys, time
from sgieval.core import RunStore
s = RunStore(sys.argv[1]); s.hold()
print("held", flush=True)
time.sleep(120)
"""


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sgieval.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def _holder(run: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(run)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    res = _cli("ask", "Which model is the most creative in chemistry?", "--yes", "--out", str(out), cwd=out)
    assert res.returncode == 0, res.stderr
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    return run


@pytest.mark.slow
def test_a_run_held_by_another_process_is_left_alone_and_listed_as_running(finished_run):
    run = finished_run
    torn = run / "responses.jsonl"
    proc = _holder(run)
    try:
        torn.write_bytes(torn.read_bytes() + b'{"item_id": "half a rec')  # the holder is writing a record
        before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file() and p.name != "log.jsonl"}
        assert run_holder(run) == proc.pid
        listed = _cli("runs", "--out", str(run.parent), cwd=run.parent)
        # lines, the torn one too; 150 responses (25 chemistry items x 6 target models) x 6 per-item AidanBench
        # scores + 6 models x 4 corpus-level scores = 924
        assert f"{run.name} running (pid {proc.pid}) responses=151 scores=924" in " ".join(listed.stdout.split())
        line = (
            f"error: {run}: the run folder is in use by another sgieval process (pid {proc.pid}). Fix: wait "
            "until that run ends (`sgieval runs` lists it as running), or stop it first"
        )
        for cmd in (["resume", run.name], ["report", run.name]):
            res = _cli(*cmd, "--out", str(run.parent), cwd=run.parent)
            assert res.returncode == 2 and res.stderr.strip().splitlines()[-1] == line, (cmd, res.stderr)
        with pytest.raises(InputError, match=rf"in use by another sgieval process \(pid {proc.pid}\)"):
            RunStore(run)
        after = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file() and p.name != "log.jsonl"}
        assert after == before  # the torn line was not "repaired" under the writer's feet, nothing appended
    finally:
        proc.kill()
        proc.wait()
    # SIGKILL released the lock: the folder is usable again (and its torn line repaired on open)
    assert run_holder(run) is None
    RunStore(run).close()
    assert not torn.read_bytes().endswith(b"half a rec")
    res = _cli("report", run.name, "--out", str(run.parent), cwd=run.parent)
    assert res.returncode == 0, res.stderr
    listed = _cli("runs", "--out", str(run.parent), cwd=run.parent).stdout
    assert f"{run.name} complete responses=150 scores=924" in " ".join(listed.split())


def test_the_lock_is_this_processes_own_and_ends_with_close(tmp_path):
    a = RunStore(tmp_path / "r")
    a.hold()
    assert (tmp_path / "r" / RUN_LOCK).read_text() == str(os.getpid())
    assert run_holder(tmp_path / "r") is None  # our own run: not "another process"
    b = RunStore(tmp_path / "r")  # this process may open its own run again (reads, the report)
    b.close()
    a.close()
    proc = _holder(tmp_path / "r")  # released: another process can take it now
    try:
        assert run_holder(tmp_path / "r") == proc.pid
        with pytest.raises(InputError, match="in use by another sgieval process"):
            RunStore(tmp_path / "r").hold()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 5
    while run_holder(tmp_path / "r") is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert run_holder(tmp_path / "r") is None
