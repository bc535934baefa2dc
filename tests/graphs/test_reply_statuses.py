"""Target replies as reasoning models and local servers really send them, through the real graph and the
openai client against the local mock server (METRICS.md D.8, D.10):

- a reply cut by the token limit (finish_reason "length") is ``truncated``, an empty one ``empty``: both kept
  out of the means, and never cached, so a rerun calls the model again;
- ``<think>...</think>`` text and a server's separate ``reasoning_content`` are kept on the Response as its
  reasoning and never scored.
"""

from __future__ import annotations

import asyncio
import json

from sgieval.bench.mock_openai import MockOpenAI
from sgieval.core import RunConfig, RunStore
from sgieval.graphs.evaluate import execute, make_runtime

REPLIES = {
    "q1": {"content": "The answer is 4", "finish_reason": "length"},
    "q2": {"content": ""},
    "q3": {"content": "<think>6 x 7 = 42; draft <answer>41</answer>? no</think>\n\n<answer>42</answer>"},
    "q4": {"content": "42", "reasoning_content": "I recall that 6 x 7 is 42."},
    "q5": {"content": "<think>hmm, 6 x 7 is"},  # still thinking when it stopped, no final text
    "q6": {"content": "I do not know."},  # an answer without a number: numeric_match finds none
}


def reply(body, index):
    last = body["messages"][-1]["content"]
    return REPLIES[last.split(":", 1)[0]]


def _bench(tmp_path):
    p = tmp_path / "mult.jsonl"
    p.write_text(
        "".join(json.dumps({"id": q, "prompt": f"{q}: what is 6 x 7?", "reference": 42}) + "\n" for q in REPLIES)
    )
    return p


def _run(tmp_path, bench, url, run_id):
    cfg = RunConfig(
        run_id=run_id,
        benchmarks=[str(bench)],
        models=["openai:mock"],
        base_url=url,
        out_dir=str(tmp_path / "runs"),
        yes=True,
        bootstrap_resamples=999,
    )
    asyncio.run(execute(make_runtime(cfg)))
    store = RunStore(tmp_path / "runs" / run_id)
    return (
        {r.item_id.rsplit("/", 1)[1]: r for r in store.read("responses")},
        {s.item_id.rsplit("/", 1)[1]: s for s in store.read("scores") if s.metric == "exact_match"},
        (tmp_path / "runs" / run_id / "report.md").read_text(),
    )


def test_truncated_empty_and_reasoning_replies(tmp_path, fresh_call_cache):
    bench = _bench(tmp_path)
    with MockOpenAI(replies=reply) as mock:
        resp, em, report = _run(tmp_path, bench, mock.url, "first")
        assert mock.stats()["served"] == 6
        assert {q: r.status for q, r in resp.items()} == {
            "q1": "truncated",
            "q2": "empty",
            "q3": "ok",
            "q4": "ok",
            "q5": "empty",
            "q6": "ok",
        }
        assert resp["q1"].finish_reason == "length" and resp["q3"].finish_reason == "stop"
        assert resp["q3"].text == "<answer>42</answer>"
        assert resp["q3"].reasoning == "6 x 7 = 42; draft <answer>41</answer>? no"
        assert (resp["q4"].text, resp["q4"].reasoning) == ("42", "I recall that 6 x 7 is 42.")
        assert (resp["q5"].text, resp["q5"].reasoning) == ("", "hmm, 6 x 7 is")
        # the truncated/empty replies are not zeros: their scores carry the status and stay out of the mean
        assert {q: (s.status, s.value) for q, s in em.items()} == {
            "q1": ("truncated", None),
            "q2": ("empty", None),
            "q3": ("ok", 1.0),
            "q4": ("ok", 1.0),
            "q5": ("empty", None),
            "q6": ("ok", 0.0),
        }
        # the report counts each kind apart from errors; the 0/1 mean (2 of 3) has a Wilson interval
        assert (
            "Counted apart: 1 truncated replies (cut by the token limit), 2 empty replies, 1 scores with no "
            "answer found (numeric_match 1: each scored 0 in the means, listed here apart from wrong answers), 0 scores with injection "
            "suspected (judge-format tags in the scored text), 0 other failed records."
        ) in report
        assert "| 1 | openai:mock | 0.67 | 0.21 to 0.94 (Wilson score, 0/1 metric) | 2.00 | 3 | 3 |" in report
        # a rerun: the good replies come from the call cache, the three flagged ones are asked again
        resp2, _, _ = _run(tmp_path, bench, mock.url, "second")
        assert mock.stats()["served"] == 9
        again = [e["last_user"].split(":", 1)[0] for e in mock.log()[6:]]
        assert sorted(again) == ["q1", "q2", "q5"]
        assert resp2["q3"].reasoning == resp["q3"].reasoning
