"""The ranking metric answers the quality that was asked (customisation side)."""

from __future__ import annotations

from sgieval.agents.customisation import detect_qualities, offline_metric_plan
from sgieval.core import IDEA_GENERATION, OPEN_CREATIVITY, Item
from sgieval.benchmarks.registry import predefined_metrics


def _plan(request, benchmark, task):
    items = [Item(id=f"{benchmark}/x/0", benchmark=benchmark, task=task, prompt="q")]
    return offline_metric_plan(request, items, predefined_metrics([benchmark], items))


def test_novel_ideas_rank_by_a_novelty_metric():
    assert detect_qualities("Which model writes the most novel ideas in nanoscience, top 10 questions only") == [
        "novelty"
    ]
    p = _plan(
        "Which model writes the most novel ideas in nanoscience, top 10 questions only",
        "sciaidanbench",
        OPEN_CREATIVITY,
    )
    assert p.primary == "aidan_mean_novelty" and p.stand_in == ""
    assert p.reason == "'novelty' is measured by the predefined metric aidan_mean_novelty"
    assert _plan("Which model has the most novel ideas?", "sgi-bench", IDEA_GENERATION).primary == "idea_novelty"
    # creativity stays the accepted-answer count on SciAidanBench
    assert (
        _plan("Which model is the most creative in chemistry?", "sciaidanbench", OPEN_CREATIVITY).primary
        == "aidan_accepted_answers"
    )


def test_a_stand_in_metric_is_named_with_the_reason():
    p = _plan("Which model is the most creative?", "sgi-bench", IDEA_GENERATION)
    assert p.primary == "idea_novelty"
    assert p.stand_in == (
        "'creativity' is ranked by idea_novelty instead: idea generation has no creativity metric; "
        "the novelty dimension is its closest measure"
    )


def test_an_unmeasured_quality_names_the_metric_used_instead():
    p = _plan("Which model is the most honest?", "sciaidanbench", OPEN_CREATIVITY)
    assert p.primary == "aidan_accepted_answers"
    assert p.stand_in == (
        "'honest' is measured by no metric or rubric here, so the ranking uses the benchmark's "
        "primary metric aidan_accepted_answers instead (define a rubric with `sgieval metric define`)"
    )
