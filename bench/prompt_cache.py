"""How much of a judged run's judge input a provider's prompt cache can serve, and judge calls per response.

The run: ``sgieval ask "Which model is most rigorous?"`` over a JSONL benchmark of the first ``--items`` (50)
SciAidanBench questions (the project's shared data; numbered stand-in questions when it is missing), two target
models (``openai:model-a`` / ``openai:model-b``, answering with o1-mini's and GPT-4o's stored first answers) and
the judge ``openai:judge``, all served by the local mock server (:mod:`sgieval.bench.mock_openai`, whose ``/log``
keeps every request body), with the run's default tools (search, pdf, python) unless ``--tools none``.  The
mock judge uses every tool it is offered (one ``web_search`` per turn, 3 turns) before it answers, so a rubric
that offers tools shows their cost.  The metric is the custom rubric ``rigor``: the starter rubric (no criterion
needs a tool), or with ``--checked`` the same rubric whose "theory and literature grounding" criterion needs
``web_search`` (saved as the user's rubric for the run), which sends the judge through its tool loop.

Definitions (printed):

- **judge request**: a request to the judge model; its **metric** is the request's ``prompt_cache_key`` when it
  carries one, else the rubric its system message names (``against the rubric "<name>"``), else its first
  message's first 60 characters.
- **serialized messages**: the request's ``messages`` array as compact JSON (``json.dumps(..., separators=(",",
  ":"), ensure_ascii=False)``: roles, contents, tool calls, tool results, in order); tools and
  ``response_format`` are not part of it.
- **cacheable prefix share** = sum over judge requests of the longest prefix (in characters) its serialized
  messages share with those of any earlier judge request of the same metric, divided by the total characters of
  all judge requests' serialized messages.  The first request of a metric shares nothing; an ideal order (what
  is the same for every item first) makes every later request share the whole static part.
- **mock cached share**: the mock server's own count with ``prompt_cache`` over the judge requests (cached words
  over prompt words, in whole 16-word blocks, as providers cache in blocks; what the run's ledger books as cached
  input tokens); a second view of the same thing.
- **judge calls per response**: rubric judge requests / target responses.
- **final call after tools**: for a judge that used tools, the share of its last request (the structured reply)
  that is a prefix of the turn before it in the same conversation (same first user message), summed over
  conversations; None when no judge used tools.

Run: ``python -m sgieval.bench.prompt_cache [--items 50] [--tools default|none] [--checked] [--json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import inspect
import json
import re
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

TARGETS = {"model-a": "o1-mini", "model-b": "openai_4o"}
"""Target model -> the SciAidanBench model whose stored first answers it gives."""
JUDGE = "judge"
TOOL_ROUNDS = 3
"""Turns in which the mock judge calls a tool when it is offered one (the rubric judge's default tool budget)."""
REQUEST = "Which model is most rigorous?"
_RUBRIC_NAME = re.compile(r'against the rubric "([^"]+)"')
_CRITERION = re.compile(r"^- (.+?) \(weight [^)]*\):", re.M)


# ------------------------------------------------------------------ the share
def serialized(messages: list[dict[str, Any]]) -> str:
    """A request's messages as compact JSON (the text whose prefixes are compared)."""
    return json.dumps(messages, separators=(",", ":"), ensure_ascii=False)


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (binary search on slices: C-speed compares)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def metric_of(body: dict[str, Any]) -> str:
    """The metric a judge request belongs to (module docstring)."""
    if body.get("prompt_cache_key"):
        return str(body["prompt_cache_key"])
    msgs = body.get("messages") or []
    first = msgs[0].get("content") if msgs else ""
    text = first if isinstance(first, str) else json.dumps(first)
    m = _RUBRIC_NAME.search(text or "")
    return f"rubric:{m.group(1)}" if m else (text or "")[:60]


def prefix_shares(bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """The cacheable prefix share of ``bodies`` (judge requests in arrival order; module docstring).

    Returns:
        ``{"share": 0-1, "shared_chars", "total_chars", "requests", "by_metric": {metric: {"share", "requests"}}}``.
        For each request the longest prefix shared with any earlier request of its metric is the larger of those
        shared with its two neighbours in the sorted list of the earlier requests (a common prefix with any other
        string is no longer than with one of them).
    """
    earlier: dict[str, list[str]] = {}
    per: dict[str, list[int]] = {}
    shared = total = 0
    for body in bodies:
        metric = metric_of(body)
        text = serialized(body.get("messages") or [])
        seen = earlier.setdefault(metric, [])
        i = bisect.bisect_left(seen, text)
        best = max([_common_prefix(text, seen[j]) for j in (i - 1, i) if 0 <= j < len(seen)], default=0)
        bisect.insort(seen, text)
        shared += best
        total += len(text)
        acc = per.setdefault(metric, [0, 0, 0])
        acc[0] += best
        acc[1] += len(text)
        acc[2] += 1
    return {
        "share": shared / total if total else 0.0,
        "shared_chars": shared,
        "total_chars": total,
        "requests": len(bodies),
        "by_metric": {m: {"share": a[0] / a[1] if a[1] else 0.0, "requests": a[2]} for m, a in per.items()},
    }


def final_call_shares(bodies: list[dict[str, Any]]) -> float | None:
    """The "final call after tools" share of judge requests ``bodies`` (module docstring), or None."""
    turns: dict[str, list[str]] = {}
    for body in bodies:
        msgs = body.get("messages") or []
        first_user = next((m for m in msgs if m.get("role") == "user"), None)
        turns.setdefault(serialized([first_user] if first_user else []), []).append(serialized(msgs))
    shared = total = 0
    for conv in turns.values():
        if len(conv) < 2:
            continue
        prev, last = conv[-2], conv[-1]
        shared += _common_prefix(prev, last)
        total += len(last)
    return shared / total if total else None


# ------------------------------------------------------------------ the run
def _questions(n: int) -> tuple[list[dict[str, Any]], dict[tuple[str, str], str]]:
    """(JSONL records of ``n`` questions, {(target model, question): stored answer})."""
    from ..benchmarks.data import find_benchmark_dir

    folder = find_benchmark_dir("sciaidanbench", required=False)
    questions: list[dict[str, Any]] = []
    answers: dict[tuple[str, str], str] = {}
    if folder is not None and (folder / "questions.json").is_file():
        for q in json.loads((folder / "questions.json").read_text())[:n]:
            questions.append(
                {"text": q["question"], "discipline": q.get("domain", ""), "direction": q.get("subdomain", "")}
            )
        wanted = {q["text"] for q in questions}
        for target, stored in TARGETS.items():
            path = folder / "responses" / f"{stored}.json"
            if not path.is_file():
                continue

            def walk(node: Any) -> None:
                if isinstance(node, dict):
                    for k, v in node.items():
                        if k in wanted and isinstance(v, list) and v and isinstance(v[0], dict) and "answer" in v[0]:
                            answers.setdefault((target, k), str(v[0]["answer"]))
                        else:
                            walk(v)

            walk(json.loads(path.read_text()))
    while len(questions) < n:
        i = len(questions)
        questions.append(
            {
                "text": f"Propose a test of hypothesis number {i} about catalysis.",
                "discipline": "chemistry",
                "direction": "catalysis",
            }
        )
    records = [
        {
            "id": f"q{i}",
            "prompt": q["text"],
            "task": "open_question",
            "discipline": q["discipline"] or "science",
            "direction": q["direction"] or "general",
            "type": "open",
        }
        for i, q in enumerate(questions)
    ]
    return records, answers


class Replies:
    """The mock server's reply logic (module docstring): targets answer from the stored answers, the judge calls
    each tool it is offered for :data:`TOOL_ROUNDS` turns, then scores every criterion in its prompt."""

    def __init__(self, answers: dict[tuple[str, str], str]):
        self.answers = answers
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any], index: int) -> Any:
        msgs = body.get("messages") or []
        model = body.get("model", "")
        text = "\n".join(str(m.get("content") or "") for m in msgs)
        if model in TARGETS:
            last = str(msgs[-1].get("content") or "") if msgs else ""
            for (t, q), a in self.answers.items():
                if t == model and q in last:
                    return a
            return f"{model} answers: a careful, stepwise argument with a control experiment and its limits."
        if model == JUDGE:
            offered = [(t.get("function") or {}).get("name") for t in body.get("tools") or []]
            rounds = sum(1 for m in msgs if m.get("role") == "tool")
            if offered and rounds < TOOL_ROUNDS:
                tool = "web_search" if "web_search" in offered else offered[0]
                args = {"query": f"check claim {rounds + 1}"} if tool == "web_search" else {"code": "print(1)"}
                return {"content": None, "tool_calls": [{"name": tool, "arguments": args, "id": f"c{index}"}]}
            names = list(dict.fromkeys(_CRITERION.findall(text)))
            score = 4 + len(text) % 5
            return json.dumps(
                {
                    "scores": [
                        {"criterion": n, "score": score, "rationale": f"{n}: judged", "evidence": []} for n in names
                    ]
                }
            )
        return "{}"


def measure(
    items: int = 50, *, tools: str = "default", checked: bool = False, workdir: Path | None = None
) -> dict[str, Any]:
    """Run the judged run once and measure it.

    Args:
        items: questions in the benchmark (>= 1).
        tools: ``"default"`` (the run's default tools) or ``"none"``.
        checked: judge with the rigor rubric whose grounding criterion needs ``web_search`` (module docstring).
        workdir: where the benchmark and run folders go (None: a temporary folder, removed after).

    Returns:
        ``{"items", "responses", "judge_requests", "calls_per_response", "share", "shared_chars", "total_chars",
        "by_metric", "mock_cached_share", "final_after_tools", "tools", "checked"}``.
    """
    import os
    from ..core import RunConfig
    from ..graphs.evaluate import execute, make_runtime
    from .mock_openai import MockOpenAI

    tmp_ctx = tempfile.TemporaryDirectory() if workdir is None else None
    root = Path(tmp_ctx.name) if tmp_ctx is not None else Path(workdir)  # type: ignore[arg-type]
    try:
        records, answers = _questions(items)
        bench = root / "cachebench.jsonl"
        bench.write_text("".join(json.dumps(r) + "\n" for r in records))
        kw: dict[str, Any] = dict(replies=Replies(answers), log_bodies=True)
        if "prompt_cache" in inspect.signature(MockOpenAI).parameters:
            kw["prompt_cache"] = True
        saved = os.environ.get("SGIEVAL_RUBRIC_DIR")
        if checked:
            from ..metric_pool.rubrics import load_rubric

            base = load_rubric("rigor")
            crits = [
                c.model_copy(update={"needs": ["web_search"]}) if c.name == "theory and literature grounding" else c
                for c in base.criteria
            ]
            (root / "rubrics").mkdir()
            base.model_copy(update={"criteria": crits}).to_yaml(root / "rubrics" / "rigor.yaml")
            os.environ["SGIEVAL_RUBRIC_DIR"] = str(root / "rubrics")  # read once by the run's settings
        with MockOpenAI(**kw) as mock:
            cfg_kw: dict[str, Any] = dict(
                run_id="prompt-cache",
                request=REQUEST,
                benchmarks=[str(bench)],
                out_dir=str(root / "runs"),
                yes=True,
                use_cache=False,
                base_url=mock.url,
                models=[f"openai:{m}" for m in TARGETS],
                judges=[f"openai:{JUDGE}"],
            )
            if tools == "none":
                cfg_kw["tools"] = []
            try:
                rt = make_runtime(RunConfig(**cfg_kw))
                asyncio.run(execute(rt))
            finally:
                if checked:
                    if saved is None:
                        os.environ.pop("SGIEVAL_RUBRIC_DIR", None)
                    else:
                        os.environ["SGIEVAL_RUBRIC_DIR"] = saved
            log = mock.log()
    finally:
        if tmp_ctx is not None:
            tmp_ctx.cleanup()
    bodies = [json.loads(e["body"]) for e in log if e.get("outcome") == "200"]
    judge = [b for b in bodies if b.get("model") == JUDGE]
    responses = sum(1 for b in bodies if b.get("model") in TARGETS)
    rubric_calls = [b for b in judge if metric_of(b).endswith("rigor") or metric_of(b).startswith("rubric:")]
    shares = prefix_shares(judge)
    counted = [e for e in log if e.get("cached_tokens") is not None and json.loads(e["body"]).get("model") == JUDGE]
    cached = sum(int(e["cached_tokens"]) for e in counted)
    words = sum(
        sum(len(str(m.get("content") or "").split()) for m in json.loads(e["body"]).get("messages") or [])
        for e in counted
    )
    return {
        "items": items,
        "tools": tools,
        "responses": responses,
        "judge_requests": len(judge),
        "calls_per_response": len(rubric_calls) / responses if responses else 0.0,
        **{k: shares[k] for k in ("share", "shared_chars", "total_chars", "by_metric")},
        "mock_cached_share": cached / words if words else None,
        "final_after_tools": final_call_shares(judge),
        "checked": checked,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m sgieval.bench.prompt_cache", description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=50)
    ap.add_argument("--tools", choices=("default", "none"), default="default")
    ap.add_argument("--checked", action="store_true", help="rigor with a criterion that needs web_search")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    r = measure(a.items, tools=a.tools, checked=a.checked)
    if a.json:
        print(json.dumps(r, indent=1))
        return
    print(
        f"judged run: {r['items']} questions x {len(TARGETS)} target models, tools {r['tools']}, rubric rigor"
        + (" (grounding needs web_search)" if r["checked"] else "")
    )
    print(f"target responses        {r['responses']}")
    print(f"judge requests          {r['judge_requests']}")
    print(f"judge calls per response {r['calls_per_response']:.2f}")
    print(
        f"cacheable prefix share  {r['share']:.3f}  ({r['shared_chars']:,} of {r['total_chars']:,} characters of "
        "serialized judge messages shared with an earlier judge request of the same metric)"
    )
    for m, v in r["by_metric"].items():
        print(f"  {m}: {v['share']:.3f} over {v['requests']} requests")
    if r["final_after_tools"] is not None:
        print(f"final call after tools  {r['final_after_tools']:.3f}  (its prefix shared with the turn before it)")
    if r["mock_cached_share"] is not None:
        print(f"mock cached share       {r['mock_cached_share']:.3f}  (judge requests: cached words / prompt words)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
