"""``sgieval export``: items, responses and scores as tables, exact rows in every format."""

from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.core import GENERIC, Item, Response, RunConfig, RunStore, Score

runner = CliRunner()


@pytest.fixture
def run_dir(tmp_path):
    d = tmp_path / "runs" / "r1"
    store = RunStore(d)
    store.write_config(RunConfig(run_id="r1"))
    store.append(
        "items",
        [
            Item(
                id="t/0",
                benchmark="t",
                task=GENERIC,
                discipline="chem",
                direction="d",
                type="x",
                prompt="p0",
                reference={"answer": "a0"},
            ),
            Item(
                id="t/1", benchmark="t", task=GENERIC, discipline="bio", prompt="p1, \"quoted\"\nline 2", reference="a1"
            ),
        ],
    )
    store.append(
        "responses",
        [
            Response(
                item_id="t/0",
                model="m1",
                text="a0",
                answer="a0",
                latency_s=0.5,
                tokens={"input": 10, "output": 2},
                cost=0.001,
            ),
            Response(item_id="t/1", model="m1", text="", error="timeout after 3 attempts"),
        ],
    )
    store.append(
        "scores",
        [
            Score(
                item_id="t/0",
                model="m1",
                metric="exact_match",
                value=1.0,
                rationale="exact",
                evidence=[{"kind": "tool_call", "tool": "run_python", "input": "1+1", "output": "2"}],
            ),
            Score(
                item_id="t/1",
                model="m1",
                metric="exact_match",
                status="infra_error",
                error="no response: timeout after 3 attempts",
            ),
            Score(item_id="*", model="m1", metric="kappa", value=0.25, details={"n": 2}),
        ],
    )
    return d


EXPECTED = {
    "items": [
        {
            "item_id": "t/0",
            "benchmark": "t",
            "task": "generic",
            "discipline": "chem",
            "direction": "d",
            "type": "x",
            "prompt": "p0",
            "reference": '{"answer": "a0"}',
            "metadata": "{}",
        },
        {
            "item_id": "t/1",
            "benchmark": "t",
            "task": "generic",
            "discipline": "bio",
            "direction": "",
            "type": "",
            "prompt": "p1, \"quoted\"\nline 2",
            "reference": '"a1"',
            "metadata": "{}",
        },
    ],
    "responses": [
        {
            "item_id": "t/0",
            "benchmark": "t",
            "task": "generic",
            "discipline": "chem",
            "direction": "d",
            "type": "x",
            "model": "m1",
            "text": "a0",
            "answer": '"a0"',
            "status": "ok",
            "error": None,
            "latency_s": 0.5,
            "tokens_input": 10,
            "tokens_output": 2,
            "cost": 0.001,
        },
        {
            "item_id": "t/1",
            "benchmark": "t",
            "task": "generic",
            "discipline": "bio",
            "direction": "",
            "type": "",
            "model": "m1",
            "text": "",
            "answer": "null",
            "status": "infra_error",
            "error": "timeout after 3 attempts",
            "latency_s": None,
            "tokens_input": None,
            "tokens_output": None,
            "cost": None,
        },
    ],
    "scores": [
        {
            "item_id": "t/0",
            "benchmark": "t",
            "task": "generic",
            "discipline": "chem",
            "direction": "d",
            "type": "x",
            "model": "m1",
            "metric": "exact_match",
            "value": 1.0,
            "status": "ok",
            "judge": "objective",
            "rationale": "exact",
            "error": None,
            # typed evidence (core.ToolCallEvidence) is exported with every field of its shape
            "evidence": (
                '[{"details": {}, "duration_s": null, "error": null, "flags": [], "input": "1+1", '
                '"judge": null, "kind": "tool_call", "output": "2", "refused": false, "tool": "run_python"}]'
            ),
            "details": "{}",
        },
        {
            "item_id": "t/1",
            "benchmark": "t",
            "task": "generic",
            "discipline": "bio",
            "direction": "",
            "type": "",
            "model": "m1",
            "metric": "exact_match",
            "value": None,
            "status": "infra_error",
            "judge": "objective",
            "rationale": "",
            "error": "no response: timeout after 3 attempts",
            "evidence": "[]",
            "details": "{}",
        },
        {
            "item_id": "*",
            "benchmark": "",
            "task": "",
            "discipline": "",
            "direction": "",
            "type": "",
            "model": "m1",
            "metric": "kappa",
            "value": 0.25,
            "status": "ok",
            "judge": "objective",
            "rationale": "",
            "error": None,
            "evidence": "[]",
            "details": '{"n": 2}',
        },
    ],
}


def _invoke(run_dir, fmt):
    res = runner.invoke(app, ["export", str(run_dir), "--format", fmt])
    assert res.exit_code == 0, res.output
    assert res.output.split() == [str(run_dir / "export" / f"{t}.{fmt}") for t in ("items", "responses", "scores")]


def test_export_jsonl(run_dir):
    _invoke(run_dir, "jsonl")
    for table, rows in EXPECTED.items():
        got = [json.loads(line) for line in (run_dir / "export" / f"{table}.jsonl").read_text().splitlines()]
        assert got == rows


def test_export_parquet(run_dir):
    _invoke(run_dir, "parquet")
    for table, rows in EXPECTED.items():
        t = pq.read_table(run_dir / "export" / f"{table}.parquet")
        assert t.to_pylist() == rows
    assert str(pq.read_table(run_dir / "export" / "responses.parquet").schema.field("tokens_input").type) == "int64"


def test_export_csv(run_dir):
    _invoke(run_dir, "csv")
    for table, rows in EXPECTED.items():
        with (run_dir / "export" / f"{table}.csv").open(newline="", encoding="utf-8") as f:
            got = list(csv.DictReader(f))
        # CSV holds text: numbers as written by Python, missing values empty
        assert got == [{k: "" if v is None else str(v) for k, v in r.items()} for r in rows]


def test_export_pandas_one_row_per_score(run_dir):
    import pandas as pd

    _invoke(run_dir, "parquet")
    df = pd.read_parquet(run_dir / "export" / "scores.parquet")
    assert df.groupby("discipline")["value"].mean().to_dict() == {
        "": 0.25,
        "bio": pytest.approx(float("nan"), nan_ok=True),
        "chem": 1.0,
    }


def test_export_unknown_format(run_dir):
    res = runner.invoke(app, ["export", str(run_dir), "--format", "xlsx"])
    assert res.exit_code == 2
    assert "--format: unknown export format 'xlsx'. Fix: use one of parquet, jsonl, csv" in res.output
