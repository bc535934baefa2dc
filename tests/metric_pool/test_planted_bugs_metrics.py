"""Tests that kill planted one-line bugs in the code that decides a number.

Each test names the planted bug it kills; the expected values are computed by hand in the comments.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sgieval.core import OPEN_CREATIVITY, Item, Response
from sgieval.metric_pool.stats import summarize
from sgieval.metric_pool.aidanbench import AnswerCountMetrics
from sgieval.metric_pool.base import ScoringContext
from sgieval.metric_pool.sgi.reasoning import extract_option_lenient

ITEM = Item(
    id="sciaidanbench/chemistry/0",
    benchmark="sciaidanbench",
    task=OPEN_CREATIVITY,
    discipline="Chemistry",
    prompt="Name a use of graphene.",
)


def _rec(i: int, coherence: float, novelty: float, stop: str | None) -> dict:
    return {
        "answer_num": i,
        "answer": f"answer {i}",
        "coherence_score": coherence,
        "embedding_dissimilarity_score": novelty,
        "stopping_condition": stop,
    }


# --------------------------------------------------------------- AidanBench counts (METRICS.md B.6, D.6)
async def _aidan_values(records):
    """Per-question and corpus-level (pooled) values of the AidanBench count metrics for one stored list."""
    resp = Response(item_id=ITEM.id, model="replay:x", text="", metadata={"records": records})
    m = AnswerCountMetrics()
    per = await m.score(ITEM, resp, ScoringContext())
    pooled = m.corpus({ITEM.id: ITEM}, [resp], per)
    return {s.metric: s.value for s in per + pooled}


async def test_aidan_mean_novelty_and_coherence_exclude_the_rejected_last_record():
    """Planted bug: mean novelty includes the rejected terminating record."""
    records = [_rec(1, 90, 0.80, None), _rec(2, 70, 0.60, None), _rec(3, 50, 0.70, None), _rec(4, 40, 0.06, "novelty")]
    got = await _aidan_values(records)
    # accepted = the three records with stopping_condition null
    assert got["aidan_accepted_answers"] == 3.0
    assert got["aidan_published_count"] == 4.0  # len(list), the rejected answer included (B.6)
    # pooled without the first answer (D.15): (0.60 + 0.70) / 2 = 0.65; with the rejected 0.06: 1.36 / 3 = 0.453
    assert got["aidan_mean_novelty"] == pytest.approx(0.65)
    assert got["aidan_mean_novelty_per_item"] == pytest.approx(0.65)
    # with the first answer: (0.80 + 0.60 + 0.70) / 3 = 0.70; with the rejected 0.06 it would be 2.16 / 4 = 0.54
    assert got["aidan_mean_novelty_with_first"] == pytest.approx(0.70)
    # (90 + 70 + 50) / 3 = 70; with the rejected 40 it would be 62.5
    assert got["aidan_mean_coherence"] == pytest.approx(70.0)
    assert got["aidan_mean_coherence_per_item"] == pytest.approx(70.0)


async def test_aidan_single_accepted_answer_then_coherence_stop():
    """Variant: one accepted answer, the list ends on a coherence stop."""
    got = await _aidan_values([_rec(1, 80, 0.90, None), _rec(2, 10, 0.95, "coherence")])
    assert got["aidan_accepted_answers"] == 1.0 and got["aidan_published_count"] == 2.0
    # the only accepted answer is the first: nothing to be novel against, no novelty mean (not 1.0, not 0)
    assert got["aidan_mean_novelty"] is None and got["aidan_mean_novelty_per_item"] is None
    assert got["aidan_mean_novelty_with_first"] == pytest.approx(0.90)  # not (0.90 + 0.95) / 2 = 0.925
    assert got["aidan_mean_coherence"] == pytest.approx(80.0)  # not 45


# --------------------------------------------------------------- lenient option index (A.5, sgieval extension)
@pytest.mark.parametrize(
    ("text", "n_options", "expected"),
    [
        ("Answer: 3", 4, "D"),  # 0-based index 3 of options A-D: the last option
        ("Answer: 4", 4, None),  # index 4 is past the last of 4 options: no answer, never "E"
        ("Answer: 0", 4, "A"),  # the first option
        ("\\boxed{2}", 3, "C"),  # last index of 3 options
        ("\\boxed{3}", 3, None),  # one past the end of 3 options
        ("the answer is 9", 10, "J"),
        ("the answer is 10", 10, None),
    ],
)
def test_lenient_option_index_at_the_edges_of_the_option_list(text, n_options, expected):
    """Planted bug: an off-by-one in the index bound reads "Answer: 4" of 4 options as E."""
    assert extract_option_lenient(text, n_options) == expected


# --------------------------------------------------------------- bootstrap CI (stats.summarize)
def test_95_percent_ci_bounds_for_a_fixed_sample_and_seed():
    """Planted bug: the interval computed is a 90% one while the report says "95% CI".

    The sample: 40 draws of N(10, 2) (numpy default_rng(7)).  An independent check: the normal-theory 95%
    interval mean +- 1.96 s/sqrt(n) (s with ddof=1).  The BCa bootstrap interval agrees with it within 0.02
    on either side (tolerance 0.05), while a 90% interval (z = 1.645) is 0.315 s/sqrt(n) ~ 0.08 narrower
    on each side.
    The exact bounds (scipy BCa, 10,000 resamples, seed 0) are pinned as well."""
    x = np.random.default_rng(7).normal(10.0, 2.0, size=40)
    s = summarize(x, n_resamples=10000, seed=0)
    se = float(x.std(ddof=1)) / math.sqrt(len(x))
    assert s.n == 40 and s.mean == pytest.approx(float(x.mean()))
    assert s.ci_low == pytest.approx(s.mean - 1.96 * se, abs=0.05)
    assert s.ci_high == pytest.approx(s.mean + 1.96 * se, abs=0.05)
    # the 90% interval of the same data is strictly inside
    s90 = summarize(x, n_resamples=10000, seed=0, confidence=0.90)
    assert s90.ci_low > s.ci_low + 0.05 and s90.ci_high < s.ci_high - 0.05
    assert (round(s.ci_low, 4), round(s.ci_high, 4)) == PINNED_95


PINNED_95 = (8.6845, 9.7002)
"""scipy.stats.bootstrap BCa, 95%, 10,000 resamples, default_rng(0), on the sample above (mean 9.2096,
s/sqrt(n) = 0.2596; normal theory gives 8.7009 to 9.7183)."""
