"""Predefined metrics of a user JSONL benchmark (metric_pool/generic.py), and the
whole graph on a JSONL file (-b <file.jsonl>) with replayed targets."""

from __future__ import annotations

import asyncio
import json

import pytest

from sgieval.benchmarks.jsonl import load_jsonl
from sgieval.core import Item, Response, RunConfig
from sgieval.graphs.evaluate import execute, make_runtime
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.generic import ReferenceMatch, prediction_text, reference_text
from sgieval.benchmarks.registry import predefined_metrics

BENCH = [
    {"id": 1, "prompt": "What is 10*10? Answer with the number only.", "reference": "100", "discipline": "math"},
    {"id": 2, "prompt": "Chemical symbol of sodium?", "reference": "Na", "discipline": "chemistry"},
    {"id": 3, "prompt": "pi to two decimals?", "reference": 3.14, "discipline": "math"},
]
ANSWERS = {
    "a": ["100", "Sodium is <answer>na</answer>", "3.14159"],
    "b": [" 100 ", "Na", "about 3"],
}


def _write(tmp_path):
    bench = tmp_path / "quiz.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in BENCH))
    for model, texts in ANSWERS.items():
        (tmp_path / f"model-{model}.jsonl").write_text(
            "".join(json.dumps({"item_id": f"jsonl:quiz/{i + 1}", "text": t}) + "\n" for i, t in enumerate(texts))
        )
    return bench


def test_prediction_and_reference_text():
    assert prediction_text("x <answer> 1 </answer> then <answer>2</answer>\n") == "2"
    assert prediction_text("  plain  ") == "plain"
    assert (reference_text(3.14), reference_text([1, 2]), reference_text("Na")) == ("3.14", "[1, 2]", "Na")


@pytest.mark.parametrize(
    "text,exact,norm",
    [
        ("100", 1.0, 1.0),
        (" 100\n", 1.0, 1.0),
        ("100.0", 0.0, 1.0),  # "100" has 0 decimals: 100.0 rounds to 100
        ("<answer>NA</answer>", 0.0, None),
        ("99", 0.0, 0.0),
    ],
)
def test_reference_match_values(text, exact, norm):
    item = Item(id="jsonl:q/1", benchmark="jsonl:q", task="generic", prompt="p", reference={"answer": "100"})
    scores = asyncio.run(
        ReferenceMatch().score(item, Response(item_id=item.id, model="m", text=text), ScoringContext())
    )
    got = {s.metric: s.value for s in scores}
    assert got["exact_match"] == exact
    if norm is not None:
        assert got["exact_match_normalised"] == norm


def test_applies_only_to_jsonl_items_with_a_reference():
    m = ReferenceMatch()
    assert m.applies(Item(id="jsonl:q/1", benchmark="jsonl:q", task="t", prompt="p", reference={"answer": 0}))
    assert not m.applies(Item(id="jsonl:q/2", benchmark="jsonl:q", task="t", prompt="p"))
    assert not m.applies(Item(id="sfbench/1", benchmark="sfbench", task="t", prompt="p", reference={"answer": 1}))


def test_graph_ranks_a_jsonl_benchmark_by_exact_match(tmp_path):
    bench = _write(tmp_path)
    cfg = RunConfig(
        run_id="r",
        request="Which model is most accurate?",
        benchmarks=[str(bench)],
        out_dir=str(tmp_path / "runs"),
        yes=True,
        bootstrap_resamples=999,
        models=[f"replay:{tmp_path / 'model-a.jsonl'}", f"replay:{tmp_path / 'model-b.jsonl'}"],
    )
    rt = make_runtime(cfg)
    state = asyncio.run(execute(rt))
    assert state["metric_plan"]["primary"] == "exact_match"
    got = {(s.model, s.metric, s.item_id): s.value for s in rt.store.read("scores") if s.ok}
    # model a: "100" = "100" (1); "na" != "Na" (0, normalised 1); "3.14159" != "3.14" (0; rounded to 2 places 1)
    # model b: " 100 " stripped (1); "Na" (1); "about 3" (0, 0)
    exact = {
        m: sum(v for (mm, met, _), v in got.items() if mm == m and met == "exact_match")
        for m in ("replay:model-a", "replay:model-b")
    }
    norm = {
        m: sum(v for (mm, met, _), v in got.items() if mm == m and met == "exact_match_normalised")
        for m in ("replay:model-a", "replay:model-b")
    }
    assert exact == {"replay:model-a": 1.0, "replay:model-b": 2.0}
    assert norm == {"replay:model-a": 3.0, "replay:model-b": 2.0}
    report = (tmp_path / "runs" / "r" / "report.md").read_text()
    assert "## Ranking by exact_match" in report
    assert "| 1 | replay:model-b | 0.67 |" in report and "| 2 | replay:model-a | 0.33 |" in report
    assert "| exact_match_normalised | objective | 0-1 | 0.67 | 1.00 |" in report


def test_jsonl_without_references_has_no_predefined_metric(tmp_path):
    bench = tmp_path / "open.jsonl"
    bench.write_text(json.dumps({"id": "x", "prompt": "Propose an experiment."}) + "\n")
    items = load_jsonl(bench)
    assert predefined_metrics([items[0].benchmark], items) == []
    # without items to filter by, the module's metrics are listed
    assert [s.name for m in predefined_metrics([items[0].benchmark]) for s in m.specs] == [
        "exact_match",
        "exact_match_normalised",
        "numeric_match",
    ]


def test_relative_benchmark_path_and_rerender_without_the_source(tmp_path, monkeypatch):
    from sgieval.graphs.evaluate import report_run

    bench = _write(tmp_path)
    monkeypatch.chdir(tmp_path)
    cfg = RunConfig(
        run_id="r",
        request="Which model is most accurate?",
        benchmarks=["quiz.jsonl"],
        out_dir=str(tmp_path / "runs"),
        yes=True,
        bootstrap_resamples=999,
        models=[f"replay:{tmp_path / 'model-a.jsonl'}", f"replay:{tmp_path / 'model-b.jsonl'}"],
    )
    assert cfg.benchmarks == [str(bench)]  # kept absolute, so resume/report work from any folder
    rt = make_runtime(cfg)
    state = asyncio.run(execute(rt))
    report = (tmp_path / "runs" / "r" / "report.md").read_text()
    # the source is edited (item 2 moves to geology) and item 3 deleted: the run keeps its own copy
    bench.write_text(json.dumps({**BENCH[0]}) + "\n" + json.dumps({**BENCH[1], "discipline": "geology"}) + "\n")
    again = asyncio.run(report_run(make_runtime(cfg), state))
    assert again.read_text().split("## Answer")[1] == report.split("## Answer")[1]
    assert f"| data source | jsonl:quiz: {bench} |" in report
    bench.unlink()  # and without the source at all: only the data source line changes
    again = asyncio.run(report_run(make_runtime(cfg), state)).read_text()
    assert f"| data source | jsonl:quiz: {tmp_path / 'runs' / 'r' / 'items.jsonl'} (the run's copy) |" in again

    def body(text):
        return [line for line in text.split("## Answer")[1].splitlines() if not line.startswith("| data source |")]

    assert body(again) == body(report)


def test_two_replay_files_with_one_model_name_are_refused(tmp_path):
    from sgieval.core import InputError

    bench = _write(tmp_path)
    for d in ("x", "y"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "ans.jsonl").write_text((tmp_path / "model-a.jsonl").read_text())
    cfg = RunConfig(
        run_id="c",
        request="",
        benchmarks=[str(bench)],
        out_dir=str(tmp_path / "runs"),
        yes=True,
        models=[f"replay:{tmp_path / 'x' / 'ans.jsonl'}", f"replay:{tmp_path / 'y' / 'ans.jsonl'}"],
    )
    with pytest.raises(InputError) as ei:
        make_runtime(cfg)
    assert "two stored-response files give the same model name 'replay:ans'" in ei.value.one_line()
    assert not (tmp_path / "runs" / "c").exists()


@pytest.mark.parametrize(
    "text, expected",
    [
        # The reasoning before the last </think> is not the answer
        ("<think>6 x 7 = 42? check: yes</think>\n42", "42"),
        ("<think>maybe <answer>41</answer></think>\n<answer>42</answer>", "42"),
        ("<think>I will answer 42", ""),  # unclosed think: no answer
    ],
)
def test_prediction_text_after_reasoning(text, expected):
    assert prediction_text(text) == expected


async def test_exact_match_after_reasoning():
    it = Item(id="jsonl:q/1", benchmark="jsonl:q", task="generic", prompt="6*7?", reference={"answer": 42})
    got = await ReferenceMatch().score(
        it, Response(item_id=it.id, model="m", text="<think>...</think>\n42"), ScoringContext()
    )
    assert [(s.metric, s.value) for s in got] == [("exact_match", 1.0), ("exact_match_normalised", 1.0)]


# ------------------------------------------------ Answer extraction (METRICS.md D.3, D.9, D.11)
def _item(reference, options=None, iid="1"):
    ref = {"answer": reference, **({"options": options} if options is not None else {})}
    return Item(id=f"jsonl:q/{iid}", benchmark="jsonl:q", task="generic", prompt="?", reference=ref)


async def _scores(it, text):
    metrics = [m for m in predefined_metrics(["jsonl:q"], [it]) if m.applies(it)]
    out = {}
    for m in metrics:
        for s in await m.score(it, Response(item_id=it.id, model="m", text=text), ScoringContext()):
            out[s.metric] = s
    return out


@pytest.mark.parametrize(
    "reference, text, exact, normalised",
    [
        ("29", "<answer>$29.00</answer>", 0.0, 1.0),  # currency symbol, decimals of the reference
        ("29", "<answer>€ 29</answer>", 0.0, 1.0),
        ("1250", "1,250", 0.0, 1.0),  # thousands separator
        ("1250000", "1 250 000", 0.0, 1.0),
        ("ångström", "a\u030angstro\u0308m", 0.0, 1.0),  # decomposed vs composed (NFKC)
        ("Ångström", "\u212bngström", 0.0, 1.0),  # angstrom sign
        ("-5", "\u22125", 0.0, 1.0),  # minus sign
        ("0.5", "1/2", 0.0, 1.0),
        ("6.02e23", "6.02 × 10^23", 0.0, 1.0),
        ("29", "29.5", 0.0, 0.0),  # rounds to 30, not 29
        ("0.25", "0.25 mg", 0.0, 0.0),  # units are not converted
        ("Na", "Na", 1.0, 1.0),
    ],
)
async def test_normalised_exact_match(reference, text, exact, normalised):
    got = await _scores(_item(reference), text)
    assert (got["exact_match"].value, got["exact_match_normalised"].value) == (exact, normalised)


@pytest.mark.parametrize(
    "reference, text, value",
    [
        (42, "6 x 7 = 42", 1.0),
        (42, "<answer>about 42.3</answer>", 1.0),  # |42.3 - 42| = 0.3 <= 0.01 * 42
        (42, "<answer>42.5</answer>", 0.0),  # 0.5 > 0.42
        ("1250", "it costs $1,250.00 in total", 1.0),
        (3.14, "pi is 3.14159", 1.0),
        (0, "0.0", 1.0),
        (6.02e23, "N_A = 6.022 × 10^23 per mol", 1.0),
        (42, "<think>maybe 42</think>\nI do not know", 0.0),  # no number after the reasoning
        # a turn the model wrote for itself after its answer is cut before the number is read
        (1000, "10 x 100 = 1000\n#### 1000\n\nQuestion: How many legs do 5 ants have?\n#### 37.5", 1.0),
        (1000, "...#### 1000\n\nQuestion: ...\n#### 37.5", 1.0),
        (1000, "So 1000 in all.\n\nQ: And what is half of 75?\nA: 37.5", 1.0),
        (1000, "<answer>1000</answer>\n\nQuestion: next one?\n<answer>37.5</answer>", 1.0),
        (1000, "#### 1000\n#### 37.5", 1.0),  # a second #### block is a new turn
        (37.5, "...#### 1000\n\nQuestion: ...\n#### 37.5", 0.0),  # the continuation is not the answer
        # an explicit final-answer marker wins over later numbers
        (1000, "Answer: 1000 (10 boxes x 100)", 1.0),
        (8, "Answer: the total is 5 + 3 = 8", 1.0),
        (12, "\\boxed{12}, checked with 3 x 4 = 12 and 2 x 6", 1.0),
        (5, "Final Answer: The final answer is $5$. I hope it is correct.", 1.0),
        # unit exponents are not answers
        (3.0e-4, "The rate constant is k = 3.0e-4 s^-1", 1.0),
        (3.0e-4, "k = 3.0 x 10^-4 s\u207b\u00b9", 1.0),  # superscript unit exponent (NFKC: s-1)
        (6.02e23, "N_A = 6.02 \u00d7 10^23 mol\u207b\u00b9", 1.0),
        (2.5e-3, "k = 2.5 \\times 10^{-3} M^{-1} s^{-1}", 1.0),
        (9.81, "g = 9.81 m/s^2", 1.0),
        (9.81, "g = 9.81 m/s\u00b2", 1.0),
        (44, "CO2 has a molar mass of 44 g/mol", 1.0),
        # a sentence's full stop after a fraction is not a decimal point
        (0.5, "the two are equal, i.e. 1/2.", 1.0),
        (0.75, "so p = 3/4.", 1.0),
        # a bare power of ten is a number; Markdown bold is no exponent
        (1e5, "x = 10**5 m", 1.0),
        (1e5, "it is 10^5.", 1.0),
        (1e-3, "about 10^{-3} M", 1.0),
        (7, "- **Answer:** 7", 1.0),
        # "answer" inside a sentence is no marker unless a number follows at once
        (42, "To answer: we compute 5 x 3 = 15.\nThen more.\nSo 42 in total.", 1.0),
        (42, "The answer is not obvious; compute 6 first.\nSo 42.", 1.0),
        (12, "so the answer is 12 apples, since 3 x 4 and 2 x 6", 1.0),
    ],
)
async def test_numeric_match(reference, text, value):
    got = await _scores(_item(reference), text)
    assert got["numeric_match"].value == value


@pytest.mark.parametrize(
    "text,prediction,found_by",
    [
        ("...#### 1000\n\nQuestion: ...\n#### 37.5", "1000", "#### line"),
        ("The rate constant is k = 3.0e-4 s^-1", "0.00030", "last number"),
        ("so \\boxed{1/2}", "1/2", "\\boxed{}"),
        ("Answer: I don't know", None, "a final-answer marker without a number"),
        ("no digits here", None, "no number found"),
    ],
)
async def test_numeric_match_records_what_it_read(text, prediction, found_by):
    s = (await _scores(_item(1000), text))["numeric_match"]
    assert (s.details["prediction"], s.details["found_by"], s.status) == (prediction, found_by, "ok")
    assert s.details.get("no_answer", False) is (prediction is None)


async def test_numeric_match_applies_to_numeric_references_only():
    assert "numeric_match" not in await _scores(_item("Na"), "Na")
    assert "numeric_match" not in await _scores(_item("B", ["x", "y"]), "B")
    none = (await _scores(_item(42), "I do not know"))["numeric_match"]
    assert (none.value, none.details["no_answer"]) == (0.0, True)


OPTS = ["red", "blue", "green", "white"]


@pytest.mark.parametrize(
    "reference, text, exact, found",
    [
        ("B", r"so \boxed{B}", 1.0, "B"),
        ("D", "reasoning...\nANSWER: D", 1.0, "D"),
        ("D", "reasoning...\nANSWER: $D$", 1.0, "D"),
        ("D", "reasoning...\nAnswer: **D**", 1.0, "D"),
        ("D", "reasoning...\nanswer: (D).", 1.0, "D"),
        ("D", "reasoning...\n**ANSWER:** D", 1.0, "D"),
        ("D", r"\boxed{D} and finally \boxed{\langle H\rangle}", 1.0, "D"),
        ("D", "<answer>D</answer>", 1.0, "D"),
        ("D", "D", 1.0, "D"),
        ("D", "ANSWER: d", 0.0, "d"),  # case-sensitive; the normalised variant ignores case
        (3, r"\boxed{D}", 1.0, "D"),  # 0-based index reference
        ("white", r"\boxed{D}", 1.0, "D"),  # option-text reference
        # no answer: not option I, not a wrong answer
        ("D", "I am not sure.\nANSWER: I don't know", 0.0, None),
        ("D", "ANSWER: B and C", 0.0, None),
        ("D", "ANSWER: H", 0.0, None),  # not an option letter
        ("D", "ANSWER: D\nbut maybe not", 0.0, None),  # not the final line
        # *X*, _X_ and a trailing period are unwrapped; the whole line in bold
        ("B", "reasoning...\nANSWER: *B*.", 1.0, "B"),
        ("B", "reasoning...\nANSWER: _B_", 1.0, "B"),
        ("D", "reasoning...\n**Answer: D**", 1.0, "D"),
        # box and line: the later one counts
        ("C", r"\boxed{A}" + "\n\nOn reflection:\nANSWER: C", 1.0, "C"),
        ("A", "ANSWER: C\n\nso " + r"\boxed{A}", 1.0, "A"),
    ],
)
async def test_multiple_choice_answers(reference, text, exact, found):
    got = await _scores(_item(reference, OPTS), text)
    em = got["exact_match"]
    assert (em.value, em.details["prediction"]) == (exact, found)
    assert em.details.get("no_answer", False) is (found is None)


async def test_multiple_choice_through_the_jsonl_loader(tmp_path):
    p = tmp_path / "mc.jsonl"
    p.write_text(
        json.dumps({"id": 1, "prompt": "Colour?", "reference": "B", "options": ["red", "blue"]})
        + "\n"
        + json.dumps({"id": 2, "prompt": "Letter?", "reference": "C", "options": {"A": "x", "C": "y"}})
        + "\n"
    )
    items = load_jsonl(p)
    assert items[0].reference == {"answer": "B", "options": ["red", "blue"]}
    assert (await _scores(items[0], "ANSWER: B"))["exact_match"].value == 1.0
    assert (await _scores(items[1], r"\boxed{C}"))["exact_match"].value == 1.0
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": 1, "prompt": "?", "options": {"AB": "x"}}) + "\n")
    with pytest.raises(Exception, match="option keys must be single letters"):
        load_jsonl(bad)
