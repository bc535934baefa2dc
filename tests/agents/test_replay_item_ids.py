"""A JSONL replay file's item ids are matched to the selected benchmark's items before any work, through the real
`sgieval ask` command: none matching is an input error naming the file, its ids and the expected form; a bare id
that is the local id of exactly one item is mapped to it (and the run says so); lines that match no item are named
in the Run table and a warning.

Benchmark qa.jsonl: q1 (reference "4"), q2 ("Na"), q3 ("300000").  Replies "4", "Na", "5": exact_match 2/3 = 0.67
wherever those replies reach their items."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.core import InputError, Item
from sgieval.models.replay import ReplayStore

runner = CliRunner()
REPLIES = ["4", "Na", "5"]


@pytest.fixture
def folder(tmp_path):
    items = [
        ("q1", "What is 2+2?", "4"),
        ("q2", "Symbol of sodium?", "Na"),
        ("q3", "Speed of light in km/s?", "300000"),
    ]
    (tmp_path / "qa.jsonl").write_text(
        "".join(json.dumps({"id": i, "prompt": p, "reference": r}) + "\n" for i, p, r in items)
    )
    return tmp_path


def _replay(folder: Path, name: str, ids: list[str], texts: list[str] = REPLIES) -> Path:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"item_id": i, "text": t}) + "\n" for i, t in zip(ids, texts)))
    return path


def _ask(folder: Path, *replays: Path, yes: bool = True):
    return runner.invoke(
        app,
        [
            "ask",
            "Which model is the most accurate?",
            "-b",
            str(folder / "qa.jsonl"),
            "--models",
            ",".join(f"replay:{p}" for p in replays),
            *(["--yes"] if yes else []),
            "--out",
            str(folder / "runs"),
        ],
        input="",
    )


def _report(folder: Path) -> str:
    return " ".join(next((folder / "runs").glob("*/report.md")).read_text().split())


def test_bare_ids_that_match_one_item_each_are_mapped_and_the_run_says_so(folder):
    full = _replay(folder, "full", ["jsonl:qa/q1", "jsonl:qa/q2", "jsonl:qa/q3"])
    bare = _replay(folder, "bare", ["q1", "q2", "q3"])
    res = _ask(folder, full, bare)
    assert res.exit_code == 0, res.output
    text = _report(folder)
    assert f"| replay item ids | {bare}: 3 bare ids mapped to item ids (e.g. q1 -> jsonl:qa/q1) |" in text
    assert "replay:bare | 0.67 |" in text and "replay:full | 0.67 |" in text
    assert "no stored response" not in text


def test_ids_that_match_no_item_stop_the_run_before_any_work(folder):
    full = _replay(folder, "full", ["jsonl:qa/q1", "jsonl:qa/q2", "jsonl:qa/q3"])
    wrong = _replay(folder, "wrong", ["item1", "qa/q2", "jsonl:other/q3"])
    res = _ask(folder, full, wrong)
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())
    assert (
        f"{wrong}: none of the 3 item ids matches an item of the selected benchmark (jsonl:qa): "
        "line 1: 'item1', line 2: 'qa/q2', line 3: 'jsonl:other/q3'" in out
    )
    assert 'write each "item_id" as the full item id, e.g. "jsonl:qa/q1"' in out
    assert not list((folder / "runs").glob("*/responses.jsonl"))
    # without --yes the error comes before the metric confirmation asks
    res = _ask(folder, wrong, yes=False)
    assert res.exit_code == 2, res.output
    assert "none of the 3 item ids matches" in res.output and "Run with these metrics?" not in res.output


def test_lines_that_match_no_item_are_named_not_dropped_silently(folder):
    part = _replay(folder, "part", ["jsonl:qa/q1", "q2", "q9"])
    res = _ask(folder, part)
    assert res.exit_code == 0, res.output
    text = _report(folder)
    assert (
        f"> **Warning:** 1 line of the replay file {part} (replay:part) matched no item of the selected benchmark "
        "and was not used: line 3 ('q9')." in text
    )
    assert "1 bare id mapped to item ids (e.g. q2 -> jsonl:qa/q2); 1 line matched no item" in text


def _item(bench: str, local: str) -> Item:
    return Item(id=f"{bench}/{local}", benchmark=bench, prompt="p", task="qa")


def test_a_bare_id_shared_by_two_items_or_already_given_in_full_is_not_mapped():
    store = ReplayStore(model="m", source=Path("m.jsonl"), by_item={"q1": "a", "q2": "b", "jsonl:b/q2": "c"})
    store.match_items([_item("jsonl:a", "q1"), _item("jsonl:b", "q1"), _item("jsonl:b", "q2")])
    assert store.aliases == {}
    assert store.unmatched == ["q1", "q2"]
    with pytest.raises(InputError, match=r"none of the 1 item ids matches .*jsonl:a"):
        ReplayStore(model="m", source=Path("m.jsonl"), by_item={"x": "a"}).match_items([_item("jsonl:a", "q1")])
