"""Rubric criterion scores outside 0-10 are never accepted.

Planted bug: criterion scores below 0 are accepted (a rubric value of -50).  A -1 or an 11 is a parse error:
the judge is asked again, and the valid second reply is the one scored."""

from __future__ import annotations

import pytest

from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.rubric import RubricMetric, _judgement_schema
from sgieval.metric_pool.rubrics import load_rubric
from sgieval.tests.metric_pool.test_rubric import ITEM, RESP, judge, verdict


@pytest.mark.parametrize("bad", [-1, 11, -50, 10.5])
def test_schema_rejects_a_criterion_score_outside_0_to_10(bad):
    with pytest.raises(ValueError):
        _judgement_schema(load_rubric("rigor")).model_validate(verdict([bad, 5, 5, 5, 5, 5]))


@pytest.mark.parametrize("edge", [0, 10])
def test_schema_accepts_the_ends_of_the_scale(edge):
    ok = _judgement_schema(load_rubric("rigor")).model_validate(verdict([edge, 5, 5, 5, 5, 5]))
    assert ok.scores[0].score == edge


@pytest.mark.parametrize(
    ("bad", "good", "expected"),
    [
        # -1 rejected; the retry gives 0,5,5,5,5,5: (0 + 25) / 6 x 10 = 41.667 (not (-1 + 25) / 6 x 10 = 40)
        (-1, 0, 250 / 6),
        # 11 rejected; the retry gives 10,5,...: (10 + 25) / 6 x 10 = 58.333 (not 60)
        (11, 10, 350 / 6),
    ],
)
async def test_out_of_range_criterion_is_retried_and_the_valid_reply_scored(bad, good, expected):
    j = judge("openai:j", [verdict([bad, 5, 5, 5, 5, 5]), verdict([good, 5, 5, 5, 5, 5])])
    [s] = await RubricMetric(load_rubric("rigor")).score(ITEM, RESP, ScoringContext(judges=[j]))
    assert s.status == "ok"
    assert s.value == pytest.approx(expected)
    assert len(j.chat.seen) == 2  # one rejected reply, one retry


async def test_only_out_of_range_replies_end_as_judge_error_never_a_value():
    j = judge("openai:j", [verdict([-50, 5, 5, 5, 5, 5])])  # the fake repeats its last reply on every retry
    [s] = await RubricMetric(load_rubric("rigor")).score(ITEM, RESP, ScoringContext(judges=[j]))
    assert s.status == "judge_error" and s.value is None
