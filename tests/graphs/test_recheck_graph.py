"""Issue 12 "Done when", second point: the chemistry request with --recheck adds the stored-judgement agreement
table (MiniLM vs the stored text-embedding-3-large decisions) for the six stored models."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sgieval.core import RunConfig
from sgieval.graphs.evaluate import execute, make_runtime

MODELS = ["replay:llama3.3:latest", "replay:mistral:latest", "replay:o1-mini", "replay:openai/4o",
          "replay:phi4:latest", "replay:qwen2.5:latest"]


@pytest.mark.slow
def test_chemistry_recheck_table(tmp_path, sciaidan_dir):
    cfg = RunConfig(run_id="rc", request="Which model is the most creative in chemistry?", recheck=True,
                    data_dir=str(sciaidan_dir.parent), out_dir=str(tmp_path / "runs"), yes=True, bootstrap_resamples=999)
    state = asyncio.run(execute(make_runtime(cfg)))
    report = Path(state["report"]).read_text()
    assert "## Stored judgements rechecked" in report
    section = report.split("## Stored judgements rechecked")[1].split("\n## ")[0]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("| replay:")}
    assert sorted(rows) == MODELS
    # stored accepted counts are the published ones; o1-mini's empty chemistry/22 list has no records to recheck
    assert {m: r[5] for m, r in rows.items()} == {
        "replay:o1-mini": "296", "replay:openai/4o": "274", "replay:phi4:latest": "200",
        "replay:llama3.3:latest": "194", "replay:qwen2.5:latest": "180", "replay:mistral:latest": "107"}
    assert rows["replay:o1-mini"][1] == "24" and rows["replay:openai/4o"][1] == "25"
    assert "(same order)." in section
    assert "Rechecked with minilm, the stored acceptance decisions give the same ranking order." in report.split("## Run")[0]
