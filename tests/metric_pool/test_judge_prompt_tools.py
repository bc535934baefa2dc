"""The stored judge prompt of a rubric judge that calls tools is what the provider received for the call that gave
the reply: the messages (the assistant's tool calls and the tool results included) and the tool definitions
(names, descriptions, parameter schemas); for the structured call after tool use, the messages and the response
format.  The hash covers all of it.

The judge is sgieval's OpenAI-compatible chat model on the project's mock server (bench/mock_openai.py), which keeps
every request body; the run goes through the real graph with a rubric whose grounding criterion needs
``web_search`` (offline BM25 over three documents).  Items 0 and 1 get the same answer from both target models, so
the judge is sent the same prompt twice for each of them; item 2 gets two different answers.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.cli import app
from sgieval.core import Item, Response, RunConfig, prompt_hash
from sgieval.graphs.evaluate import execute, make_runtime
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.rubric import RubricMetric
from sgieval.metric_pool.rubrics import load_rubric, save_rubric
from sgieval.models.base import NamedModel
from sgieval.models.openai_direct import ChatOpenAIDirect
from sgieval.tests.browser import Chromium
from sgieval.tools.pool import ToolPool

pytestmark = pytest.mark.usefixtures("fresh_call_cache")

DOCS = [
    {"id": "d1", "title": "Graphene mobility", "text": "hBN encapsulated graphene mobility claim 0 record"},
    {"id": "d2", "title": "Perovskite stability", "text": "perovskite claim 1 stability and efficiency"},
    {"id": "d3", "title": "Protein folding", "text": "protein structure claim 2 prediction"},
]


def checked_rigor():
    """The starter rigor rubric, renamed, whose grounding criterion needs a fact check."""
    r = load_rubric("rigor")
    crits = [c.model_copy(update={"needs": ["web_search"] if i == 1 else []}) for i, c in enumerate(r.criteria)]
    return r.model_copy(update={"name": "checked_rigor", "criteria": crits})


def judge_reply(body: dict[str, Any], index: int) -> Any:
    """First turn: one web_search for the claim under review (a fixed call id, so equal prompts stay equal);
    after a tool result or with a response format: a verdict of 6 on every criterion."""
    msgs = body["messages"]
    if body.get("response_format") or any(m["role"] == "tool" for m in msgs):
        names = re.findall(r"^- (.+?) \(weight [^)]*\):", "\n".join(str(m.get("content")) for m in msgs), flags=re.M)
        return json.dumps({"scores": [{"criterion": n, "score": 6, "rationale": f"ok {n}"} for n in names]})
    claim = re.search(r"claim \d", str(msgs[-1]["content"]))
    return {"tool_calls": [{"name": "web_search", "arguments": {"query": claim.group(0)}, "id": "call_search"}]}


def answer(model: str, i: int) -> str:
    return f"Answer {i}." + " careful" * (i if i < 2 or model == "tidy" else 0)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


@pytest.fixture(scope="module")
def tool_run(tmp_path_factory) -> tuple[Path, list[dict[str, Any]]]:
    """The finished run and every request body the mock server received."""
    root = tmp_path_factory.mktemp("tooljudge")
    mp = pytest.MonkeyPatch()
    mp.setenv("SGIEVAL_RUBRIC_DIR", str(root / "rubrics"))
    save_rubric(checked_rigor())
    bench = root / "bench.jsonl"
    bench.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "prompt": f"Propose a test of claim {i}.", "task": "open_ended"}) + "\n"
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
    cfg = RunConfig(
        run_id="tooljudge",
        request="Which model scores highest on checked_rigor?",
        benchmarks=[str(bench)],
        out_dir=str(root / "runs"),
        yes=True,
        bootstrap_resamples=99,
        models=models,
        judges=["openai:mock-judge"],
        metric="checked_rigor",
        tools=["search"],
        use_cache=False,
    )
    pool = ToolPool.from_names(["search"], documents=DOCS, search_backend="bm25")
    try:
        with MockOpenAI(replies=judge_reply, log_bodies=True) as mock:
            chat = ChatOpenAIDirect(base_url=mock.url, api_key="k", model="mock-judge", max_retries=0, temperature=0)
            judge = NamedModel(name="openai:mock-judge", role="judge", chat=chat, provider="mock")
            state = asyncio.run(execute(make_runtime(cfg, judges=[judge], tools=pool)))
            bodies = [json.loads(e["body"]) for e in mock.log()]
    finally:
        mp.undo()
    run = Path(state["report"]).parent
    assert CliRunner().invoke(app, ["view", str(run)]).exit_code == 0
    return run, bodies


def test_the_stored_prompt_is_what_the_server_received_messages_and_tools(tool_run):
    run, bodies = tool_run
    scores = [s for s in _lines(run / "scores.jsonl") if s["metric"] == "checked_rigor"]
    assert len(scores) == 6 and {s["value"] for s in scores} == {60.0}
    # each judged response: a tool round, then the verdict on the reply without tool calls (2 calls each)
    assert len(bodies) == 12
    assert all(b["tools"][0]["function"]["name"] == "web_search" for b in bodies)
    answered = [b for b in bodies if any(m["role"] == "tool" for m in b["messages"])]
    assert len(answered) == 6
    prompts = {p["hash"]: p for p in _lines(run / "prompts.jsonl")}
    for s in scores:
        (ev,) = [e for e in s["evidence"] if e["kind"] == "judge_reply"]
        p = prompts[ev["prompt_hash"]]
        # the request that produced this reply: the one whose messages are the stored messages
        (sent, *_) = [b for b in answered if b["messages"] == p["messages"]]
        assert p["tools"] == sent["tools"] and "response_format" not in p
        tool = p["tools"][0]["function"]
        assert tool["name"] == "web_search" and tool["description"].startswith("Search the web")
        assert tool["parameters"]["properties"]["query"]["type"] == "string"
        assert [m["role"] for m in p["messages"]] == ["system", "user", "assistant", "tool"]
        assert p["messages"][2]["tool_calls"][0]["function"]["name"] == "web_search"
        # the hash covers the messages and the tools: the same messages without the tools hash differently
        assert p["hash"] == prompt_hash(p["messages"], None, p["tools"]) != prompt_hash(p["messages"])


def test_the_same_prompt_shares_one_hash_and_different_items_do_not(tool_run):
    run, _ = tool_run
    scores = [s for s in _lines(run / "scores.jsonl") if s["metric"] == "checked_rigor"]
    by = {
        (s["item_id"].rsplit("/", 1)[1], "tidy" if "tidy" in s["model"] else "terse"): next(
            e["prompt_hash"] for e in s["evidence"] if e["kind"] == "judge_reply"
        )
        for s in scores
    }
    assert by[("q0", "tidy")] == by[("q0", "terse")] and by[("q1", "tidy")] == by[("q1", "terse")]
    assert len({by[("q0", "tidy")], by[("q1", "tidy")], by[("q2", "tidy")], by[("q2", "terse")]}) == 4
    prompts = _lines(run / "prompts.jsonl")
    assert sorted(p["hash"] for p in prompts) == sorted(set(by.values()))  # one line per distinct prompt
    texts = json.loads((run / "viewer" / "text.js").read_text().removeprefix("window.SGV_TEXT = ").rstrip(";\n"))
    assert {h: p["tools"] for h, p in texts["prompts"].items()} == {p["hash"]: p["tools"] for p in prompts}


async def test_the_structured_call_after_tool_use_stores_its_messages_and_format(tmp_path):
    """Budget 1: the judge's tool round uses it up; the verdict is asked with the native schema and no tools."""
    item = Item(id="b/q0", benchmark="b", task="open_ended", prompt="Propose a test of claim 0.")
    resp = Response(item_id="b/q0", model="replay:tidy", text="Answer 0. careful")
    pool = ToolPool.from_names(["search"], documents=DOCS, search_backend="bm25")
    with MockOpenAI(replies=judge_reply, log_bodies=True) as mock:
        chat = ChatOpenAIDirect(base_url=mock.url, api_key="k", model="mock-judge", max_retries=0, temperature=0)
        judge = NamedModel(name="openai:mock-judge", role="judge", chat=chat, provider="mock")
        [s] = await RubricMetric(checked_rigor(), tool_budget=1).score(
            item, resp, ScoringContext(judges=[judge], tools=pool)
        )
        first, last = [json.loads(e["body"]) for e in mock.log()]
    assert s.value == 60.0 and "tools" in first and "tools" not in last
    p = s.evidence[0].prompt
    assert p["messages"] == last["messages"] and p["messages"][-1]["content"].startswith("Tool use is over")
    assert "tools" not in p and p["response_format"] == last["response_format"]  # the wire form, as sent
    assert p["hash"] == prompt_hash(p["messages"], p["response_format"])


@pytest.mark.browser
def test_browser_the_judge_prompt_shows_the_tool_calls_and_the_tools_offered(tool_run, tmp_path):
    run, _ = tool_run
    (score,) = [
        s
        for s in _lines(run / "scores.jsonl")
        if s["item_id"] == "jsonl:bench/q2" and s["metric"] == "checked_rigor" and "tidy" in s["model"]
    ]
    h = next(e["prompt_hash"] for e in score["evidence"] if e["kind"] == "judge_reply")
    stored = {p["hash"]: p for p in _lines(run / "prompts.jsonl")}[h]
    b = Chromium(tmp_path / "profile", files_only=True)
    try:
        page = b.page
        page.goto((run / "viewer" / "index.html").as_uri() + "#/item/jsonl%3Abench%2Fq2")
        page.wait_for_selector(".model-col")
        col = page.locator(f".model-col[data-model='{score['model']}']")
        col.locator("button.label-show").click()
        col.locator(".score[data-metric='checked_rigor'] details.evidence > summary").click()
        shown = col.locator(f".judge-prompt[data-hash='{h}']")
        shown.wait_for()
        assert shown.locator(".prompt-msg").evaluate_all("ms => ms.map(m => m.dataset.role)") == [
            "system",
            "user",
            "assistant",
            "tool",
        ]
        call = shown.locator("pre.tool-call")
        assert call.text_content() == 'call web_search call_search: {"query": "claim 2"}'
        assert shown.locator(".prompt-msg[data-role='tool'] .badge").text_content() == "tool call_search"
        assert shown.locator(".prompt-msg[data-role='tool'] pre").text_content() == stored["messages"][3]["content"]
        assert "1 tool," in shown.locator(":scope > .muted").first.text_content()
        shown.locator("details.prompt-tools > summary").click()
        assert shown.locator("details.prompt-tools > summary").text_content() == "tools offered: web_search"
        tool = shown.locator(".prompt-tool[data-name='web_search']")
        assert tool.locator(".muted").text_content() == stored["tools"][0]["function"]["description"]
        assert json.loads(tool.locator("pre").text_content()) == stored["tools"][0]["function"]["parameters"]
        b.shot(run, "judge-prompt-tools")
        assert b.errors == []
    finally:
        b.close()
    assert (run / "screenshots" / "judge-prompt-tools.png").is_file()
