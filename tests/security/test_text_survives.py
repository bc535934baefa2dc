"""Every character survives: JSONL is split on ``\\n`` only wherever it is read (the run store, benchmark files,
replay files, corpora), so U+2028, U+2029 and U+0085 inside a reply round-trip; a lone surrogate in a reply or a
record file is repaired at the boundary (U+FFFD, the record flagged ``text_repaired``) and the run goes on; a
prompt holding one is an input error naming the line.  Nothing is written outside the run folder."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app
from sgieval.core import InputError, Response, RunStore, Score
from sgieval.tests.security.run_folders import (
    ask_mock,
    jsonl_lines,
    one_error_line,
    snapshot,
    sums_bench,
    user_env,
    viewer_data,
    viewer_text,
)

runner = CliRunner()

# what the mock server answers per question number: the separators JSON allows unescaped in a string, and a
# lone surrogate (valid JSON "\ud800", no character)
SPECIAL = {
    2: "4\u2028(two plus two)",
    3: "6\u2029",
    5: "10\x85 is the sum",
    6: "12 \ud800 twelve",
    8: "16\udfff",
}


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    user_env(monkeypatch, tmp_path, "sk-test-000000000000000000000")


def bench(tmp_path: Path, n: int = 10) -> Path:
    return sums_bench(tmp_path / "bench" / "sums.jsonl", n)


def reply(body: dict, _index: int) -> str:
    n = int(re.search(r"What is (\d+) \+", body["messages"][-1]["content"]).group(1))
    return SPECIAL.get(n, str(2 * n))


def ask(tmp_path: Path, mock: MockOpenAI, out: Path, *extra: str):
    return ask_mock(mock.url, tmp_path / "bench" / "sums.jsonl", out, *extra)


def test_separators_and_lone_surrogates_in_replies_keep_every_item(tmp_path):
    out = tmp_path / "runs"
    bench(tmp_path)
    with MockOpenAI(replies=reply) as mock:
        before = snapshot(tmp_path, skip=out)
        res = ask(tmp_path, mock, out)
        assert res.exit_code == 0, res.output
        served = mock.stats()["served"]
        assert served == 10
        (run,) = out.iterdir()

        # re-read: 10 of 10 responses, the separators kept, the surrogates repaired and flagged
        store = RunStore(run)
        responses = {r.item_id.rsplit("/", 1)[-1]: r for r in store.read("responses")}
        assert len(responses) == 10 and store.problems == []
        assert responses["q2"].text == "4\u2028(two plus two)" and not responses["q2"].text_repaired
        assert responses["q3"].text == "6\u2029" and responses["q5"].text == "10\x85 is the sum"
        assert responses["q6"].text == "12 \ufffd twelve" and responses["q6"].text_repaired is True
        assert responses["q8"].text == "16\ufffd" and responses["q8"].text_repaired is True
        assert all(r.status == "ok" for r in responses.values())
        # every item scored (status ok, a value), once per metric
        scores = [s for s in store.read("scores") if s.item_id != "*"]
        by_item: dict[str, list[Score]] = {}
        for s in scores:
            by_item.setdefault(s.item_id.rsplit("/", 1)[-1], []).append(s)
        assert sorted(by_item) == sorted(f"q{i}" for i in range(10))
        assert all(s.status == "ok" and s.value is not None for s in scores)
        assert len({(s.item_id, s.metric) for s in scores}) == len(scores)
        store.close()

        # resume asks nothing again and appends no duplicate
        res = runner.invoke(app, ["resume", str(run), "--yes"])
        assert res.exit_code == 0, res.output
        assert mock.stats()["served"] == served
    assert len(jsonl_lines(run / "responses.jsonl")) == 10
    from sgieval import load_run

    loaded = load_run(run)
    assert len(loaded.responses) == 10 and {r.text for r in loaded.responses} >= {"4\u2028(two plus two)", "16\ufffd"}

    # the viewer and every export hold 10 of 10, text whole
    res = runner.invoke(app, ["view", str(run)])
    assert res.exit_code == 0, res.output
    data, text = viewer_data(run), viewer_text(run)
    assert len(data["rows"]) == 10 and len(text["rows"]) == 10
    assert "4\u2028(two plus two)" in json.dumps(text, ensure_ascii=False)
    for fmt in ("jsonl", "csv", "parquet"):
        res = runner.invoke(app, ["export", str(run), "-f", fmt])
        assert res.exit_code == 0, res.output
    exported = jsonl_lines(run / "export" / "responses.jsonl")
    assert len(exported) == 10
    assert {r["item_id"].rsplit("/", 1)[-1]: r["text"] for r in exported}["q2"] == "4\u2028(two plus two)"
    import csv

    with (run / "export" / "responses.csv").open(newline="", encoding="utf-8") as f:
        assert len(list(csv.DictReader(f))) == 10
    import pyarrow.parquet as pq

    assert pq.read_table(run / "export" / "responses.parquet").num_rows == 10
    assert snapshot(tmp_path, skip=out) == before


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x85"])
def test_records_with_any_line_separator_round_trip_through_the_store(tmp_path, sep):
    # variant: each character str.splitlines() breaks at that JSON leaves unescaped (the C0 ones, \x1c or \x0b,
    # are written as \u escapes), in every text field of a record
    store = RunStore(tmp_path / "run")
    r = Response(item_id="b/1", model="m", text=f"a{sep}b", reasoning=f"r{sep}", error=None)
    s = Score(item_id="b/1", model="m", metric="em", value=1.0, rationale=f"x{sep}y", details={"k": f"v{sep}"})
    store.append("responses", [r])
    store.append("scores", [s])
    store.close()
    again = RunStore(tmp_path / "run")
    assert again.read("responses") == [r] and again.read("scores") == [s] and again.problems == []


def test_a_lone_surrogate_escape_in_a_record_file_is_repaired_and_flagged(tmp_path):
    # variant: another tool wrote "\ud800" (valid JSON) into responses.jsonl: the record is kept, repaired
    run = tmp_path / "run"
    run.mkdir()
    (run / "responses.jsonl").write_text(
        '{"item_id": "b/1", "model": "m", "text": "x\\ud800y"}\n{"item_id": "b/2", "model": "m", "text": "ok"}\n'
    )
    store = RunStore(run)
    rs = store.read("responses")
    assert [(r.text, r.text_repaired) for r in rs] == [("x\ufffdy", True), ("ok", False)]
    assert store.problems == []
    assert '"text_repaired":true' in rs[0].model_dump_json() and "text_repaired" not in rs[1].model_dump_json()


def test_a_benchmark_line_with_a_separator_loads_whole_and_a_lone_surrogate_prompt_names_its_line(tmp_path):
    from sgieval.benchmarks.jsonl import load_jsonl

    p = tmp_path / "qa.jsonl"
    p.write_text(
        json.dumps({"id": "a", "prompt": "first\u2028second", "reference": "x"}, ensure_ascii=False)
        + "\n"
        + json.dumps({"id": "b", "prompt": "ok\x85", "reference": "y"}, ensure_ascii=False)
        + "\n",
        encoding="utf-8",
    )
    items = load_jsonl(p)
    assert [i.prompt for i in items] == ["first\u2028second", "ok\x85"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "prompt": "fine", "reference": "x"}\n{"id": "b", "prompt": "bro\\udc80ken"}\n')
    with pytest.raises(InputError) as e:
        load_jsonl(bad)
    assert str(e.value) == (
        f"{bad} line 2: field 'prompt' holds a lone surrogate (\\udc80), which is no character. Fix: replace the "
        "escape \\udc80 by the character it stands for (a surrogate pair, or the character)"
    )
    # through the command line: exit 2, one line, no run folder left
    out = tmp_path / "runs"
    err = one_error_line(runner.invoke(app, ["ask", "", "-b", str(bad), "--yes", "--out", str(out)]))
    assert f"{bad} line 2: field 'prompt' holds a lone surrogate (\\udc80)" in err
    assert not out.exists() or not any(out.iterdir())


def test_a_replay_file_with_separators_and_a_surrogate_keeps_every_reply(tmp_path):
    # variant: replay files are split on "\n" only too, and their lone surrogates are repaired
    from sgieval.models.replay import load_jsonl_replay

    p = tmp_path / "m.jsonl"
    p.write_text(
        json.dumps({"item_id": "a", "text": "one\u2028two"}, ensure_ascii=False)
        + "\n"
        + json.dumps({"item_id": "b", "text": "x\ud800"})
        + "\n",
        encoding="utf-8",
    )
    store = load_jsonl_replay(p)
    from sgieval.core import Item

    got = {iid: store.respond(Item(id=iid, benchmark="t", task="generic", prompt="p"), "m") for iid in ("a", "b")}
    assert {k: (r.text, r.text_repaired) for k, r in got.items()} == {
        "a": ("one\u2028two", False),
        "b": ("x\ufffd", True),
    }


def test_a_labels_file_with_a_separator_and_a_lone_surrogate_keeps_both_labels(tmp_path):
    # variant: human labels (labels.jsonl) are read on "\n" only and repaired like replies
    from sgieval import load_run

    out = tmp_path / "runs"
    res = runner.invoke(
        app, ["ask", "Which model is the most creative in chemistry?", "--k", "2", "--yes"] + ["--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    (run,) = out.iterdir()
    s = next(x for x in load_run(run).scores if x.item_id != "*" and x.ok)
    unit = {"item_id": s.item_id, "model": s.model, "metric": s.metric, "value": s.value, "labeller": "ann"}
    f = tmp_path / "labels.jsonl"
    f.write_text(
        json.dumps({**unit, "note": "looks fine\u2028second line"}, ensure_ascii=False)
        + "\n"
        + json.dumps({**unit, "labeller": "bob", "note": "odd \ud800 char"})
        + "\n",
        encoding="utf-8",
    )
    before = snapshot(tmp_path, skip=run)
    res = runner.invoke(app, ["labels", "import", str(run), str(f)])
    assert res.exit_code == 0, res.output
    store = RunStore(run)
    labels = store.read("labels")
    assert [(x.labeller, x.note, x.text_repaired) for x in labels] == [
        ("ann", "looks fine\u2028second line", False),
        ("bob", "odd \ufffd char", True),
    ]
    store.close()
    assert snapshot(tmp_path, skip=run) == before
