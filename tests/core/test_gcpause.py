"""The collector paused while the console script starts (core.gcpause, issue 13: time to first call).

Timings belong to ``python -m sgieval.bench.e2e``; these tests check the states: paused from the command's
start to its evaluation, then frozen and enabled again before the first model call; never touched by the
Python API; a host that disabled the collector keeps it disabled.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import pytest

from sgieval.core import gcpause


@pytest.fixture
def collector():
    """Leave the collector as found (enabled, nothing frozen) whatever the test did."""
    yield
    gcpause.resume()
    gc.unfreeze()
    gc.enable()


def test_pause_then_resume_freezes_and_enables(collector):
    assert gcpause.pause() is True
    assert not gc.isenabled()
    assert gcpause.pause() is False  # already paused: one pause
    gc.unfreeze()
    keep = [object() for _ in range(10)]  # alive at the resume: frozen
    gcpause.resume()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= 1000  # this interpreter's modules, classes, functions
    frozen = gc.get_freeze_count()
    gcpause.resume()  # idempotent: no second freeze
    assert gc.get_freeze_count() == frozen
    assert gcpause.pause() is True and not gc.isenabled()  # the pause is over: a new one can start
    del keep


def test_a_host_that_disabled_the_collector_keeps_it_disabled(collector):
    gc.disable()
    assert gcpause.pause() is False
    gcpause.resume()
    assert not gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_resume_without_pause_changes_nothing(collector):
    gc.unfreeze()
    gcpause.resume()
    assert gc.isenabled() and gc.get_freeze_count() == 0


def _run(tmp_path, console: bool) -> dict:
    bench = tmp_path / "qa.jsonl"
    bench.write_text("".join(json.dumps({"id": f"q{n}", "prompt": f"Q{n}", "reference": "a"}) + "\n" for n in range(3)))
    argv = ["ask", "", "-b", str(bench), "-m", "openai:mock", "--out", "runs", "--yes"]
    code = f"""
import gc, json, sys
from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core import gcpause
seen = {{"start": gc.isenabled()}}
resume = gcpause.resume

def watched():
    seen.setdefault("at_resume", gc.isenabled())
    resume()

gcpause.resume = watched

def reply(body, index):
    seen.setdefault("first_call", [gc.isenabled(), gc.get_freeze_count() > 50000])
    if index == 2:  # the last call: the console script ends the process with os._exit after the report
        print(json.dumps(seen), flush=True)
    return "<answer>a</answer>"

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
    print(json.dumps(seen), flush=True)
"""
    env = {**os.environ, "SGIEVAL_CACHE_DIR": str(tmp_path / "cache")}
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[0])


def test_console_script_pauses_until_the_evaluation_and_calls_with_the_collector_on(tmp_path):
    seen = _run(tmp_path, console=True)
    assert seen == {"start": True, "at_resume": False, "first_call": [True, True]}


def test_python_api_style_app_call_leaves_the_collector_alone(tmp_path):
    seen = _run(tmp_path, console=False)
    assert seen == {"start": True, "at_resume": True, "first_call": [True, False]}


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
