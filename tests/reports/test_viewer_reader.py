"""The viewer a researcher reads: the item table (question text, sorting, a column per target model), the stored
answer lists with each answer's coherence and novelty and the rejected last one marked, the judge's full prompt kept
once per hash and shown beside its reply, columns that fit six target models, the Answer's sentences linking to
the items behind them, the runs index and the compare page.

Runs: the chemistry questions of the stored SciAidanBench answers (../shared/data) with their six stored models and
with two of them; a small JSONL benchmark scored by a scripted rubric judge through the real graph.  Browser tests
drive Debian's headless Chromium through Playwright (marked ``browser``: the slow suite); each keeps its screenshots
in the folder it tests (``<run>/screenshots/<test>.png``) and asserts they were written.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.core import GENERIC, Item, RunConfig, RunStore, Score, prompt_hash
from sgieval.graphs.evaluate import execute, make_runtime
from sgieval.models.base import NamedModel
from sgieval.reports.viewer import QUESTION_CHARS, answer_links, build_viewer_data, question_text, scores_by_item
from sgieval.tests.browser import Chromium

runner = CliRunner()
CHEM = "Which model is the most creative in chemistry?"
WHERE = "Which model is most creative, and where do the models differ across disciplines?"
METRIC = "aidan_accepted_answers"
SIX = [
    "replay:o1-mini",
    "replay:openai/4o",
    "replay:phi4:latest",
    "replay:llama3.3:latest",
    "replay:qwen2.5:latest",
    "replay:mistral:latest",
]


# ------------------------------------------------------------------------------------------------- runs
@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A runs folder with the chemistry questions answered by two stored models ("two") and by all six ("six")."""
    out = tmp_path_factory.mktemp("reader-runs")
    res = runner.invoke(app, ["ask", CHEM, "--yes", "--out", str(out), "--models", "replay:o1-mini,replay:phi4"])
    assert res.exit_code == 0, res.output
    (two,) = [p for p in out.iterdir() if p.is_dir()]
    res = runner.invoke(app, ["ask", CHEM, "--yes", "--out", str(out)])
    assert res.exit_code == 0, res.output
    (six,) = [p for p in out.iterdir() if p.is_dir() and p != two]
    for run in (two, six):
        assert runner.invoke(app, ["view", str(run)]).exit_code == 0
    return {"out": out, "two": two, "six": six}


class RecordingJudge(BaseChatModel):
    """A rubric judge giving every criterion 2 + the count of "careful" in the prompt (at most 10); it keeps every
    prompt it receives (as OpenAI-style messages) in ``seen``."""

    seen: list = []

    @property
    def _llm_type(self) -> str:
        return "recording-judge"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(convert_to_openai_messages(list(messages)))
        text = "\n".join(str(m.content) for m in messages)
        names = re.findall(r"^- (.+?) \(weight [^)]*\):", text, flags=re.M)
        score = min(10, 2 + text.count("careful"))
        reply = json.dumps({"scores": [{"criterion": n, "score": score, "rationale": f"seen {score}"} for n in names]})
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


LONG = " State the hypothesis, the measurement, the control and the threshold that would refute the claim." * 3
"""Makes item q2's question longer than the item table shows."""


def answer(model: str, i: int) -> str:
    # the two models answer items 0 and 1 alike (the judge then gets one prompt for both), item 2 differently
    return f"Answer {i}." + " careful" * (i if i < 2 or model == "tidy" else 0)


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> tuple[Path, RecordingJudge]:
    root = tmp_path_factory.mktemp("judged")
    bench = root / "bench.jsonl"
    bench.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"q{i}",
                    "prompt": f"Propose a rigorous test of claim {i}." + LONG * (i == 2),
                    "task": "open_ended",
                }
            )
            + "\n"
            for i in range(3)
        )
    )
    models = []
    for name in ("tidy", "terse"):
        f = root / f"{name}.jsonl"
        f.write_text(
            "".join(json.dumps({"item_id": f"jsonl:bench/q{i}", "text": answer(name, i)}) + "\n" for i in range(3))
        )
        models.append(f"replay:{f}")
    chat = RecordingJudge(seen=[])
    cfg = RunConfig(
        run_id="judged",
        request="Which model is most rigorous?",
        benchmarks=[str(bench)],
        out_dir=str(root / "runs"),
        yes=True,
        bootstrap_resamples=99,
        models=models,
        judges=["openai:recording-judge"],
        tools=[],
    )
    judge = NamedModel(name="openai:recording-judge", role="judge", chat=chat, provider="scripted-recording")
    state = asyncio.run(execute(make_runtime(cfg, judges=[judge])))
    run = Path(state["report"]).parent
    assert runner.invoke(app, ["view", str(run)]).exit_code == 0
    return run, chat


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _js(path: Path, name: str) -> Any:
    return json.loads(path.read_text(encoding="utf-8").removeprefix(f"window.{name} = ").rstrip(";\n"))


# ------------------------------------------------------------------------------------------ data level
def test_judge_prompts_are_stored_once_per_hash(judged):
    run, chat = judged
    scores = [s for s in _lines(run / "scores.jsonl") if s["metric"] == "rigor"]
    prompts = _lines(run / "prompts.jsonl")
    # 6 scores (3 items x 2 models); items 0 and 1 got the same answer from both models: 4 distinct prompts
    assert len(scores) == 6 and len(prompts) == 4
    hashes = [p["hash"] for p in prompts]
    assert len(set(hashes)) == 4
    by_hash = {p["hash"]: p for p in prompts}
    named = [e["prompt_hash"] for s in scores for e in s["evidence"] if e["kind"] == "judge_reply"]
    assert len(named) == 6 and set(named) == set(hashes)
    # the stored messages are what the judge received, and the hash is the hash of them
    seen = {json.dumps(x, sort_keys=True) for x in chat.seen}
    assert seen == {json.dumps(p["messages"], sort_keys=True) for p in prompts}
    for p in prompts:
        assert p["hash"] == prompt_hash(p["messages"], p.get("response_format"))
        assert [m["role"] for m in p["messages"]] == ["system", "user"]
    # the scores carry only the hash, never the messages
    assert all('"messages"' not in line for line in (run / "scores.jsonl").read_text().splitlines())
    q2 = {("tidy" if "tidy" in s["model"] else "terse"): s for s in scores if s["item_id"] == "jsonl:bench/q2"}
    tidy_h = q2["tidy"]["evidence"][0]["prompt_hash"]
    assert tidy_h != q2["terse"]["evidence"][0]["prompt_hash"]
    assert "Answer 2. careful careful" in by_hash[tidy_h]["messages"][1]["content"]
    # the viewer's texts hold each prompt once, by hash
    texts = _js(run / "viewer" / "text.js", "SGV_TEXT")
    assert sorted(texts["prompts"]) == sorted(hashes)
    assert texts["prompts"][tidy_h]["messages"] == by_hash[tidy_h]["messages"]


def test_appending_the_same_scores_again_adds_no_prompt(judged, tmp_path):
    run, _ = judged
    store = RunStore(shutil.copytree(run, tmp_path / "run"))
    stored = store.prompts()
    h = next(iter(stored))
    again = Score(
        item_id="jsonl:bench/q0",
        model="m",
        metric="rigor",
        value=1.0,
        evidence=[{"kind": "judge_reply", "judge": "j", "prompt_hash": h, "prompt": {"hash": h, **stored[h]}}],
    )
    new = {"hash": "0" * 16, "messages": [{"role": "user", "content": "new"}]}
    other = again.model_copy(update={"model": "m2", "evidence": [again.evidence[0].model_copy(update={"prompt": new})]})
    store.append("scores", [again, other])
    store.close()
    lines = _lines(tmp_path / "run" / "prompts.jsonl")
    assert [p["hash"] for p in lines] == [p for p in stored] + ["0" * 16]
    assert RunStore(tmp_path / "run").prompts()["0" * 16]["messages"] == [{"role": "user", "content": "new"}]


def test_a_run_folder_without_prompts_stays_readable(judged, tmp_path):
    run = Path(shutil.copytree(judged[0], tmp_path / "old"))
    (run / "prompts.jsonl").unlink()
    old = []
    for s in _lines(run / "scores.jsonl"):
        for e in s["evidence"]:
            e.pop("prompt_hash", None)
        old.append(json.dumps(s))
    (run / "scores.jsonl").write_text("\n".join(old) + "\n")
    store = RunStore(run)
    assert store.prompts() == {}
    scores = store.read("scores")
    assert len(scores) == 6 and all(e.prompt_hash == "" for s in scores for e in s.evidence if e.kind == "judge_reply")
    _, texts = build_viewer_data(store.read("items"), store.read("responses"), scores, prompts=store.prompts())
    assert texts["prompts"] == {}


def test_question_text_is_cut_on_one_line():
    assert question_text("What is\n  the  answer?") == "What is the answer?"
    long = "word " * 100
    cut = question_text(long)
    assert len(cut) == QUESTION_CHARS and cut.endswith("\u2026") and cut.startswith("word word")
    assert question_text("x" * QUESTION_CHARS) == "x" * QUESTION_CHARS


def test_answer_marks_of_the_stored_chemistry_answers(runs):
    store = RunStore(runs["six"])
    acc = {(s.item_id, s.model): s for s in store.read("scores") if s.metric == METRIC}
    records = {(r.item_id, r.model): r.metadata["records"] for r in store.read("responses")}
    key = ("sciaidanbench/chemistry/1", "replay:qwen2.5:latest")
    marks = acc[key].details["answers"]
    # the stored list: answer 1 (coherence 35, novelty 1.0) accepted; answer 2 with coherence 10 <= 15 ended it
    assert [(m["n"], m["coherence"], m["novelty"], m["accepted"], m["rejected"], m["reason"]) for m in marks] == [
        (1, 35.0, 1.0, True, False, None),
        (2, 10.0, pytest.approx(0.18689966955936455), False, True, "incoherent"),
    ]
    o1 = acc[("sciaidanbench/chemistry/1", "replay:o1-mini")].details["answers"]
    assert [(m["rejected"], m["reason"]) for m in o1] == [(False, None), (True, "not novel (embedding)")]
    assert o1[1]["novelty"] == pytest.approx(0.11085475333701955) and o1[1]["llm_novelty"] == pytest.approx(0.15)
    # every stored answer has its mark, the accepted ones are the score's value
    for k, s in acc.items():
        if k[0] == "*" or not s.ok:
            continue
        got = s.details["answers"]
        assert [m["coherence"] for m in got] == [
            None if r.get("coherence_score") is None else float(r["coherence_score"]) for r in records[k]
        ]
        assert sum(m["accepted"] for m in got) == s.value


def test_answer_links_name_the_items_behind_each_sentence():
    items = [
        Item(id=f"b/{k}", benchmark="b", task=GENERIC, discipline="Biology" if k < 3 else "Nanoscience", prompt="p")
        for k in range(5)
    ]
    sc = []
    for k, it in enumerate(items):
        for m in ("m:a", "m:a:latest"):
            if m == "m:a:latest" and k == 4:
                continue  # m:a:latest has no score for b/4
            sc.append(Score(item_id=it.id, model=m, metric="acc", value=float(k), details={"censored": k == 1}))
    report = {
        "ranking": {"metric": "acc", "rows": []},
        "answer": {
            "verdict": "**m:a** ranks first by acc.",
            "how_sure": ["Against m:a:latest the paired test gives p = 0.5."],
            "where": ["m:a leads m:a:latest most in Nanoscience (discipline).", "Item b/1 departs most."],
            "caveats": ["1 censored stored list is counted.", "Nothing else."],
        },
    }
    index, _ = build_viewer_data(items, [], sc, report=report)
    links = index["answer_links"]
    assert links == answer_links(
        report, items, scores_by_item(index["scores"], index["rows"], index["models"], index["metrics"], items)
    )
    # "m:a" is not counted inside "m:a:latest"; every item m:a has a score for
    assert links["**m:a** ranks first by acc."]["models"] == ["m:a"]
    assert links["**m:a** ranks first by acc."]["items"] == ["b/0", "b/1", "b/2", "b/3", "b/4"]
    # both models named: the items both have a score for
    assert links["Against m:a:latest the paired test gives p = 0.5."]["items"] == ["b/0", "b/1", "b/2", "b/3"]
    nano = links["m:a leads m:a:latest most in Nanoscience (discipline)."]
    assert (nano["models"], nano["facet"], nano["value"], nano["items"]) == (
        ["m:a", "m:a:latest"],
        "discipline",
        "Nanoscience",
        ["b/3"],
    )
    assert links["Item b/1 departs most."]["ids"] == ["b/1"]
    assert links["1 censored stored list is counted."]["flags"] == ["censored"]
    assert links["1 censored stored list is counted."]["items"] == ["b/1"]
    assert (
        links["Nothing else."]["items"] == ["b/0", "b/1", "b/2", "b/3", "b/4"]
        and links["Nothing else."]["models"] == []
    )


# ------------------------------------------------------------------------------------------ browser
def _viewer(run: Path, view: str = "") -> str:
    return (run / "viewer" / "index.html").as_uri() + view


def _column(page, col: str) -> list[str]:
    return page.eval_on_selector_all(
        "#items-table tbody tr",
        "(rs, col) => rs.map(r => r.children[[...document.querySelectorAll('#items-table thead th')]"
        ".findIndex(h => h.dataset.col === col)].textContent)",
        col,
    )


def _accepted(run: Path, model: str) -> dict[str, float]:
    return {
        s["item_id"]: s["value"]
        for s in _lines(run / "scores.jsonl")
        if s["metric"] == METRIC and s["model"] == model and s["item_id"] != "*" and s["status"] == "ok"
    }


@pytest.mark.browser
def test_browser_item_table_sorts_and_shows_the_question(runs, tmp_path):
    run = runs["six"]
    o1 = _accepted(run, "replay:o1-mini")
    b = Chromium(tmp_path / "profile", files_only=True)
    try:
        page = b.page
        page.goto(_viewer(run, "#/items?model=replay:o1-mini"))
        page.wait_for_selector("#app[data-texts='loaded']")
        # item ids sort by their number: chemistry/2 before chemistry/10
        page.click("#items-table th[data-col='item']")
        page.wait_for_selector("#items-table th[data-col='item'][aria-sort='ascending']")
        ids = _column(page, "item")
        assert ids[:4] == [f"sciaidanbench/chemistry/{k}" for k in range(4)] and ids[10] == "sciaidanbench/chemistry/10"
        assert ids[-1] == "(corpus-level)"  # no item: last either way
        # the value column: ascending, then descending on a second click; numbers compare as numbers
        head = f"#items-table th[data-col='m:{METRIC}']"
        page.click(head)
        page.wait_for_selector(head + "[aria-sort='ascending']")
        asc = [float(v) for v in _column(page, f"m:{METRIC}") if v]
        assert asc == sorted(o1.values()) and asc[0] == 0 and asc[-1] == 41
        page.click(head)
        page.wait_for_selector(head + "[aria-sort='descending']")
        desc = _column(page, "item")
        # o1-mini's most accepted answers: 41 on chemistry/4, then 37 on chemistry/20 (hand-read from scores.jsonl)
        assert desc[:2] == ["sciaidanbench/chemistry/4", "sciaidanbench/chemistry/20"]
        assert [o1[i] for i in desc[:2]] == [41, 37]
        assert [o1[i] for i in desc[:-1]] == sorted(o1.values(), reverse=True)
        assert page.inner_text(head + " .sort-mark").strip() == "\u25bc"
        b.shot(run, "items-sorted")
        # the question: cut in the cell, the full text on hover (title) and on click
        cell = page.locator("#items-table tbody tr[data-item='sciaidanbench/chemistry/4'] td.question")
        prompts = {it["id"]: it["prompt"] for it in _lines(run / "items.jsonl")}
        assert cell.get_attribute("title") == prompts["sciaidanbench/chemistry/4"]
        assert cell.inner_text() == question_text(prompts["sciaidanbench/chemistry/4"])
        # one row per item, a column per target model: sort by openai/4o
        page.click("#layout-models")
        page.wait_for_selector("#items-table[data-layout='models']")
        assert page.inner_text("#pager-info") == "page 1 of 1 \u00b7 25 rows"
        gpt = _accepted(run, "replay:openai/4o")
        head = "#items-table th[data-col='v:replay:openai/4o']"
        page.click(head)
        page.click(head)
        page.wait_for_selector(head + "[aria-sort='descending']")
        order = _column(page, "item")
        assert order[0] == "sciaidanbench/chemistry/9" and gpt[order[0]] == 48
        assert [gpt[i] for i in order] == sorted(gpt.values(), reverse=True)
        assert _column(page, "v:replay:openai/4o")[0] == "48"
        b.shot(run, "items-by-model-sorted")
        assert b.errors == []
    finally:
        b.close()
    assert (run / "screenshots" / "items-sorted.png").is_file()
    assert (run / "screenshots" / "items-by-model-sorted.png").is_file()


@pytest.mark.browser
def test_browser_six_model_columns_fit_and_fold(runs, tmp_path):
    run = runs["six"]
    b = Chromium(tmp_path / "profile", files_only=True)
    try:
        page = b.page
        page.goto(_viewer(run, "#/item/sciaidanbench%2Fchemistry%2F1"))
        page.wait_for_selector(".model-col")
        boxes = page.eval_on_selector_all(
            ".models .model-col", "cs => cs.map(c => [c.dataset.model, c.getBoundingClientRect().right])"
        )
        assert [m for m, _ in boxes] == SIX
        assert all(right <= 1400 for _, right in boxes)  # side by side within the window, no sideways scrolling
        assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        b.shot(run, "six-models-item")
        # the model picker: leave out phi4 -> five columns
        page.uncheck("#model-picker input[data-model='replay:phi4:latest']")
        page.wait_for_function("document.querySelectorAll('.models .model-col').length === 5")
        assert "replay:phi4:latest" not in page.eval_on_selector_all(".model-col", "cs => cs.map(c => c.dataset.model)")
        # fold mistral's column: a narrow strip, the others widen
        page.click(".model-col[data-model='replay:mistral:latest'] button.fold")
        page.wait_for_selector(".model-col.collapsed[data-model='replay:mistral:latest']")
        width = page.eval_on_selector(
            ".model-col[data-model='replay:mistral:latest']", "c => c.getBoundingClientRect().width"
        )
        assert width <= 40
        b.shot(run, "six-models-picked-folded")
        # the item table with a column per model: six value columns, within the window
        page.goto(_viewer(run, "#/items?layout=models"))
        page.wait_for_selector("#items-table[data-layout='models']")
        cols = page.eval_on_selector_all("#items-table thead th", "hs => hs.map(h => h.dataset.col)")
        assert cols == ["item", "question", "discipline", "task", *[f"v:{m}" for m in SIX]]
        assert page.evaluate(
            "document.querySelector('#items-table').getBoundingClientRect().right <= window.innerWidth"
        )
        b.shot(run, "six-models-table")
        assert b.errors == []
    finally:
        b.close()
    for name in ("six-models-item", "six-models-picked-folded", "six-models-table"):
        assert (run / "screenshots" / f"{name}.png").is_file()


@pytest.mark.browser
def test_browser_answer_list_marks(runs, tmp_path):
    run = runs["six"]
    records = {
        (r["item_id"], r["model"]): r["metadata"]["records"]
        for r in _lines(run / "responses.jsonl")
        if r["item_id"] == "sciaidanbench/chemistry/1"
    }
    b = Chromium(tmp_path / "profile", files_only=True)
    try:
        page = b.page
        page.goto(_viewer(run, "#/item/sciaidanbench%2Fchemistry%2F1"))
        page.wait_for_selector(".answer-list")
        for model in SIX:
            col = page.locator(f".model-col[data-model='{model}'] .answer-list li.answer")
            recs = records[("sciaidanbench/chemistry/1", model)]
            assert col.count() == len(recs)
            states = col.evaluate_all("ls => ls.map(l => l.dataset.state)")
            # the last stored answer ended each list (every one by the stop rule here), the others were accepted
            assert states == ["accepted"] * (len(recs) - 1) + ["rejected"]
            assert col.locator(".answer-cell").all_text_contents() == [r["answer"] for r in recs]
        qwen = page.locator(".model-col[data-model='replay:qwen2.5:latest'] .answer-list li.answer")
        assert qwen.nth(0).locator(".coherence").text_content() == "coherence 35"
        last = qwen.nth(1)
        assert last.locator(".coherence").text_content() == "coherence 10"
        assert "below" in last.locator(".coherence").get_attribute("class")  # 10 <= 15 ended the list
        assert "below" not in last.locator(".novelty").get_attribute("class")
        assert last.locator(".novelty").text_content() == "novelty 0.187"
        assert last.locator(".mark").text_content() == "rejected: incoherent"
        o1 = page.locator(".model-col[data-model='replay:o1-mini'] .answer-list li.answer").nth(1)
        assert o1.locator(".novelty").text_content() == "novelty 0.111"  # 0.111 < 0.15
        assert "below" in o1.locator(".novelty").get_attribute("class")
        assert o1.locator(".mark").text_content() == "rejected: not novel (embedding)"
        assert o1.locator(".llm-novelty").text_content() == "LLM novelty 0.150"
        page.set_viewport_size({"width": 1400, "height": 1300})
        b.shot(run, "answer-list-marks")
        assert b.errors == []
    finally:
        b.close()
    assert (run / "screenshots" / "answer-list-marks.png").is_file()


@pytest.mark.browser
def test_browser_judge_prompt_beside_the_reply(judged, tmp_path):
    run, _ = judged
    prompts = {p["hash"]: p for p in _lines(run / "prompts.jsonl")}
    (score,) = [
        s
        for s in _lines(run / "scores.jsonl")
        if s["item_id"] == "jsonl:bench/q2" and s["metric"] == "rigor" and "tidy" in s["model"]
    ]
    ev = score["evidence"][0]
    b = Chromium(tmp_path / "profile", files_only=True)
    try:
        page = b.page
        page.goto(_viewer(run, "#/item/jsonl%3Abench%2Fq2"))
        page.wait_for_selector(".model-col")
        col = page.locator(f".model-col[data-model='{score['model']}']")
        col.locator("button.label-show").click()  # the blind labelling form: see the judge's score without a label
        col.locator(".score[data-metric='rigor'] details.evidence > summary").click()
        shown = col.locator(f".judge-prompt[data-hash='{ev['prompt_hash']}']")
        shown.wait_for()
        msgs = prompts[ev["prompt_hash"]]["messages"]
        assert shown.locator(".prompt-msg").evaluate_all("ms => ms.map(m => m.dataset.role)") == ["system", "user"]
        assert shown.locator(".prompt-msg pre").all_text_contents() == [m["content"] for m in msgs]
        assert "Answer 2. careful careful" in msgs[1]["content"]
        reply = col.locator(".judge-exchange .judge-reply pre.raw-reply")
        assert reply.all_text_contents() == ev["raw"]
        # prompt and reply side by side
        p_box, r_box = shown.bounding_box(), reply.first.bounding_box()
        assert p_box and r_box and p_box["x"] + p_box["width"] <= r_box["x"] + 1
        b.shot(run, "judge-prompt")
        # the item table cuts q2's long question; the full text on hover and on a click
        page.goto(_viewer(run, "#/items"))
        page.wait_for_selector("#app[data-texts='loaded']")
        full = "Propose a rigorous test of claim 2." + LONG
        cell = page.locator("#items-table tbody tr[data-item='jsonl:bench/q2'] td.question").first
        assert cell.get_attribute("title") == full
        assert cell.inner_text() == question_text(full) and cell.inner_text().endswith("\u2026")
        cell.click()
        assert cell.inner_text() == full and "expanded" in cell.get_attribute("class")
        b.shot(run, "question-expanded")
        assert b.errors == []
    finally:
        b.close()
    assert (run / "screenshots" / "judge-prompt.png").is_file()
    assert (run / "screenshots" / "question-expanded.png").is_file()


@pytest.mark.browser
def test_browser_answer_sentences_link_to_their_items(tmp_path_factory, tmp_path):
    out = tmp_path_factory.mktemp("where-runs")
    res = runner.invoke(app, ["ask", WHERE, "--yes", "--out", str(out)])
    assert res.exit_code == 0, res.output
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    assert runner.invoke(app, ["view", str(run)]).exit_code == 0
    data = _js(run / "viewer" / "data.js", "SGV_DATA")
    (sentence,) = [s for s in data["report"]["answer"]["where"] if s.startswith("The models differ most in")]
    link = data["answer_links"][sentence]
    nano = [json.loads(line)["id"] for line in (run / "items.jsonl").read_text().splitlines()]
    nano = [i for i in nano if "nanoscience" in i]
    # the sentence: "... in Nanoscience (discipline): replay:o1-mini (28.47) against replay:openai/4o (11.66) ..."
    assert (link["facet"], link["value"], link["models"]) == (
        "discipline",
        "Nanoscience",
        ["replay:o1-mini", "replay:openai/4o"],
    )
    assert sorted(link["items"]) == sorted(nano) and len(nano) == 32
    o1, gpt = _accepted(run, "replay:o1-mini"), _accepted(run, "replay:openai/4o")
    assert sum(o1[i] for i in nano) / 32 == pytest.approx(28.47, abs=0.005)
    b = Chromium(tmp_path / "profile", files_only=True)
    try:
        page = b.page
        page.goto(_viewer(run))
        page.wait_for_selector("#answer")
        page.locator(".answer-sentence", has_text="The models differ most in").locator("a.answer-items").click()
        page.wait_for_selector("#items-table[data-layout='models']")
        assert page.inner_text("#pager-info") == "page 1 of 1 \u00b7 32 rows"
        cols = page.eval_on_selector_all("#items-table thead th", "hs => hs.map(h => h.dataset.col)")
        assert cols[-3:] == ["v:replay:o1-mini", "v:replay:openai/4o", "gap"]
        order = _column(page, "item")
        gaps = [o1[i] - gpt[i] for i in order]
        assert sorted(order) == sorted(nano) and gaps == sorted(gaps, reverse=True)  # largest gap first
        b.shot(run, "answer-sentence-items")
        # a departing item in the "where" section links to its page
        page.goto(_viewer(run))
        page.wait_for_selector("[data-table='departures']")
        first = page.locator("[data-table='departures'] tbody tr:first-child a")
        target = first.inner_text()
        first.click()
        page.wait_for_selector("#item-id")
        assert page.inner_text("#item-id") == target
        assert b.errors == []
    finally:
        b.close()
    assert (run / "screenshots" / "answer-sentence-items.png").is_file()


@pytest.mark.browser
def test_browser_runs_index(runs, tmp_path):
    out = runs["out"]
    res = runner.invoke(app, ["view", "--out", str(out)])
    assert res.exit_code == 0, res.output
    home = out / "index.html"
    b = Chromium(tmp_path / "profile", files_only=True)
    try:
        page = b.page
        page.goto(home.as_uri())
        page.wait_for_selector("#runs-index")
        ids = page.eval_on_selector_all("#runs-index tr.run-row", "rs => rs.map(r => r.dataset.runId)")
        assert sorted(ids) == sorted([runs["two"].name, runs["six"].name])
        six = page.locator(f"#runs-index tr.run-row[data-run-id='{runs['six'].name}']")
        assert six.get_attribute("data-status") == "complete"
        assert six.locator("td.col-request").inner_text() == CHEM
        assert "replay:o1-mini" in six.locator("td.col-winner").inner_text()
        b.shot(out, "runs-index")
        six.locator("a.run-link").click()
        page.wait_for_selector("#ranking")
        assert page.inner_text("#ranking tbody tr:first-child td:nth-child(2)") == "replay:o1-mini"
        assert b.errors == []
    finally:
        b.close()
    assert (out / "screenshots" / "runs-index.png").is_file()


@pytest.mark.browser
def test_browser_compare_page(runs, tmp_path):
    out, two, six = runs["out"], runs["two"], runs["six"]
    res = runner.invoke(app, ["compare", two.name, six.name, "--out", str(out), "--resamples", "999"])
    assert res.exit_code == 0, res.output
    folder = out / f"compare-{two.name}-{six.name}"
    data = json.loads((folder / "compare.json").read_text())
    b = Chromium(tmp_path / "profile", files_only=True)
    try:
        page = b.page
        page.goto((folder / "index.html").as_uri())
        page.wait_for_selector("#compare-changes")
        assert page.eval_on_selector_all("#compare-runs tr.compare-run", "rs => rs.map(r => r.dataset.runId)") == [
            two.name,
            six.name,
        ]
        # the same stored answers in both runs: o1-mini and phi4 did not change (p = 1)
        rows = page.locator("#compare-changes tr.change-row")
        assert sorted(rows.evaluate_all("rs => rs.map(r => r.dataset.model)")) == [
            "replay:o1-mini",
            "replay:phi4:latest",
        ]
        assert set(rows.evaluate_all("rs => rs.map(r => r.dataset.real)")) == {"no"}
        ranked = page.eval_on_selector_all("#compare-ranking tr.ranking-row", "rs => rs.map(r => r.dataset.entry)")
        assert ranked == [r["entry"] for r in data["ranking"]] and len(ranked) == 6 and ranked[0] == "replay:o1-mini"
        b.shot(folder, "compare")
        # the home page links the comparison
        assert runner.invoke(app, ["view", "--out", str(out)]).exit_code == 0
        page.goto((out / "index.html").as_uri())
        page.wait_for_selector("#compare-index a.compare-link")
        page.click("#compare-index a.compare-link")
        page.wait_for_selector("#compare-changes")
        assert b.errors == []
    finally:
        b.close()
    assert (folder / "screenshots" / "compare.png").is_file()


# --------------------------------------------------------------------------- a live generation protocol
VECTORS = {"alpha": [1.0, 0.0, 0.0], "beta": [0.0, 1.0, 0.0], "delta": [0.0, 0.0, 1.0]}


class LookupEmbedder:
    name = "lookup"

    def encode(self, texts, normalize=True):
        import numpy as np

        return np.array([VECTORS[t] for t in texts])


def _scripted(name: str, role: str, replies: list[str]) -> NamedModel:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    return NamedModel(
        name=name, role=role, chat=GenericFakeChatModel(messages=iter(AIMessage(content=r) for r in replies))
    )


@pytest.fixture(scope="module")
def live_run(tmp_path_factory) -> Path:
    """A run folder holding one SciAidanBench question answered live: three answers (orthogonal embeddings, so
    novelty 1.0 each), the coherence judge giving 80, 70 and 15 (15 <= tau_c 15 rejects the third)."""
    from sgieval.core import OPEN_CREATIVITY
    from sgieval.metric_pool.aidanbench import AnswerCountMetrics
    from sgieval.metric_pool.aidanbench_protocol import run_generation
    from sgieval.metric_pool.base import ScoringContext
    from sgieval.reports.viewer import write_viewer

    item = Item(
        id="sciaidanbench/chemistry/0",
        benchmark="sciaidanbench",
        task=OPEN_CREATIVITY,
        discipline="Chemistry",
        prompt="Name a polymer.",
        metadata={"question": "Name a polymer."},
    )
    target = _scripted("target-m", "target", [f"<answer>{a}</answer>" for a in ("alpha", "beta", "delta")])
    judge = _scripted("judge-j", "judge", [f"<coherence_score>{v}</coherence_score>" for v in (80, 70, 15)])
    resp = asyncio.run(run_generation(item, target, judge, LookupEmbedder(), llm_novelty=False))
    scores = asyncio.run(AnswerCountMetrics().score(item, resp, ScoringContext()))
    run = tmp_path_factory.mktemp("live") / "run"
    store = RunStore(run)
    store.append("items", [item])
    store.append("responses", [resp])
    store.append("scores", scores)
    write_viewer(run, store.read("items"), store.read("responses"), store.read("scores"), prompts=store.prompts())
    store.close()
    return run


def test_a_live_protocol_keeps_each_coherence_prompt_once(live_run):
    prompts = _lines(live_run / "prompts.jsonl")
    (resp,) = _lines(live_run / "responses.jsonl")
    assert "judge_prompts" not in resp["metadata"]  # moved to prompts.jsonl
    raw = resp["metadata"]["judge_raw"]
    assert [(e["answer_num"], e["kind"], e["raw"]) for e in raw] == [
        (n, "coherence", f"<coherence_score>{v}</coherence_score>") for n, v in ((1, 80), (2, 70), (3, 15))
    ]
    by_hash = {p["hash"]: p for p in prompts}
    assert len(prompts) == 3 and [e["prompt_hash"] for e in raw] == [p["hash"] for p in prompts]
    for e, answer in zip(raw, ("alpha", "beta", "delta")):
        (msg,) = by_hash[e["prompt_hash"]]["messages"]
        assert msg["role"] == "user" and answer in msg["content"] and "Name a polymer." in msg["content"]
    texts = _js(live_run / "viewer" / "text.js", "SGV_TEXT")
    assert sorted(texts["prompts"]) == sorted(by_hash)


@pytest.mark.browser
def test_browser_live_answer_list_shows_each_coherence_prompt(live_run, tmp_path):
    (resp,) = _lines(live_run / "responses.jsonl")
    prompts = {p["hash"]: p for p in _lines(live_run / "prompts.jsonl")}
    b = Chromium(tmp_path / "profile", files_only=True)
    try:
        page = b.page
        page.goto(_viewer(live_run, "#/item/sciaidanbench%2Fchemistry%2F0"))
        page.wait_for_selector(".answer-list")
        lis = page.locator(".answer-list li.answer")
        assert lis.evaluate_all("ls => ls.map(l => l.dataset.state)") == ["accepted", "accepted", "rejected"]
        third = lis.nth(2)
        assert third.locator(".coherence").text_content() == "coherence 15"
        assert third.locator(".mark").text_content() == "rejected: incoherent"
        third.locator("details.answer-judge > summary").click()
        h = resp["metadata"]["judge_raw"][2]["prompt_hash"]
        shown = third.locator(f".judge-prompt[data-hash='{h}'] .prompt-msg pre")
        assert shown.all_text_contents() == [prompts[h]["messages"][0]["content"]]
        assert third.locator(".judge-reply pre.raw-reply").text_content() == "<coherence_score>15</coherence_score>"
        b.shot(live_run, "live-answer-judge")
        assert b.errors == []
    finally:
        b.close()
    assert (live_run / "screenshots" / "live-answer-judge.png").is_file()
