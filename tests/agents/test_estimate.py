"""The estimate before any call: a judged run (50 questions, two target models, the custom rigor rubric, a
judge, all on the mock OpenAI server) is estimated within 25% of the calls and of the input tokens the server
received (counted with the same tokenizer), ``--dry-run`` sends nothing, and the report puts the estimate
beside the actual figures."""

from __future__ import annotations

import asyncio
import json
import math
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core import RunConfig
from sgieval.graphs.evaluate import execute, make_runtime
from sgieval.models.context import current_call_context
from sgieval.models.estimate import (
    APPROXIMATION,
    CallPlan,
    TokenCounter,
    request_text,
    request_tokens,
    summarise,
    token_counter,
)

REQUEST = "Which model is the most rigorous?"
PRICES = ["openai:model-a=1,2", "openai:model-b=1,2", "openai:judge=3,4"]
TARGETS = ["openai:model-a", "openai:model-b"]


def _items(tmp: Path, n: int = 50) -> Path:
    path = tmp / "questions.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for k in range(n):
            prompt = f"Question {k}: propose and justify a way to measure the rate of reaction {k}" + (
                " under controlled conditions" * (k % 7)
            )
            f.write(json.dumps({"id": f"q{k}", "prompt": prompt}) + "\n")
    return path


def _reply(body: dict, index: int):
    """Targets answer 80-264 words; the judge uses every tool round it is offered, then scores each criterion
    the prompt lists with 3-7 by the prompt's length (so the run makes the calls the estimate counts as the upper
    bound, and the two targets end close)."""
    msgs = body["messages"]
    if body["model"].startswith("model-"):
        extra = 7 if body["model"] == "model-b" else 0
        return " ".join(["answer"] * (80 + extra + (len(msgs[-1]["content"]) % 60) * 3))
    if body.get("tools") and sum(m["role"] == "tool" for m in msgs) < 3:
        return {
            "content": None,
            "tool_calls": [{"name": "web_search", "id": f"c{index}", "arguments": {"query": "rate"}}],
        }
    text = "\n".join(m["content"] for m in msgs if isinstance(m.get("content"), str))
    names = re.findall(r"^- (.+?) \(weight [^)]*\)", text, flags=re.M)
    score = 3 + len(text) % 5  # varies with the item and the answer
    return json.dumps(
        {"scores": [{"criterion": n, "score": score, "rationale": "stated", "evidence": []} for n in names]}
    )


def _seen(log: list[dict]) -> dict[str, list[int]]:
    """model string -> [requests, input tokens of their bodies with that model's counter]."""
    out: dict[str, list[int]] = {}
    for row in log:
        body = json.loads(row["body"])
        model = "openai:" + body["model"]
        seen = out.setdefault(model, [0, 0])
        seen[0] += 1
        seen[1] += request_tokens(body, token_counter(model))
    return out


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("estimate")
    items = _items(tmp)
    mp = pytest.MonkeyPatch()
    mp.setattr(current_call_context(), "use_cache", False)
    payloads: list[dict] = []
    try:
        with MockOpenAI(replies=_reply, log_bodies=True) as mock:
            cfg = RunConfig(
                run_id="judged",
                request=REQUEST,
                benchmarks=[str(items)],
                out_dir=str(tmp / "runs"),
                base_url=mock.url,
                models=TARGETS,
                judges=["openai:judge"],
                prices=PRICES,
                use_cache=False,
                bootstrap_resamples=99,
            )
            rt = make_runtime(cfg)
            state = asyncio.run(execute(rt, confirm=lambda p: payloads.append(p) or True))
            log = mock.log()
    finally:
        mp.undo()
    return rt, state, payloads, log, items


def test_the_estimate_is_within_a_quarter_of_what_the_server_saw(judged_run):
    rt, state, payloads, log, _ = judged_run
    assert state.get("report") and len(payloads) == 1
    plan = state["metric_plan"]
    assert [r["name"] for r in plan["custom"]] == ["rigor"] and plan["primary"] == "rigor"
    estimate = payloads[0]["estimate"]
    rows = {(r["model"], r["role"]): r for r in estimate["rows"]}
    assert set(rows) == {("openai:model-a", "target"), ("openai:model-b", "target"), ("openai:judge", "judge")}
    seen = _seen(log)
    assert seen["openai:model-a"][0] == seen["openai:model-b"][0] == 50
    for (model, _role), row in rows.items():
        calls, tokens = seen[model]
        assert abs(row["calls"] - calls) <= 0.25 * calls, (model, row["calls"], calls)
        assert abs(row["input_tokens"] - tokens) <= 0.25 * tokens, (model, row["input_tokens"], tokens)
    # the targets' prompts are the items' prompts exactly: the same count as the server's
    assert rows[("openai:model-a", "target")]["input_tokens"] == seen["openai:model-a"][1]
    judge_calls = seen["openai:judge"][0]
    assert rows[("openai:judge", "judge")]["calls"] == judge_calls  # the upper bound, which this judge uses
    # USD from the run's prices (--price): input x IN + typical output x OUT, per 1M tokens
    a = rows[("openai:model-a", "target")]
    assert a["usd"] == pytest.approx(a["input_tokens"] * 1e-6 + a["output_tokens"] * 2e-6)
    counted = token_counter("openai:judge").name
    assert estimate["tokenizer"] == counted
    lines = payloads[0]["estimate"]["lines"]
    assert lines[0].startswith(f"openai:model-a (target): 50 calls, {a['input_tokens']:,} input tokens")
    assert any(line.startswith(f"openai:judge (judge): {judge_calls} calls") for line in lines)
    assert any(f"tokens counted with {counted}" in line for line in lines)


def test_the_report_gives_estimate_and_actual_side_by_side(judged_run):
    rt, state, payloads, log, _ = judged_run
    report = json.loads((rt.store.root / "report.json").read_text())
    usage = next(s for s in report["sections"] if s["key"] == "usage")
    table = next(b for b in usage["blocks"] if b.get("kind") == "table" and b.get("name") == "estimate")
    assert table["headers"][:4] == ["model", "role", "calls (est.)", "calls"]
    by = {r[0]: r for r in table["rows"]}
    est = {r["model"]: r for r in payloads[0]["estimate"]["rows"]}
    seen = _seen(log)
    for model in ("openai:model-a", "openai:judge"):
        assert by[model][2] == est[model]["calls"] and by[model][3] == seen[model][0]
        assert by[model][4] == est[model]["input_tokens"]
    assert "Estimate made before any call" in (rt.store.root / "report.md").read_text()


def test_dry_run_prints_the_estimate_and_makes_no_call(tmp_path):
    from sgieval.cli import app

    items = _items(tmp_path, 12)
    with MockOpenAI(replies=_reply, log_bodies=True) as mock:
        result = CliRunner().invoke(
            app,
            [
                "ask",
                REQUEST,
                "-b",
                str(items),
                "-m",
                ",".join(TARGETS),
                "--judge",
                "openai:judge",
                "--base-url",
                mock.url,
                "--out",
                str(tmp_path / "runs"),
                "--price",
                PRICES[2],
                "--dry-run",
            ],
        )
        log = mock.log()
    assert result.exit_code == 0, result.output
    assert log == []  # not one request reached the server
    out = result.stdout
    assert "openai:model-a (target): 12 calls" in out
    judge = re.search(r"openai:judge \(judge\): (\d+) calls, ([\d,]+) input tokens.*?, ([\d.]+) USD", out)
    assert judge is not None, out
    assert int(judge.group(1)) >= 24  # at least one structured reply per judged response
    assert "n/a (price unknown)" in out  # the targets have no price
    assert not any((tmp_path / "runs").glob("*/config.json"))  # no run folder kept


def test_token_counting_and_pricing_by_hand():
    approx = TokenCounter(APPROXIMATION)
    body = {
        "messages": [
            {"role": "system", "content": "abcdefgh"},
            {"role": "user", "content": [{"type": "text", "text": "xyz"}]},
        ],
        "response_format": {"type": "json_object"},
    }
    text = request_text(body)
    assert text == 'system\nabcdefgh\nuser\nxyz\n{"type":"json_object"}'
    assert request_tokens(body, approx) == math.ceil(len(text) / 4) == 12  # 47 characters
    assert token_counter("anthropic:claude-3-5-haiku").name == APPROXIMATION  # no offline tokenizer there
    calls = [
        CallPlan("m", "judge", {}, 1000, 200, None),
        CallPlan("m", "judge", {}, 3000, 100, None),
        CallPlan("m", "judge", {}, 500, 50, None, cached=True),
        CallPlan("t", "target", {}, 10, 5, 64),
    ]
    rows = summarise(calls, [("t", "target"), ("m", "judge")], {"m": (2.0, 8.0), "t": (1.0, 1.0)})
    assert [(r.model, r.calls, r.cached_calls, r.input_tokens, r.output_tokens, r.output_bound) for r in rows] == [
        ("t", 1, 0, 10, 5, 64),
        ("m", 2, 1, 4000, 300, None),
    ]
    assert rows[1].usd == pytest.approx(4000 * 2.0 / 1e6 + 300 * 8.0 / 1e6)
    assert rows[0].usd_bound == pytest.approx((10 + 64) / 1e6)


def test_more_items_are_priced_at_the_estimated_price_per_item(judged_run):
    """The top two are not separated on this run: the Answer's "More items" line gives the power calculation's
    count (checked by hand on the rigor scores) and its cost at the estimate's USD per item."""
    rt, state, payloads, log, _ = judged_run
    values: dict[str, dict[str, float]] = {m: {} for m in TARGETS}
    for line in (rt.store.root / "scores.jsonl").read_text().splitlines():
        s = json.loads(line)
        if s["metric"] == "rigor" and s["status"] == "ok":
            values[s["model"]][s["item_id"]] = s["value"]
    report = json.loads((rt.store.root / "report.json").read_text())
    first, second = report["ranking"]["rows"][0]["model"], report["ranking"]["rows"][1]["model"]
    diffs = [values[first][k] - values[second][k] for k in sorted(values[first])]
    n = len(diffs)
    mean = sum(diffs) / n
    sd = (sum((d - mean) ** 2 for d in diffs) / (n - 1)) ** 0.5
    total = math.ceil(((1.959963984540054 + 0.8416212335729143) * sd / mean) ** 2)
    est = payloads[0]["estimate"]
    per_item = sum(r["usd"] for r in est["rows"]) / 50
    (line,) = [
        ln for ln in (rt.store.root / "report.md").read_text().splitlines() if ln.startswith("- **More items:**")
    ]
    assert f"About {total - n:,} more items of the same kind ({total:,} in all)" in line
    assert f"mean {mean:.4g}, SD {sd:.4g} over 50 items" in line
    assert f"about {(total - n) * per_item:.4f} USD at {per_item:.6f} USD per item (this run's estimate" in line


def test_cached_answers_are_counted_as_cached_and_judged_as_they_are(tmp_path, fresh_call_cache):
    """A second run of the same targets at temperature 0 finds their answers in the call cache: the dry run
    counts those calls as cached (no cost), and its judge prompts carry the cached answers, so they are the first
    run's judge requests, whose replies the cache holds too: counted as cached."""
    from sgieval import evaluate

    items = _items(tmp_path, 10)
    common = dict(
        benchmark=str(items), models=TARGETS, judge="openai:judge", out_dir=str(tmp_path / "runs"), prices=PRICES
    )
    with MockOpenAI(replies=_reply, log_bodies=True) as mock:
        first = evaluate(REQUEST, base_url=mock.url, bootstrap_resamples=99, **common)
        assert first.report is not None
        judged = _seen(mock.log())["openai:judge"]
        # --yes: no question, but the estimate is made before the first call and kept beside the actual figures
        (stored,) = [json.loads(x) for x in (first.report.parent / "estimate.jsonl").read_text().splitlines()]
        made = {r["model"]: (r["calls"], r["cached_calls"]) for r in stored["rows"]}
        assert made == {"openai:model-a": (10, 0), "openai:model-b": (10, 0), "openai:judge": (20, 0)}
        assert first.estimate == stored
        report = first.report.read_text()
        assert "Estimate made before any call, beside what the run used" in report
        assert "No estimate before the calls" not in report
        table = report.split("| model | role | calls (est.) | calls |", 1)[1]
        (row,) = [ln for ln in table.splitlines() if ln.startswith("| openai:judge | judge |")][:1]
        assert [c.strip() for c in row.split("|")[3:5]] == ["20", "20"]  # calls estimated, calls made
        mock.reset()
        dry = evaluate(REQUEST, base_url=mock.url, dry_run=True, **common)
        assert mock.log() == []
    rows = {r["model"]: r for r in dry.estimate["rows"]}
    assert (rows["openai:model-a"]["calls"], rows["openai:model-a"]["cached_calls"]) == (0, 10)
    assert rows["openai:model-a"]["usd"] == 0.0
    # the judge prompts carry the cached answers, so they are the first run's judge requests exactly: their
    # replies are in the call cache too (the key covers the messages and the bound response format)
    assert (rows["openai:judge"]["calls"], rows["openai:judge"]["cached_calls"]) == (0, judged[0]) == (0, 20)
    assert (rows["openai:judge"]["input_tokens"], rows["openai:judge"]["usd"]) == (0, 0.0)
    assert "openai:judge (judge): 0 calls (+20 from the call cache), 0 input tokens" in dry.estimate["lines"][2]
    assert "openai:model-a (target): 0 calls (+10 from the call cache)" in dry.estimate["lines"][0]


def test_list_prices_come_from_genai_prices():
    from sgieval.models.accounting import price_call

    (row,) = summarise([CallPlan("openai:gpt-4o", "judge", {}, 10_000, 2_000, None)], [], None)
    assert row.usd == pytest.approx(price_call("openai:gpt-4o", {"input": 10_000, "output": 2_000}))
    assert row.usd == pytest.approx(10_000 * 2.5 / 1e6 + 2_000 * 10.0 / 1e6)  # gpt-4o: 2.50 / 10.00 USD per 1M
    assert row.price_source.startswith("genai-prices ")


def test_the_agent_row_adds_the_report_narrative_to_the_planning_calls_made():
    from sgieval.agents.estimate import NARRATIVE_INPUT_TOKENS, NARRATIVE_OUTPUT_TOKENS, estimate_run
    from sgieval.models.base import NamedModel

    est = asyncio.run(
        estimate_run(
            [],
            [],
            [],
            [],
            agent=NamedModel(name="openai:planner", role="agent"),
            agent_done={"calls": 4, "input_tokens": 5000, "output_tokens": 300},
            prices={"openai:planner": (1.0, 4.0)},
        )
    )
    (row,) = est.rows
    assert (row.model, row.role, row.calls, row.done_calls) == ("openai:planner", "agent", 5, 4)
    assert (row.input_tokens, row.output_tokens) == (5000 + NARRATIVE_INPUT_TOKENS, 300 + NARRATIVE_OUTPUT_TOKENS)
    assert row.usd == pytest.approx((5000 + NARRATIVE_INPUT_TOKENS) * 1e-6 + (300 + NARRATIVE_OUTPUT_TOKENS) * 4e-6)
    assert "4 planning call(s) made, then the report narrative" in est.lines()[0]


def test_a_rubric_whose_criterion_needs_web_search_is_estimated_with_every_tool_round(tmp_path, monkeypatch):
    """A saved rubric with a criterion that needs web_search gives the judge its tools: the estimate counts every
    tool round (3) and the structured reply per judged response, the upper bound this judge uses, within 25% of
    the server's tokens (each tool result counted at the stated typical length)."""
    from sgieval import evaluate
    from sgieval.core import Criterion, Rubric
    from sgieval.metric_pool.rubrics import save_rubric

    monkeypatch.setenv("SGIEVAL_RUBRIC_DIR", str(tmp_path / "rubrics"))
    save_rubric(
        Rubric(
            name="checked_facts",
            description="facts that check out",
            tasks=["*"],
            kind="rubric",
            range=(0, 100),
            criteria=[
                Criterion(
                    name="facts",
                    description="cited facts are right",
                    anchors={0: "wrong", 10: "right"},
                    needs=["web_search"],
                ),
                Criterion(name="clarity", description="clear", anchors={0: "unclear", 10: "clear"}),
            ],
        )
    )
    items = _items(tmp_path, 20)
    payloads: list[dict] = []
    with MockOpenAI(replies=_reply, log_bodies=True) as mock:
        run = evaluate(
            "Which model is best?",
            metric="checked_facts",
            benchmark=str(items),
            models=TARGETS,
            judge="openai:judge",
            base_url=mock.url,
            out_dir=str(tmp_path / "runs"),
            use_cache=False,
            yes=False,
            confirm=lambda p: payloads.append(p) or True,
            bootstrap_resamples=99,
        )
        seen = _seen(mock.log())
    assert run.metric_plan["primary"] == "checked_facts" and run.report is not None
    judge = next(r for r in payloads[0]["estimate"]["rows"] if r["role"] == "judge")
    assert judge["calls"] == seen["openai:judge"][0] == 2 * 20 * 4  # 3 tool rounds + the reply, per response
    assert abs(judge["input_tokens"] - seen["openai:judge"][1]) <= 0.25 * seen["openai:judge"][1]


def test_a_stored_estimate_is_data():
    """estimate.jsonl comes from the run folder: a malformed line is said to be unreadable, never a crash of
    the report."""
    from sgieval.agents.estimate import estimate_blocks

    actual = [{"model": "m", "role": "judge", "calls": 3, "input_tokens": 9, "output_tokens": 1, "cost": None}]
    (text,) = estimate_blocks({"rows": [{"model": "m", "role": "judge", "calls": "lots"}]}, actual)
    assert text.text.startswith("The stored estimate (estimate.jsonl) is unreadable and is not shown: ")
    table, _ = estimate_blocks({"rows": [{"model": "m", "role": "judge", "calls": 4, "input_tokens": 10}]}, actual)
    assert table.rows == [["m", "judge", 4, 3, 10, 9, 0, 1, "n/a", "n/a"]]


def test_a_live_target_that_the_run_would_not_call_is_named_with_the_reason():
    """A live target on open-creativity items without a judge is not called by the run (the protocol needs a
    coherence judge): the estimate names it and the reason, never "every target is replayed", and does not
    claim the open-creativity answers were counted."""
    from sgieval.agents.estimate import estimate_run
    from sgieval.core import Item
    from sgieval.core.records import OPEN_CREATIVITY
    from sgieval.models.base import NamedModel

    items = [
        Item(id=f"aidan/{k}", benchmark="sciaidanbench", task=OPEN_CREATIVITY, prompt=f"Ideas for {k}?")
        for k in range(3)
    ]
    est = asyncio.run(estimate_run(items, [NamedModel(name="openai:live", role="target")], [], []))
    (row,) = est.rows
    assert (row.model, row.role, row.calls) == ("openai:live", "target", 0)
    assert row.note.startswith("not run on 3 item(s): ")
    assert "coherence judge" in row.note
    lines = est.lines()
    assert lines[0] == "no model call on the 3 items: the live targets would not be called"
    assert lines[1] == f"openai:live (target): {row.note}"
    assert not any("every target is replayed" in line or "open-creativity items: counted" in line for line in lines)


def test_dry_run_needs_no_api_key_and_the_run_still_does(tmp_path, monkeypatch):
    """``--dry-run`` counts prompts and sends none, so an OpenAI model without OPENAI_API_KEY is estimated; the
    same command without ``--dry-run`` still stops with the missing key named."""
    from sgieval.cli import app

    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    items = _items(tmp_path, 4)
    argv = ["ask", REQUEST, "-b", str(items), "-m", "openai:gpt-4o", "--judge", "openai:gpt-4.1"]
    argv += ["--out", str(tmp_path / "runs")]
    result = CliRunner().invoke(app, argv + ["--dry-run"])
    assert result.exit_code == 0, result.output
    assert "openai:gpt-4o (target): 4 calls" in result.stdout
    assert re.search(r"openai:gpt-4\.1 \(judge\): \d+ calls", result.stdout), result.stdout
    result = CliRunner().invoke(app, argv + ["--yes"])
    assert result.exit_code == 2
    assert "no OPENAI_API_KEY set" in result.output


def test_dry_run_shows_the_metrics_and_what_each_needs_beside_the_estimate(tmp_path, monkeypatch):
    """``--dry-run`` shows the metric confirmation (the metrics, the ranking metric, what each needs and whether
    it is available, with the fix) before the estimate: a "most rigorous" run without a judge says its ranking
    metric cannot run, rather than only "no model call"."""
    from sgieval.cli import app

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    items = _items(tmp_path, 3)
    argv = ["ask", REQUEST, "-b", str(items), "-m", "openai:model-a", "--out", str(tmp_path / "runs"), "--dry-run"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    out = [" ".join(ln.split()) for ln in result.stdout.splitlines()]
    assert out[0] == "Metrics for this run"
    assert "ranking by: rigor" in out
    (rigor,) = [ln for ln in out if ln.startswith("- rigor ")]
    assert "needs judge, 3 items -- NOT available: no judge given. Fix: pass --judge <model>" in rigor
    assert out.index("Estimate before any call") > out.index("ranking by: rigor")
    assert "openai:model-a (target): 3 calls" in " ".join(out)
    assert not any((tmp_path / "runs").glob("*/config.json"))


def test_evaluate_with_dry_run_keeps_no_run_folder_as_the_cli_does(tmp_path):
    """``sgieval.evaluate(..., dry_run=True)`` returns the estimate and the selected items and leaves no run
    folder behind (``sgieval runs`` would list one as stopped at the confirmation)."""
    import sgieval

    run = sgieval.evaluate(
        "Which model is the most creative in chemistry?", k=3, dry_run=True, out_dir=tmp_path / "runs"
    )
    assert run.stopped and run.report is None and len(run.items) == 3
    assert run.estimate["lines"][0].startswith("no model call on the 3 items")
    assert not run.run_dir.exists()
    assert list((tmp_path / "runs").iterdir()) == []


def test_a_run_folder_without_an_estimate_says_so_in_the_cost_section():
    from sgieval.agents.estimate import estimate_blocks

    assert estimate_blocks(None, [{"model": "m", "role": "target", "calls": 0}]) == []  # no call made: nothing to say
    (text,) = estimate_blocks(None, [{"model": "m", "role": "target", "calls": 3}])
    assert text.text.startswith("No estimate before the calls is stored in this run folder: it was written by an")


def test_an_estimate_that_fails_under_yes_does_not_stop_the_run(tmp_path, monkeypatch):
    """Nobody reads a --yes run's estimate before its calls: when it fails, the run goes on, its log says why and
    the report says no estimate is stored."""
    import sgieval.agents.estimate as estimate_mod
    from sgieval import evaluate

    async def broken(*args, **kwargs):
        raise RuntimeError("tokenizer exploded")

    monkeypatch.setattr(estimate_mod, "estimate_run", broken)
    items = _items(tmp_path, 3)
    with MockOpenAI(replies=_reply) as mock:
        run = evaluate(
            REQUEST,
            benchmark=str(items),
            models=TARGETS,
            judge="openai:judge",
            base_url=mock.url,
            out_dir=str(tmp_path / "runs"),
            use_cache=False,
            bootstrap_resamples=99,
        )
        served = len(mock.log())
    assert run.report is not None and served == 3 * 2 + 3 * 2  # 6 answers, 6 judge replies
    assert run.estimate is None and not (run.report.parent / "estimate.jsonl").exists()
    assert "No estimate before the calls is stored in this run folder" in run.report.read_text()
    logged = [json.loads(x) for x in (run.report.parent / "log.jsonl").read_text().splitlines()]
    (warn,) = [r for r in logged if r.get("event") == "estimate failed; the run goes on without one"]
    assert warn["reason"] == "RuntimeError: tokenizer exploded"


def test_estimate_notes_name_the_batch_rate_open_creativity_and_unrehearsed_metrics():
    from sgieval.agents.estimate import _notes, _Rehearsed

    rehearsed = _Rehearsed(open_creativity=True, unrehearsed={"sgi_dry_pass_all": {"d1", "d2"}})
    assert _notes(rehearsed, batch=True) == [
        "--batch: target and judge calls priced at the batch rate (genai-prices' batch price, else 50% of the "
        "list price); the agent model's calls are direct",
        "open-creativity items: counted for one answer and one coherence judgement per question; the protocol asks "
        "for further answers while they stay coherent and novel, so those items cost more",
        "sgi_dry_pass_all: no judge call was made on the stand-in answer on 2 item(s) (the metric reads the answer's "
        "content before it asks a judge), so its judge calls on live answers are not counted",
    ]
    assert _notes(_Rehearsed(), batch=False) == []
