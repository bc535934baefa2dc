"""The console script's start-up context (core.startup): the collector paused from the command's start to its
run, then frozen and enabled again before the first model call; the warm worker bound for the command; the
prompt exit; never any of it for the Python API or ``app([...])``, for commands that do not run an evaluation,
or with ``SGIEVAL_FAST_START=0``.  Timings belong to ``python -m sgieval.bench.e2e``.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import pytest

from sgieval.core import offload
from sgieval.core.startup import YOUNG_THRESHOLD, ConsoleProcess, exit_status


@pytest.fixture
def collector():
    """Leave the collector as found (enabled, nothing frozen, default threshold) whatever the test did."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.enable()
    gc.set_threshold(*threshold)


def test_a_heavy_command_pauses_the_collector_and_binds_a_worker_until_its_run_begins(collector):
    gc.unfreeze()
    with ConsoleProcess(heavy=True, enabled=True) as p:
        assert not gc.isenabled() and p.paused and offload.worker_active()
        keep = [object() for _ in range(10)]  # alive when the run begins: frozen
        p.run_begins()
        assert gc.isenabled() and gc.get_threshold()[0] == YOUNG_THRESHOLD
        frozen = gc.get_freeze_count()
        assert frozen >= 1000  # this interpreter's modules, classes, functions
        p.run_begins()  # idempotent: no second freeze (the count only falls as frozen objects are freed)
        assert gc.get_freeze_count() <= frozen
        del keep
    assert not offload.worker_active()  # the worker is bound for the block only


@pytest.mark.parametrize("heavy, enabled", [(False, True), (True, False)])
def test_other_commands_and_the_switch_leave_the_process_alone(collector, heavy, enabled):
    gc.unfreeze()
    with ConsoleProcess(heavy=heavy, enabled=enabled) as p:
        assert gc.isenabled() and not p.paused and not offload.worker_active()
        p.run_begins()
    assert gc.get_freeze_count() == 0


def test_a_host_that_disabled_the_collector_keeps_it_disabled(collector):
    gc.disable()
    gc.unfreeze()
    with ConsoleProcess(heavy=True, enabled=True) as p:
        p.run_begins()
        assert not p.paused and not gc.isenabled() and gc.get_freeze_count() == 0


def test_the_setting_switches_it_off(monkeypatch):
    monkeypatch.setenv("SGIEVAL_FAST_START", "0")
    assert ConsoleProcess(heavy=True).enabled is False
    monkeypatch.delenv("SGIEVAL_FAST_START")
    assert ConsoleProcess(heavy=True).enabled is True


def test_exit_status_of_a_system_exit_code(capsys):
    assert (exit_status(None), exit_status(3), exit_status("bad things")) == (0, 3, 1)
    assert capsys.readouterr().err == "bad things\n"


def _run(tmp_path, console: bool, env: dict | None = None) -> dict:
    bench = tmp_path / "qa.jsonl"
    bench.write_text("".join(json.dumps({"id": f"q{n}", "prompt": f"Q{n}", "reference": "a"}) + "\n" for n in range(3)))
    argv = ["ask", "", "-b", str(bench), "-m", "openai:mock", "--out", "runs", "--yes"]
    code = f"""
import atexit, gc, json, sys
from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core.startup import ConsoleProcess
seen = {{"start": gc.isenabled()}}
begins = ConsoleProcess.run_begins

def watched(self):
    seen.setdefault("at_run", gc.isenabled())
    begins(self)

ConsoleProcess.run_begins = watched

def reply(body, index):
    seen.setdefault("first_call", [gc.isenabled(), gc.get_freeze_count() > 50000])
    return "<answer>a</answer>"

# printed at exit: the prompt exit runs the atexit callbacks too
atexit.register(lambda: print(json.dumps(seen), flush=True))
mock = MockOpenAI(replies=reply).__enter__()
argv = {argv!r} + ["--base-url", mock.url, "--max-concurrency", "1"]
from sgieval.cli import app
if {console!r}:
    sys.argv = ["sgieval", *argv]
    app()
else:
    try:
        app(argv)
    except SystemExit as e:
        assert e.code in (0, None), e.code
"""
    env = {**os.environ, "SGIEVAL_CACHE_DIR": str(tmp_path / "cache"), **(env or {})}
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_console_script_pauses_until_the_run_and_calls_with_the_collector_on(tmp_path):
    seen = _run(tmp_path, console=True)
    assert seen == {"start": True, "at_run": False, "first_call": [True, True]}


@pytest.mark.slow
def test_console_script_with_fast_start_off_never_pauses(tmp_path):
    seen = _run(tmp_path, console=True, env={"SGIEVAL_FAST_START": "0"})
    assert seen == {"start": True, "at_run": True, "first_call": [True, False]}


@pytest.mark.slow
def test_python_api_style_app_call_leaves_the_collector_alone(tmp_path):
    seen = _run(tmp_path, console=False)
    assert seen == {"start": True, "first_call": [True, False]}  # no start-up context: nothing paused, no end


@pytest.mark.parametrize("argv", [["runs", "--out", "nowhere"], ["ask", "--help"]])
def test_other_commands_keep_the_collector_on(argv, tmp_path):
    """Only ask, resume and report pause it: a command that may run for long (``view --serve``) or never
    starts an evaluation keeps the host's collector on from its start."""
    code = f"""
import atexit, gc, sys
atexit.register(lambda: print("collector on:", gc.isenabled(), flush=True))
sys.argv = ["sgieval", *{argv!r}]
from sgieval.cli import app
app()
"""
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().splitlines()[-1] == "collector on: True"
