"""Start-up imports only what the step needs.

Each check runs in a fresh interpreter (a subprocess) and inspects ``sys.modules``:
importing the CLI, ``--help``, ``catalog`` and ``runs`` load none of the report
builder, charts, scipy, matplotlib, the embedder or the sandbox, and a run has
not loaded matplotlib, scipy.stats, torch or sentence_transformers when it
makes its first model call (the mock OpenAI server, in the same subprocess,
notes ``sys.modules`` when its first request arrives).  Timings are the
business of ``python -m sgieval.bench.e2e``, not of this test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ["matplotlib", "scipy.stats", "torch", "sentence_transformers"]
# nothing on the path to the first model call embeds or computes statistics: not even numpy
BEFORE_FIRST_CALL = [*HEAVY, "numpy", "sgieval.metric_pool.embeddings"]
# what --help, catalog and runs never need (the report builder lives in agents/ or reports/)
NOT_FOR_LISTINGS = [
    *HEAVY,
    "scipy",
    "sgieval.agents.reporting",
    "sgieval.reports.charts",
    "sgieval.metric_pool.stats",
    "sgieval.metric_pool.embeddings",
    "sgieval.tools.sandbox",
]


def _python(code: str, tmp_path: Path) -> dict:
    """Run ``code`` in a fresh interpreter (cwd ``tmp_path``); it prints one JSON line last."""
    env = {**os.environ, "SGIEVAL_CACHE_DIR": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


_LOADED = "lambda names: [n for n in names if n in sys.modules]"


@pytest.mark.parametrize("argv", [["--help"], ["catalog", "--json"], ["runs", "--out", "runs"]])
def test_help_catalog_and_runs_load_no_report_chart_scipy_embedder_or_sandbox(argv, tmp_path):
    code = f"""
import json, sys
loaded = {_LOADED}
from sgieval.cli import app
after_import = loaded({NOT_FOR_LISTINGS!r})
try:
    app({argv!r})
except SystemExit as e:
    assert e.code in (0, None), e.code
print()
print(json.dumps({{"import": after_import, "command": loaded({NOT_FOR_LISTINGS!r})}}))
"""
    got = _python(code, tmp_path)
    assert got == {"import": [], "command": []}


@pytest.mark.slow
def test_a_run_loads_matplotlib_scipy_torch_sentence_transformers_only_when_needed(tmp_path):
    bench = tmp_path / "qa.jsonl"  # half of the replies are right: the report bootstraps a CI
    bench.write_text(
        "".join(
            json.dumps({"id": f"q{n}", "prompt": f"Question {n}", "reference": f"a{n % 2}"}) + "\n" for n in range(6)
        )
    )
    code = f"""
import json, sys
loaded = {_LOADED}
from sgieval.bench.mock_openai import MockOpenAI
seen = {{}}

def reply(body, index):
    seen.setdefault("first_call", loaded({BEFORE_FIRST_CALL!r}))
    return "<answer>a0</answer>"

from sgieval.cli import app
seen["import"] = loaded({HEAVY!r})
with MockOpenAI(replies=reply) as mock:
    try:
        app(["ask", "", "-b", {str(bench)!r}, "-m", "openai:mock", "--base-url", mock.url, "--out", "runs",
             "--max-concurrency", "4", "--yes"])
    except SystemExit as e:
        assert e.code in (0, None), e.code
    seen["calls"] = mock.stats()["served"]
seen["end"] = loaded({HEAVY!r})
seen["sdk"] = loaded(["openai", "langchain_openai"])
print()
print(json.dumps(seen))
"""
    got = _python(code, tmp_path)
    assert got["calls"] == 6
    assert got["import"] == [] and got["first_call"] == []
    # the report then needs the bootstrap CIs (scipy.stats) and the ranking chart (matplotlib); an
    # exact-match run never needs the embedder
    assert got["end"] == ["matplotlib", "scipy.stats"]
    # the transport reads replies without the openai SDK (its ~500 type modules would load on the first reply)
    assert got["sdk"] == []


def test_the_console_process_leaves_statistics_and_charts_to_its_warm_worker(tmp_path):
    """In the console script's start-up context (warm worker on), a run without labels never imports scipy or
    matplotlib in the main process: the bootstrap, the paired tests and the charts run in the worker, and the
    labels section is skipped before its imports (prediction-powered means need scipy.stats)."""
    bench = tmp_path / "qa.jsonl"  # half of the replies are right: the report bootstraps a CI
    bench.write_text(
        "".join(
            json.dumps({"id": f"q{n}", "prompt": f"Question {n}", "reference": f"a{n % 2}"}) + "\n" for n in range(6)
        )
    )
    code = f"""
import json, sys
from pathlib import Path
loaded = {_LOADED}
from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app
from sgieval.core import ConsoleProcess

with MockOpenAI(replies=lambda body, index: "<answer>a0</answer>") as mock:
    with ConsoleProcess(heavy=True, enabled=True):
        try:
            app(["ask", "", "-b", {str(bench)!r}, "-m", "openai:mock", "--base-url", mock.url, "--out", "runs",
                 "--max-concurrency", "4", "--yes"])
        except SystemExit as e:
            assert e.code in (0, None), e.code
        end = loaded(["scipy", "matplotlib", "sgieval.metric_pool.labels"])
    calls = mock.stats()["served"]
print()
print(json.dumps({{"calls": calls, "end": end, "report": [str(p) for p in sorted(Path("runs").glob("*/report.md"))]}}))
"""
    got = _python(code, tmp_path)
    assert got["calls"] == 6 and len(got["report"]) == 1
    assert got["end"] == []
