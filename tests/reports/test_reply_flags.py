"""The Failures section counts truncated, empty, no-answer-found and injection-suspected records apart from
errors, and each CI cell says what kind of interval it is."""

from __future__ import annotations

import math

from sgieval.core import Response, Score
from sgieval.metric_pool.stats import summarize
from sgieval.reports import ci_text
from sgieval.reports.failures import failures


def test_reply_flags_count_each_kind_apart():
    responses = [
        Response(item_id="1", model="m", status="truncated", error="cut"),
        Response(item_id="2", model="m", status="empty", error="empty reply"),
        Response(item_id="3", model="m", status="empty", error="empty reply"),
        Response(item_id="4", model="m", status="infra_error", error="HTTP 500"),
        Response(item_id="5", model="m", text="x"),
    ]
    scores = [
        Score(item_id="1", model="m", metric="em", status="truncated", error="no response"),
        Score(item_id="5", model="m", metric="em", value=0.0, details={"no_answer": True}),
        Score(item_id="5", model="m", metric="numeric_match", value=0.0, details={"no_answer": True}),
        Score(item_id="6", model="m", metric="em", value=0.0, details={"no_answer": True}),
        Score(
            item_id="5",
            model="m",
            metric="coherence",
            value=100.0,
            evidence=[{"tool": "judge", "injection_suspected": True}],
        ),
        Score(item_id="6", model="m", metric="rubric", value=50.0, details={"injection_suspected": True}),
        Score(item_id="7", model="m", metric="rubric", status="judge_error", error="unparsable"),
        Score(
            item_id="8",
            model="m",
            metric="mean_coh",
            status="not_run",
            error="no accepted answers",
            details={"not_applicable": True},
        ),
    ]
    assert failures(responses, scores)["apart"] == {
        "truncated": 1,
        "empty": 2,
        "no_answer": 3,
        "no_answer_by_metric": "em 2, numeric_match 1",
        "injection": 2,
        "errors": 2,
        "errors_by_status": "infra_error 1, judge_error 1",
    }  # errors: the HTTP 500 response and the judge_error score


def test_ci_cells_say_what_the_interval_is():
    assert ci_text(summarize([1.0] * 8)) == "0.68 to 1.00 (Wilson score, 0/1 metric)"
    assert ci_text(summarize([3.0, 3.0], binary=False)) == "no variation over 2 items"
    assert ci_text(summarize([3.0])) == "n/a (no CI: fewer than 2 items)"
    s = summarize([1.0, 2.0, 4.0], n_resamples=999)
    assert ci_text(s) == f"{s.ci_low:.2f} to {s.ci_high:.2f}" and not math.isnan(s.ci_low)  # one format per table
