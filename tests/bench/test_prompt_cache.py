"""The judged run of bench/prompt_cache.py (50 questions, two target models, the custom rigor rubric, a judge on
the mock server, the run's default tools): the starter rigor rubric needs no tool, so it makes exactly one judge
call per response, and at least 80% of the judge input (serialized messages) is a prefix shared with an earlier
judge request of the same metric.  The share's definition is checked on hand-made requests."""

from __future__ import annotations

import pytest

from sgieval.bench.prompt_cache import final_call_shares, measure, metric_of, prefix_shares, serialized


def body(system: str, user: str, key: str | None = "sgieval:*/m") -> dict:
    b = {"model": "judge", "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
    if key:
        b["prompt_cache_key"] = key
    return b


def test_the_share_is_the_longest_prefix_shared_with_an_earlier_request_of_the_same_metric():
    reqs = [body("RULES", "item one"), body("RULES", "item two"), body("RULES", "item one!"), body("RULES", "x", "k2")]
    head = len('[{"role":"system","content":"RULES"},{"role":"user","content":"item ')
    # request 2 shares `head` with request 1; request 3 shares all of request 1 but its closing '"}]'
    # ("item one" then "!" where request 1 closes the string); request 4 is the first of its metric
    r1 = serialized(reqs[0]["messages"])
    assert r1[:head].endswith("item ") and len(r1) == head + len('one"}]')
    shared = head + (len(r1) - 3)
    total = sum(len(serialized(b["messages"])) for b in reqs)
    out = prefix_shares(reqs)
    assert (out["shared_chars"], out["total_chars"]) == (shared, total)
    assert out["share"] == pytest.approx(shared / total)
    assert out["by_metric"]["k2"] == {"share": 0.0, "requests": 1}
    # without a prompt_cache_key the metric is the rubric the system message names
    assert metric_of(body('Score ONE response against the rubric "rigor": ...', "u", None)) == "rubric:rigor"


def test_the_final_call_share_compares_the_last_turn_with_the_one_before_it():
    turn1 = body("RULES", "item")
    turn2 = {**turn1, "messages": turn1["messages"] + [{"role": "tool", "content": "hit"}]}
    rewritten = {**turn2, "messages": [{"role": "system", "content": "NEW"}] + turn2["messages"][1:]}
    before = serialized(turn1["messages"])
    assert final_call_shares([turn1, turn2]) == pytest.approx((len(before) - 1) / len(serialized(turn2["messages"])))
    shared = len('[{"role":"system","content":"')
    assert final_call_shares([turn1, rewritten]) == pytest.approx(shared / len(serialized(rewritten["messages"])))
    assert final_call_shares([turn1]) is None  # no judge used tools


@pytest.fixture(scope="module")
def judged_run():
    return measure(50)


def test_the_default_rigor_rubric_makes_one_judge_call_per_response(judged_run):
    r = judged_run
    assert r["tools"] == "default" and r["responses"] == 100  # 50 questions x 2 target models
    assert r["judge_requests"] == 100 and r["calls_per_response"] == 1.0


def test_at_least_80_percent_of_judge_input_is_a_cacheable_prefix(judged_run):
    r = judged_run
    assert list(r["by_metric"]) == ["sgieval:*/rigor"]  # every judge request carried the metric's cache key
    assert r["share"] >= 0.80, r["share"]
    # the mock server's own count (what the ledger books as cached input tokens) agrees
    assert r["mock_cached_share"] >= 0.80, r["mock_cached_share"]
