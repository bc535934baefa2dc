"""A user benchmark as a small YAML definition: `sgieval ask -b capitals.yaml`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sgieval.benchmarks import load_catalog, registry
from sgieval.benchmarks.user import load_yaml_benchmark
from sgieval.cli import app
from sgieval.core import InputError

YAML = """\
name: capitals
description: Capital cities
files: [qa/capitals.jsonl]
prompt: |-
  Answer with the city only, inside <answer></answer>. ({region})
  {prompt}
facets: {task: capitals, discipline: geography}
metrics: [exact_match]
vocabulary:
  names: ["capitals? bench"]
  tasks: {capitals: ["capital cities", "capitals?"]}
"""
RECORDS = [
    ("fr", "Capital of France?", "Paris", "Europe"),
    ("jp", "Capital of Japan?", "Tokyo", "Asia"),
    ("ke", "Capital of Kenya?", "Nairobi", "Africa"),
]


@pytest.fixture
def caps(tmp_path):
    (tmp_path / "qa").mkdir()
    (tmp_path / "qa" / "capitals.jsonl").write_text(
        "".join(
            json.dumps({"id": i, "prompt": p, "reference": r, "metadata": {"region": g}}) + "\n"
            for i, p, r, g in RECORDS
        )
    )
    (tmp_path / "capitals.yaml").write_text(YAML)
    answers = {"atlas": ["Paris", "Tokyo", "Nairobi"], "guess": ["Paris", "Kyoto", "Mombasa"]}
    for m, texts in answers.items():
        (tmp_path / f"{m}.jsonl").write_text(
            "".join(
                json.dumps({"item_id": f"capitals/{i}", "text": f"<answer>{t}</answer>"}) + "\n"
                for (i, *_), t in zip(RECORDS, texts)
            )
        )
    yield tmp_path
    registry.unregister("capitals")


def test_yaml_definition_loads_items_with_its_template_and_facets(caps):
    cat = load_catalog([str(caps / "capitals.yaml")])
    assert [i.id for i in cat.items] == ["capitals/fr", "capitals/jp", "capitals/ke"]
    fr = cat.items[0]
    assert fr.prompt == "Answer with the city only, inside <answer></answer>. (Europe)\nCapital of France?"
    assert (fr.benchmark, fr.task, fr.discipline) == ("capitals", "capitals", "geography")
    assert fr.metadata["question"] == "Capital of France?" and fr.reference == {"answer": "Paris"}
    assert cat.sources["capitals"] == str(caps / "capitals.yaml")
    assert registry.get("capitals").primary == {"*": "exact_match"}


def test_ask_on_a_yaml_benchmark(caps):
    res = CliRunner().invoke(
        app,
        [
            "ask",
            "Which model knows capital cities best?",
            "-b",
            str(caps / "capitals.yaml"),
            "--models",
            f"replay:{caps / 'atlas.jsonl'},replay:{caps / 'guess.jsonl'}",
            "--yes",
            "--out",
            str(caps / "runs"),
        ],
    )
    assert res.exit_code == 0, res.output
    (run,) = [p for p in (caps / "runs").iterdir() if p.is_dir()]
    scores = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    em = {(s["model"], s["item_id"]): s["value"] for s in scores if s["metric"] == "exact_match"}
    assert em == {
        ("replay:atlas", "capitals/fr"): 1.0,
        ("replay:atlas", "capitals/jp"): 1.0,
        ("replay:atlas", "capitals/ke"): 1.0,
        ("replay:guess", "capitals/fr"): 1.0,
        ("replay:guess", "capitals/jp"): 0.0,
        ("replay:guess", "capitals/ke"): 0.0,
    }
    assert {s["metric"] for s in scores} == {"exact_match"}  # only the metric the YAML lists
    report = (run / "report.md").read_text()
    assert "'capital cities' -> task=capitals" in report
    # atlas 3/3 = 1; guess 1/3 = 0.33
    assert "| 1 | replay:atlas | 1.00 |" in report and "| 2 | replay:guess | 0.33 |" in report


@pytest.mark.parametrize(
    "text, message",
    [
        (YAML + "colour: red\n", "capitals.yaml: benchmark definition: unknown field 'colour'"),
        (
            YAML.replace("metrics: [exact_match]", "metrics: [exact_match]\nprimary: rigor"),
            "capitals.yaml: primary: primary metric 'rigor' is not one of the listed metrics ['exact_match']",
        ),
        (
            YAML.replace("facets: {task: capitals, discipline: geography}", "facets: {colour: red}"),
            "capitals.yaml: benchmark definition: field 'facets': unknown facet 'colour'",
        ),
        ("- just\n- a list\n", "capitals.yaml: top level is a list, expected a mapping"),
    ],
)
def test_bad_yaml_definitions_name_file_field_and_fix(caps, text, message):
    (caps / "capitals.yaml").write_text(text)
    with pytest.raises(InputError) as ei:
        load_yaml_benchmark(caps / "capitals.yaml")
    assert message in str(ei.value) and "Fix:" in str(ei.value)


def test_yaml_errors_reach_the_cli_as_one_line(caps):
    (caps / "capitals.yaml").write_text(YAML.replace("qa/capitals.jsonl", "qa/missing.jsonl"))
    res = CliRunner().invoke(app, ["catalog", "-b", str(caps / "capitals.yaml")])
    assert res.exit_code == 2
    assert f"error: {caps / 'qa' / 'missing.jsonl'}: no such JSONL record file" in " ".join(res.output.split())
    (caps / "capitals.yaml").write_text(YAML.replace("metrics: [exact_match]", "metrics: [elegance]"))
    res = CliRunner().invoke(
        app,
        [
            "ask",
            "x",
            "-b",
            str(caps / "capitals.yaml"),
            "--models",
            f"replay:{caps / 'atlas.jsonl'}",
            "--yes",
            "--out",
            str(caps / "runs"),
        ],
    )
    assert res.exit_code == 2 and "metrics: no rubric called 'elegance'" in " ".join(res.output.split())
