"""A run shows its progress on stderr (a line every SGIEVAL_PROGRESS_EVERY seconds when stderr is no terminal,
a live bar on a terminal), and the command printed after an interrupted run continues it, also after --out.

The runs are the real command (``python -m sgieval.cli``) in a subprocess against the mock OpenAI server."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from sgieval.bench.mock_openai import MockOpenAI, last_user
from sgieval.cli.progress import RunProgress, elapsed_text
from sgieval.models.accounting import Ledger

N = 10


def _data(tmp: Path) -> Path:
    d = tmp / "data" / "sfbench"
    d.mkdir(parents=True)
    with (d / "claims.jsonl").open("w") as f:
        for n in range(N):
            rec = {"id": f"K-{n:03d}", "claim": f"Claim number {n}.", "score": n % 5 - 2, "explanation": "- r"}
            f.write(json.dumps({**rec, "subdomain": "batteries", "assessment_date": "2024-01-01"}) + "\n")
    return tmp / "data"


def _reply(body, index):
    n = int(re.search(r"Claim number (\d+)", last_user(body["messages"])).group(1))
    return json.dumps({"score": n % 5 - 2, "explanation": f"- because {n}"})


def _cmd(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "sgieval.cli", *args]


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SGIEVAL_DATA"}
    return {**env, "SGIEVAL_CACHE_DIR": str(tmp / "cache"), "OPENAI_API_KEY": "test", "PYTHONUNBUFFERED": "1", **extra}


def _ask(data: Path, url: str, *extra: str) -> list[str]:
    return _cmd(
        ["ask", "", "-b", "sfbench", "--data-dir", str(data), "-m", "openai:mock", "--base-url", url, "--yes", *extra]
    )


LINE = re.compile(
    r"^progress: (starting|evaluating|finishing \(corpus-level scores, report\)), (\d+)/(\d+|\?) \(item, target "
    r"model\) pairs done, (\d+) model calls, (\d+) failed, (\d+:\d\d:\d\d) elapsed$"
)


@pytest.mark.slow
def test_progress_lines_when_stderr_is_no_terminal(tmp_path):
    data = _data(tmp_path)

    def faults(index, body):  # claim 4 is refused with HTTP 400 (never retried): one failed call
        return "400" if "Claim number 4." in last_user(body["messages"]) else None

    with MockOpenAI(replies=_reply, latency_ms=120, faults=faults) as mock:
        res = subprocess.run(
            _ask(data, mock.url, "--out", str(tmp_path / "runs"), "--max-concurrency", "1", "--no-cache"),
            env=_env(tmp_path, SGIEVAL_PROGRESS_EVERY="0.25"),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("progress: ")]
    got = [LINE.match(ln) for ln in lines]
    assert lines and all(got), lines
    done = [int(m.group(2)) for m in got if m.group(3) != "?"]
    assert done == sorted(done) and any(0 < d < N for d in done)  # seen mid-run, never going back
    assert all(m.group(3) in ("10", "?") for m in got)
    mid = [m for m in got if m.group(1) == "evaluating" and int(m.group(2)) > 0]
    # one target call per finished pair (max-concurrency 1: at most one more in flight)
    assert all(int(m.group(2)) <= int(m.group(4)) <= int(m.group(2)) + 1 for m in mid), lines
    last = got[-1]
    assert (last.group(1), last.group(2), last.group(4), last.group(5)) == (
        "finishing (corpus-level scores, report)",
        "10",
        "10",
        "1",
    )


def test_progress_lines_every_interval_and_none_at_zero():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=300)
    ledger = Ledger()
    with RunProgress(console, lambda: ledger, every_s=0.05) as progress:
        progress.update(2, 4)
        ledger.record("openai:gpt-4o", "target", usage={"input": 1, "output": 1})
        time.sleep(0.3)
    lines = buf.getvalue().splitlines()
    assert len(lines) >= 2 and all(LINE.match(ln) for ln in lines), lines
    assert lines[-1].startswith("progress: evaluating, 2/4 (item, target model) pairs done, 1 model calls, 0 failed")
    buf = io.StringIO()
    with RunProgress(Console(file=buf, force_terminal=False), lambda: ledger, every_s=0) as progress:
        progress.update(2, 4)
        time.sleep(0.2)
    assert buf.getvalue() == ""


def test_a_last_line_with_the_final_counts_when_the_run_ends_between_two_intervals():
    buf = io.StringIO()
    ledger = Ledger()
    with RunProgress(Console(file=buf, force_terminal=False, width=300), lambda: ledger, every_s=0.1) as progress:
        progress.update(1, 3)
        time.sleep(0.35)  # lines at about 0.1, 0.2, 0.3 s
        progress.update(3, 3)
        ledger.record("openai:gpt-4o", "target", usage={"input": 1, "output": 1})
        ledger.record("openai:gpt-4o", "target", error="HTTP 400")
    lines = buf.getvalue().splitlines()
    assert len(lines) >= 2 and lines[0].startswith("progress: evaluating, 1/3 "), lines
    assert lines[-1].startswith(
        "progress: finishing (corpus-level scores, report), 3/3 (item, target model) pairs done, 2 model calls, "
        "1 failed, 0:00:00 elapsed"
    ), lines
    # a run that ends before the first interval stays silent
    buf = io.StringIO()
    with RunProgress(Console(file=buf, force_terminal=False), lambda: ledger, every_s=5) as progress:
        progress.update(3, 3)
    assert buf.getvalue() == ""


def test_live_bar_on_a_terminal():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=160)
    ledger = Ledger()
    with RunProgress(console, lambda: ledger) as progress:
        ledger.record("openai:gpt-4o", "target", usage={"input": 1, "output": 1})
        ledger.record("openai:gpt-4o", "target", error="HTTP 500")
        ledger.record("openai:gpt-4o", "judge", cached=True)  # a cache hit is no call
        progress.update(3, 10)
        progress.bar.refresh()
        assert progress.line().startswith("progress: evaluating, 3/10 (item, target model) pairs done, 2 model ")
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buf.getvalue())
    assert re.search(r"evaluating .*3/10 pairs 2 model calls, 1 failed 0:00:0\d", shown), shown
    assert (elapsed_text(0), elapsed_text(3725.9)) == ("0:00:00", "1:02:05")


def _interrupt_then_continue(tmp_path: Path, cwd: Path, out_args: list[str]) -> tuple[str, subprocess.CompletedProcess]:
    """Start a run, interrupt it (SIGINT) while a call is in flight, then run the command it printed, as
    printed, from the same folder.  Returns (that command, its result)."""
    data = _data(tmp_path)
    with MockOpenAI(replies=_reply) as mock:
        mock.hold_at(3)  # 3 calls answered, the 4th waits at the gate
        proc = subprocess.Popen(
            _ask(data, mock.url, *out_args, "--max-concurrency", "1"),
            cwd=cwd,
            env=_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # Ctrl-C as in a terminal: a parent that ignores SIGINT (a background job of a non-interactive shell,
            # `cmd &` in a script) passes the ignoring on through exec, and Python then leaves it ignored
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + 120
        while not (mock.passed() == 3 and mock.stats()["requests"] >= 4):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        # as long as the run may take to reach its 4th call (a loaded CI machine ran 3 calls in 50 s)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        (line,) = [ln for ln in err.splitlines() if ln.startswith("interrupted")]
        hint = re.fullmatch(r"interrupted; every finished response and score is kept: continue with `(.+)`", line)
        assert hint, line
        argv = shlex.split(hint.group(1))
        assert argv[:2] == ["sgieval", "resume"]
        mock.release()
        res = subprocess.run(_cmd(argv[1:]), cwd=cwd, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
        assert mock.stats()["served"] == N  # each claim asked once over both: nothing written is asked again
    return hint.group(1), res


@pytest.mark.slow
def test_hint_after_interrupt_with_out_continues_the_run(tmp_path):
    cwd = tmp_path / "work"
    cwd.mkdir()
    out = tmp_path / "elsewhere" / "my runs"
    hint, res = _interrupt_then_continue(tmp_path, cwd, ["--out", str(out)])
    (run,) = out.iterdir()
    assert hint == f"sgieval resume {shlex.quote(str(run))}"  # the folder: the id alone would be looked for in runs/
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"report: {run / 'report.md'}\n"
    assert len((run / "responses.jsonl").read_text().splitlines()) == N


@pytest.mark.slow
def test_hint_after_interrupt_in_default_runs_folder_is_the_id(tmp_path):
    cwd = tmp_path / "work"
    cwd.mkdir()
    hint, res = _interrupt_then_continue(tmp_path, cwd, [])
    (run,) = (cwd / "runs").iterdir()
    assert hint == f"sgieval resume {run.name}"
    assert res.returncode == 0, res.stderr
    assert len((run / "responses.jsonl").read_text().splitlines()) == N
