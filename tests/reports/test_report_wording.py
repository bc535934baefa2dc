"""Report wording a reader can take at its word: a failure reason is cut at a word with its parentheses closed,
counts of one are singular, and when the paired permutation test cannot reach p < 0.05 with the items there are
(its smallest attainable p is 2/2^n), the Answer says so and counts the fewest items with which it could.  Each
case runs through the real build_report; every expected number is hand-computed."""

from __future__ import annotations

import asyncio

from sgieval.agents.reporting import build_report
from sgieval.reports.answer.more_items import smallest_permutation_p
from sgieval.reports import ReportContext
from sgieval.core import Item, MetricSpec, Response, Score
from sgieval.reports import unscored_reason
from sgieval.reports.format import clip_reason

SCORE = MetricSpec(name="score", tasks=["generic"], range=(0.0, 10.0), primary=True, description="points")
METHOD = "normal-approximation power of the paired test, n = ((z_0.975 + z_0.80) x SD / mean)^2"
COST = "their cost is not known: "


def header(n: int) -> dict:
    return {
        "run_id": "r1",
        "request": "Which model is best?",
        "selection_reason": "test",
        "filters": "none",
        "k": "all matches",
        "n_items": n,
        "sampling": "all",
        "seed": 0,
        "models": "target",
        "judges": "none",
        "agent": "none",
        "metrics": "test",
        "primary": "score",
        "primary_reason": "asked",
        "data_source": "test",
        "tools": "none",
        "scope": "whole catalog",
        "extra": {},
    }


def report(tmp_path, values: dict[str, list[float]], extra: list[Score] = ()) -> str:
    n = len(next(iter(values.values())))
    its = [Item(id=f"g/{i}", benchmark="jsonl", task="generic", discipline="physics", prompt=f"q{i}") for i in range(n)]
    scores = [
        Score(item_id=f"g/{i}", model=m, metric="score", value=v, rationale="r")
        for m, vs in values.items()
        for i, v in enumerate(vs)
    ]
    models = [*values, *dict.fromkeys(s.model for s in extra)]
    path = asyncio.run(
        build_report(
            ReportContext(
                tmp_path,
                header=header(n),
                items=its,
                responses=[Response(item_id=i.id, model=m, text="...") for m in models for i in its],
                scores=[*scores, *extra],
                specs=[SCORE],
                primary="score",
                models=models,
                n_resamples=999,
                seed=0,
            )
        )
    )
    return path.read_text()


def more_items(text: str) -> str:
    answer = text.split("## Answer", 1)[1].split("\n## ", 1)[0]
    return next(ln for ln in answer.splitlines() if ln.startswith("- **More items:** "))


def test_smallest_permutation_p_by_hand():
    assert smallest_permutation_p([3.5, 3.9, 4.1, 3.8]) == 2 / 2**4 == 0.125
    assert smallest_permutation_p([1.0, -2.0, 3.0, 0.5, 2.5]) == 2 / 2**5 == 0.0625
    assert smallest_permutation_p([1.0] * 6) == 2 / 2**6 == 0.03125
    assert smallest_permutation_p([1.0, 0.0, 2.0, 0.0, 3.0]) == 2 / 2**3 == 0.25  # flipping a 0 changes nothing
    assert smallest_permutation_p([0.0, 0.0]) == 1.0 and smallest_permutation_p([4.0]) == 1.0
    # 2**14 > 9999 resamples: scipy's randomised p is at least 2 (0 + 1) / (9999 + 1)
    assert smallest_permutation_p([1.0] * 14, n_resamples=9999) == 2 / 10000


def test_four_items_cannot_reach_p_05_and_the_answer_says_so(tmp_path):
    # differences 3.5, 3.9, 4.1, 3.8: mean 3.825; squared deviations .105625 + .005625 + .075625 + .000625 = .1875,
    # SD = sqrt(.1875 / 3) = 0.25; the power formula asks for ceil((2.8016 x 0.25 / 3.825)^2) = ceil(0.034) = 1
    # item, but the sign-flip test's smallest p on 4 items is 2/2^4 = 0.125; it needs 6 (2/2^6 = 0.03125)
    text = report(tmp_path, {"m-a": [7.0, 7.5, 8.0, 7.2], "m-b": [3.5, 3.6, 3.9, 3.4]})
    assert "the paired test on 4 items gives p = 0.1250" in text
    line = more_items(text)
    assert line.startswith(
        "- **More items:** With 4 items the paired permutation test cannot reach p < 0.05 at all: its smallest "
        "attainable p is 2/2^4 = 0.1250 (every difference of one sign), and it needs at least 6 items whose "
        "difference is not 0 (smallest p 2/2^6 = 0.0312). About 2 more items of the same kind (6 in all) are the "
        "fewest with which it could separate m-a from m-b, if their differences keep one sign (the power formula "
        f"({METHOD}) asks for 1 item; paired differences m-a minus m-b: mean 3.825, SD 0.25 over 4 items); {COST}"
    ), line
    assert "asks for 1 items" not in text


def test_a_zero_difference_and_equal_differences_raise_the_count(tmp_path):
    # 5 items, one difference 0: its flip changes nothing, so p >= 2/2^4 = 0.125; 6 nonzero + 1 zero = 7 in all
    line = more_items(report(tmp_path / "a", {"m-a": [7.0, 7.5, 8.0, 7.2, 5.0], "m-b": [3.5, 3.6, 3.9, 3.4, 5.0]}))
    assert line.startswith(
        "- **More items:** With 5 items the paired permutation test cannot reach p < 0.05 at all: its smallest "
        "attainable p is 2/2^4 = 0.1250 (every difference of one sign; 1 difference of 0 changes nothing when "
        "flipped), and it needs at least 6 items whose difference is not 0 (smallest p 2/2^6 = 0.0312). About 2 "
        "more items of the same kind (7 in all) are the fewest"
    ), line
    # every difference 2 on 4 items: the power formula has no count (SD 0), the sign-flip test needs 6 items
    line = more_items(report(tmp_path / "b", {"m-a": [7.0, 6.0, 8.0, 5.0], "m-b": [5.0, 4.0, 6.0, 3.0]}))
    assert (
        "About 2 more items of the same kind (6 in all) are the fewest with which it could separate m-a from m-b, "
        "if their differences keep one sign (the power formula gives no count: every paired difference is the "
        "same; paired differences m-a minus m-b: mean 2, SD 0 over 4 items)"
    ) in line, line
    assert "No number of items" not in line


def test_a_long_failure_reason_is_cut_at_a_word_with_its_parenthesis_closed(tmp_path):
    why = (
        "no judge gave a valid rubric reply (openai:gpt-4.1: unparsable judge reply after 3 attempt(s): no JSON "
        "object found in the reply)"
    )
    assert clip_reason(why) == why  # 128 characters: the full reason fits
    long = why[:-1] + "; the reply began with a long preamble about the rubric and its criteria and anchors)"
    assert clip_reason(long) == (
        "no judge gave a valid rubric reply (openai:gpt-4.1: unparsable judge reply after 3 attempt(s): no JSON "
        "object found in the reply; the reply began with a long…)"
    )
    assert clip_reason("a [b (c d e", width=6) == "a [b…]"
    fail = [
        Score(item_id=f"g/{i}", model="m-c", metric="score", value=None, rationale="", status="judge_error", error=long)
        for i in range(3)
    ]
    assert unscored_reason(fail) == f"3 failed (judge_error): {clip_reason(long)}"
    text = report(tmp_path, {"m-a": [7.0, 7.5, 8.0], "m-b": [3.5, 3.6, 3.9]}, extra=fail)
    assert f"| unscored | m-c | n/a | n/a | n/a | 0 | 3 failed (judge_error): {clip_reason(long)} |" in text


def test_one_item_is_singular(tmp_path):
    text = report(tmp_path, {"m-a": [7.0], "m-b": [3.5]})
    assert "| K | all matches (selected 1 item; sampling all, seed 0) |" in text
    assert "- 1 item selected; CIs are wide at this sample size." in text
    assert "1 items" not in text


def test_a_run_without_calls_shows_its_estimate_beside_the_actual(tmp_path):
    """README command (1) replays the stored SciAidanBench answers: no model call, and the estimate made before
    any call (estimate.jsonl: no call on the 25 items) is shown beside that, as for a live run."""
    from typer.testing import CliRunner

    from sgieval.cli import app

    res = CliRunner().invoke(
        app, ["ask", "Which model is the most creative in chemistry?", "--yes", "--out", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    usage = (run / "report.md").read_text().split("## Cost and usage\n", 1)[1].split("\n## ", 1)[0]
    assert usage.strip().splitlines() == [
        "No model calls were made (replayed responses and objective metrics only, or every call served from the "
        "cache).",
        "",
        "The estimate made before any call agrees: no model call on the 25 items: every target is replayed and no "
        "metric of the plan asks a judge (or no judge is configured).",
    ]


def test_calls_estimated_but_none_made_show_the_estimate_table(tmp_path):
    """An estimate that counted calls, none of which was made (every reply from the call cache): its table with
    the actual 0 beside each figure."""
    estimate = {
        "rows": [{"model": "openai:judge", "role": "judge", "calls": 8, "input_tokens": 9454, "output_tokens": 2000}],
        "items": 4,
        "tokenizer": "approximation: 1 token per 4 characters",
        "typical_output": "typical judge output 250 tokens per structured reply (stated)",
        "notes": [],
    }
    its = [Item(id=f"g/{i}", benchmark="jsonl", task="generic", discipline="physics", prompt=f"q{i}") for i in range(2)]
    path = asyncio.run(
        build_report(
            ReportContext(
                tmp_path,
                header=header(2),
                items=its,
                responses=[Response(item_id=i.id, model="m-a", text="...") for i in its],
                scores=[Score(item_id=i.id, model="m-a", metric="score", value=5.0, rationale="r") for i in its],
                specs=[SCORE],
                primary="score",
                models=["m-a"],
                n_resamples=99,
                seed=0,
                usage={"rows": [], "estimate": estimate},
            )
        )
    )
    usage = path.read_text().split("## Cost and usage\n", 1)[1].split("\n## ", 1)[0]
    assert "No model calls were made" in usage
    assert "| openai:judge | judge | 8 | 0 | 9454 | 0 | 2000 | 0 | n/a | 0.0000 |" in usage
    assert "Estimate made before any call, beside what the run used" in usage
