"""Property-based tests (hypothesis) of invariants of the metric layer.

- every objective metric's value stays in its declared ``MetricSpec.range`` whatever the reply text;
- quadratic weighted kappa is symmetric in its two raters and 1 for identical ratings;
- a bootstrap CI contains its point estimate, and on simulated data with a known mean covers it at close to
  the nominal 95% (tolerance stated below);
- SS is 1 for identical action sequences and 0 for reversed ones (distinct actions, in the lexicographic order of A.4).
"""

from __future__ import annotations

import asyncio
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sgieval.benchmarks.sfbench import load_sfbench
from sgieval.benchmarks.sgi import load_sgi_bench
from sgieval.core import Response
from sgieval.metric_pool.stats import summarize
from sgieval.metric_pool.base import CORPUS, ScoringContext
from sgieval.benchmarks.registry import predefined_metrics
from sgieval.metric_pool.sfbench import quadratic_kappa
from sgieval.metric_pool.sgi.wet_experiment import sequence_similarity
from sgieval.tests.conftest import FIXTURES

SGI_ITEMS = [i for i in load_sgi_bench(FIXTURES / "sgi") if i.task != "dry_experiment"]  # dry needs a sandbox
SF_ITEMS = load_sfbench(FIXTURES / "sfbench" / "claims.jsonl")
METRICS = predefined_metrics(["sgi-bench"], SGI_ITEMS) + predefined_metrics(["sfbench"], SF_ITEMS)

# reply texts that reach the extractors' branches: tags, boxes, option letters, numbers, JSON, protocol code
FRAGMENTS = st.sampled_from(
    [
        "<answer>",
        "</answer>",
        "\\boxed{",
        "}",
        "A",
        "B",
        "D",
        "Answer: ",
        "3",
        "-2",
        "2",
        "0.5",
        "{\"score\": ",
        "\"explanation\": \"x\"}",
        "<think>",
        "</think>",
        "step_1 = <Mix>(a=1, b=2)\n",
        "x = <Heat>(t=3)\n",
        " ",
        "\n",
        "`",
        "1e9",
        "NaN",
        "ø",
    ]
)
TEXTS = st.one_of(st.text(max_size=200), st.lists(FRAGMENTS, max_size=25).map("".join))


def _in_range(value: float, lo: float, hi: float) -> bool:
    return lo - 1e-9 <= value <= hi + 1e-9


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(TEXTS, min_size=len(SGI_ITEMS) + len(SF_ITEMS), max_size=len(SGI_ITEMS) + len(SF_ITEMS)))
def test_every_objective_metric_stays_in_its_declared_range(texts):
    items = SGI_ITEMS + SF_ITEMS
    responses = [Response(item_id=i.id, model="m", text=t) for i, t in zip(items, texts)]
    ctx = ScoringContext()

    async def score_all():
        out = []
        for m in METRICS:
            mine = [(i, r) for i, r in zip(items, responses) if m.applies(i)]
            scores = []
            for i, r in mine:
                scores += await m.score(i, r, ctx)
            out += scores
            if m.corpus_specs:
                out += m.corpus({i.id: i for i, _ in mine}, [r for _, r in mine], scores)
        return out

    specs = {s.name: s for m in METRICS for s in m.all_specs}
    for s in asyncio.run(score_all()):
        if s.status == "ok" and s.value is not None:
            lo, hi = specs[s.metric].range
            assert _in_range(s.value, lo, hi), (s.metric, s.value, specs[s.metric].range, s.item_id == CORPUS)


LIKERT = st.integers(min_value=-2, max_value=2)


@given(pairs=st.lists(st.tuples(LIKERT, LIKERT), min_size=2, max_size=40))
def test_quadratic_kappa_is_symmetric_in_its_raters(pairs):
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    k_ab, k_ba = quadratic_kappa(a, b), quadratic_kappa(b, a)
    if k_ab is None:
        assert k_ba is None
    else:
        assert math.isclose(k_ab, k_ba, abs_tol=1e-12)
        assert -1 - 1e-12 <= k_ab <= 1 + 1e-12


@given(ratings=st.lists(LIKERT, min_size=2, max_size=40).filter(lambda r: len(set(r)) >= 2))
def test_quadratic_kappa_of_identical_ratings_is_1(ratings):
    assert quadratic_kappa(ratings, list(ratings)) == 1.0


@settings(max_examples=50, deadline=None)
@given(values=st.lists(st.floats(min_value=-1e3, max_value=1e3, allow_nan=False), min_size=2, max_size=30))
def test_ci_contains_its_point_estimate(values):
    s = summarize(values, n_resamples=500, seed=1)
    assert s.ci_low <= s.mean + 1e-9 * max(1.0, abs(s.mean))
    assert s.mean <= s.ci_high + 1e-9 * max(1.0, abs(s.mean))


def test_ci_covers_a_known_mean_at_close_to_95_percent():
    """300 samples of n = 40 from N(5, 2^2) (numpy default_rng(2026)); the BCa 95% interval (1,000 resamples)
    must cover 5 in 90% to 99% of them.  Tolerance: 3 binomial standard errors around 0.95 is
    3 * sqrt(0.95 * 0.05 / 300) = 0.038, widened to [0.90, 0.99] for the known slight under-coverage of
    bootstrap intervals at n = 40."""
    rng = np.random.default_rng(2026)
    reps = 300
    covered = 0
    for r in range(reps):
        s = summarize(rng.normal(5.0, 2.0, size=40), n_resamples=1000, seed=r)
        covered += s.ci_low <= 5.0 <= s.ci_high
    assert 0.90 <= covered / reps <= 0.99, covered / reps


ACTIONS = st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=4), min_size=2, max_size=12, unique=True)


@given(actions=ACTIONS)
def test_sequence_similarity_is_1_for_identical_and_0_for_reversed(actions):
    """SS ranks names lexicographically (METRICS.md A.4), so "reversed" is the reverse of that order."""
    gt = sorted(actions)
    assert sequence_similarity(gt, list(gt)) == 1.0
    assert sequence_similarity(gt, list(reversed(gt))) == 0.0
    assert sequence_similarity(actions, list(actions)) == 1.0  # identical, in any order
