"""A run killed with SIGKILL half-way and resumed gives the same report as an
uninterrupted one, and recomputes nothing already written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

REQUEST = "Which model is the most creative?"


def _cli(*args: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "sgieval.cli", *args, "--out", str(out)]


def _report_body(path: Path) -> str:
    # the run id is the only line that differs between two runs of the same request
    return "\n".join(line for line in path.read_text().splitlines() if not line.startswith("| run id |"))


@pytest.mark.slow
def test_sigkill_half_way_then_resume_equals_uninterrupted(tmp_path):
    killed_out, clean_out = tmp_path / "killed", tmp_path / "clean"
    proc = subprocess.Popen(
        _cli("ask", REQUEST, "--yes", "--max-concurrency", "1", out=killed_out),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    total = 155 * 6
    responses = None
    deadline = time.time() + 240
    # the run goes on in 10 ms slices between SIGCONT and SIGSTOP and is looked at while stopped: a replay run
    # writes all 930 responses in well under a second, so a poller that is not scheduled for a moment (a loaded
    # machine) would otherwise find the run already finished
    try:
        while time.time() < deadline and proc.poll() is None:
            os.kill(proc.pid, signal.SIGSTOP)
            found = list(killed_out.glob("*/responses.jsonl"))
            if found and len(found[0].read_text().splitlines()) >= total // 3:
                responses = found[0]
                break
            os.kill(proc.pid, signal.SIGCONT)
            time.sleep(0.01)
    finally:
        if responses is None:
            proc.kill()
    assert responses is not None, "the run never got a third of the way"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    run_dir = responses.parent
    before = responses.read_text().splitlines()
    assert total // 3 <= len(before) < total  # killed half-way, not after the end
    assert not (run_dir / "report.md").exists()

    res = subprocess.run(_cli("resume", run_dir.name, out=killed_out), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    after = responses.read_text().splitlines()
    # nothing already written was recomputed: the old lines are an untouched prefix, no key twice
    assert after[: len(before) - 1] == before[: len(before) - 1]
    keys = Counter(line.split('"model":')[0] + line.split('"model":')[1].split(",")[0] for line in after)
    assert len(after) == total and max(keys.values()) == 1
    score_lines = (run_dir / "scores.jsonl").read_text().splitlines()
    # 6 per-question metrics per (item, model) and 4 corpus-level (pooled) ones per model, each once
    assert len(score_lines) == total * 6 + 6 * 4

    res = subprocess.run(_cli("ask", REQUEST, "--yes", out=clean_out), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    (clean_report,) = clean_out.glob("*/report.md")
    assert _report_body(run_dir / "report.md") == _report_body(clean_report)
