"""A new benchmark is one module plus one registry line.

This module is the whole benchmark: a loader, a metric, the definition; the
fixture registers it with one line, and `sgieval ask` runs on it end to end
(typer's CliRunner, replayed target models), with the values checked in the
records and the report.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.benchmarks.base import Benchmark, Vocabulary
from sgieval.benchmarks.registry import register, unregister
from sgieval.cli import app
from sgieval.core import Item, MetricSpec, Response
from sgieval.metric_pool.base import MetricResult
from sgieval.metric_pool.generic import ReferenceMatch, prediction_text
from sgieval.metric_pool.registry import metric

NAME = "toy-arith"
TEMPLATE = "What is {a} + {b}? Give only the number inside <answer></answer>."
SUMS = [(2, 3), (10, 7), (40, 2), (6, 6)]  # golds 5, 17, 42, 12


# --------------------------------------------------------------- the benchmark
def load_toy(folder: Path) -> list[Item]:
    """``folder/sums.json`` ([{"id", "a", "b"}]) -> Items of task ``arithmetic``."""
    rows = json.loads((folder / "sums.json").read_text())
    return [
        Item(
            id=f"{NAME}/{r['id']}",
            benchmark=NAME,
            task="arithmetic",
            discipline="mathematics",
            prompt=TEMPLATE.format(a=r["a"], b=r["b"]),
            reference={"answer": str(r["a"] + r["b"])},
            metadata={"question": f"{r['a']} + {r['b']}"},
        )
        for r in rows
    ]


CLOSENESS = MetricSpec(
    name="toy_closeness",
    tasks=["arithmetic"],
    range=(0.0, 1.0),
    benchmark=NAME,
    description="1 / (1 + |prediction - gold|)",
    source="test",
    qualities=["accuracy"],
)


@metric(CLOSENESS, scope=NAME)  # its metrics: declared for this benchmark's items only
def closeness(item: Item, response: Response) -> MetricResult:
    pred = float(prediction_text(response.text))
    gold = float(item.reference["answer"])
    return MetricResult(1.0 / (1.0 + abs(pred - gold)), f"{pred:g} vs {gold:g}")


metric(scope=NAME)(ReferenceMatch(benchmark=NAME))


TOY = Benchmark(
    name=NAME,
    loader=load_toy,
    markers=("sums.json",),
    tasks=("arithmetic",),
    vocabulary=Vocabulary(
        disciplines={"mathematics": ("mathematics",)},
        tasks=(("arithmetic", (r"arithmetic", r"sums?")),),
        names=(r"toy[- ]?arith",),
    ),
    prompts={"arithmetic": TEMPLATE},
    metrics=("exact_match", "toy_closeness"),
    primary={"arithmetic": "exact_match"},
    prefer={"accuracy": ("toy_closeness", "exact_match")},
)


@pytest.fixture
def toy(tmp_path):
    register(TOY)  # the one line
    data = tmp_path / "data" / NAME
    data.mkdir(parents=True)
    (data / "sums.json").write_text(json.dumps([{"id": k, "a": a, "b": b} for k, (a, b) in enumerate(SUMS)]))
    replies = {"exact": [a + b for a, b in SUMS], "sloppy": [5, 17, 43, 22]}  # sloppy: off by 1 and by 10
    for model, answers in replies.items():
        lines = [
            json.dumps({"item_id": f"{NAME}/{k}", "text": f"Sum: <answer>{v}</answer>"}) for k, v in enumerate(answers)
        ]
        (tmp_path / f"{model}.jsonl").write_text("\n".join(lines) + "\n")
    yield tmp_path
    unregister(NAME)


def _ask(tmp: Path, request: str, *extra: str):
    res = CliRunner().invoke(
        app,
        [
            "ask",
            request,
            "-b",
            NAME,
            "--data-dir",
            str(tmp / "data"),
            "--models",
            f"replay:{tmp / 'exact.jsonl'},replay:{tmp / 'sloppy.jsonl'}",
            "--yes",
            "--out",
            str(tmp / "runs"),
            *extra,
        ],
    )
    assert res.exit_code == 0, res.output
    (run,) = [p for p in (tmp / "runs").iterdir() if p.is_dir()]
    scores = [json.loads(x) for x in (run / "scores.jsonl").read_text().splitlines()]
    return run, scores, (run / "report.md").read_text()


def test_ask_on_a_registered_toy_benchmark(toy):
    run, scores, report = _ask(toy, "Which model does toy-arith sums best?")
    by = {(s["model"], s["metric"], s["item_id"]): s["value"] for s in scores}
    em = [by[("replay:sloppy", "exact_match", f"{NAME}/{k}")] for k in range(4)]
    assert em == [1.0, 1.0, 0.0, 0.0]
    assert [by[("replay:exact", "exact_match", f"{NAME}/{k}")] for k in range(4)] == [1.0] * 4
    # closeness 1/(1+|err|): errors 0, 0, 1, 10 -> 1, 1, 0.5, 1/11
    assert [by[("replay:sloppy", "toy_closeness", f"{NAME}/{k}")] for k in range(4)] == [1.0, 1.0, 0.5, 1 / 11]
    plan = json.loads((run / "config.json").read_text())
    assert plan["benchmarks"] == [NAME]
    # the definition's primary metric ranks: exact 4/4 = 1, sloppy 2/4 = 0.5
    rows = {ln.split(" | ")[1]: ln for ln in report.splitlines() if ln.startswith(("| 1 | replay:", "| 2 | replay:"))}
    # rank | model | mean | CI | total | n items | failed
    assert rows["replay:exact"].startswith("| 1 | replay:exact | 1.00 |") and rows["replay:exact"].endswith(
        "| 4.00 | 4 | 0 |"
    )
    assert rows["replay:sloppy"].startswith("| 2 | replay:sloppy | 0.50 |")
    assert rows["replay:sloppy"].endswith("| 2.00 | 4 | 0 |")  # one format per column
    # the questioning agent used the definition's vocabulary: "toy-arith" names it, "sums" its task
    assert "'toy-arith' -> benchmark=toy-arith" in report and "'sums' -> task=arithmetic" in report


def test_a_quality_in_the_request_picks_the_metric_declaring_it(toy):
    # "accurate" -> quality accuracy -> toy_closeness (the benchmark's preference), not the primary exact_match
    run, scores, report = _ask(toy, "Which model is most accurate at arithmetic?")
    assert "'accuracy' is measured by the predefined metric toy_closeness" in report
    clos = [s["value"] for s in scores if s["model"] == "replay:sloppy" and s["metric"] == "toy_closeness"]
    assert sum(clos) / 4 == pytest.approx((1 + 1 + 0.5 + 1 / 11) / 4)  # 0.6477
    (row,) = [ln for ln in report.splitlines() if ln.startswith("| 2 | replay:sloppy |")]
    # mean 0.65 per item, total 1 + 1 + 0.5 + 1/11 = 2.59 over 4 items, none failed
    assert row.startswith("| 2 | replay:sloppy | 0.65 |") and row.endswith("| 2.59 | 4 | 0 |")
    assert "## Ranking by toy_closeness" in report


def test_catalog_and_data_where_list_the_registered_benchmark(toy):
    res = CliRunner().invoke(app, ["catalog", "-b", NAME, "--data-dir", str(toy / "data"), "--json"])
    assert res.exit_code == 0, res.output
    counts = json.loads(res.output)
    assert counts["items"] == 4 and counts["facets"]["task"] == {"arithmetic": 4}
