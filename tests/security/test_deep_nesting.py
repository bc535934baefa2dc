"""Inputs that fail validation leave no run folder: JSON nested hundreds of levels deep.

The probe: 900-level nesting (within the parser's recursion limit, so it parsed) gave exit 1 with a
RecursionError later in the run, and left a run folder behind.  Real CLI; one line, exit 2, no folder.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.core.files import MAX_JSON_DEPTH, json_depth

runner = CliRunner()


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SGIEVAL_CACHE_DIR", str(tmp_path / "cache"))


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_json_depth_counts_without_recursion():
    assert (json_depth(1), json_depth([]), json_depth([[1]]), json_depth({"a": [{"b": 2}]})) == (0, 1, 2, 3)
    assert json_depth(json.loads(nested(900))) == 900  # no RecursionError on the way


def _ask(tmp_path, bench, models="replay:x"):
    return runner.invoke(
        app, ["ask", "", "-b", str(bench), "-m", models, "--yes", "--tools", "", "--out", str(tmp_path / "runs")]
    )


def _no_run_folder(tmp_path) -> bool:
    runs = tmp_path / "runs"
    return not runs.exists() or not list(runs.iterdir())


@pytest.mark.parametrize("levels", [900, MAX_JSON_DEPTH])  # the probe's 900 levels, and one past the limit
def test_a_deeply_nested_benchmark_line_is_one_line_exit_2_and_no_run_folder(tmp_path, levels):
    bench = tmp_path / "qa.jsonl"
    # the reference nests `levels` arrays inside the object: levels + 1 in all
    bench.write_text(
        '{"id": "q0", "prompt": "p", "reference": "x"}\n'
        + '{"id": "q1", "prompt": "p", "reference": '
        + nested(levels)
        + "}\n"
    )
    res = _ask(tmp_path, bench)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and "RecursionError" not in res.output
    (line,) = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert line.startswith(
        f"error: {bench} line 2: is not valid JSON: nested too deeply ({levels + 1} levels of arrays and objects; "
        f"at most {MAX_JSON_DEPTH} are read)"
    )
    assert _no_run_folder(tmp_path)


def test_a_deeply_nested_replay_line_is_refused_and_just_under_the_limit_is_read(tmp_path):
    bench = tmp_path / "qa.jsonl"
    bench.write_text('{"id": "q0", "prompt": "p", "reference": "x"}\n')
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"item_id": "jsonl:qa/q0", "text": "x", "metadata": {"m": ' + nested(900) + "}}\n")
    res = _ask(tmp_path, bench, f"replay:{deep}")
    assert res.exit_code == 2 and "nested too deeply (902 levels" in res.output, res.output
    assert _no_run_folder(tmp_path)
    ok = tmp_path / "ok.jsonl"  # 100 levels in all: read, and the run completes
    ok.write_text('{"item_id": "jsonl:qa/q0", "text": "x", "metadata": {"m": ' + nested(MAX_JSON_DEPTH - 2) + "}}\n")
    res = _ask(tmp_path, bench, f"replay:{ok}")
    assert res.exit_code == 0, res.output
