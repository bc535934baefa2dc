"""SGI-Score asserted whole: every TaskTerm of a result with a missing task, a task whose
scores all failed and failed scores beside ok ones; the summary lines; the scale of each component; one model
chosen among several; scores of unknown items ignored."""

from __future__ import annotations

from sgieval.core import Item, MetricSpec, Score
from sgieval.metric_pool.sgi.sgi_score import (
    SGIScoreResult,
    TaskTerm,
    _scale,
    default_components,
    sgi_score,
    sgi_scores_by_model,
)

COMPONENTS = {
    "deep_research": ("em", 100.0),
    "idea_generation": ("idea_final_score", 1.0),
    "dry_experiment": ("dry_passall_5", 100.0),
    "wet_experiment": ("wet_final_score", 100.0),
    "experimental_reasoning": ("mca", 100.0),
}


def _item(task, k, discipline="physics"):
    return Item(id=f"{task}_{k}", benchmark="sgi-bench", task=task, discipline=discipline, prompt="p")


def _data(model="m"):
    items, scores = {}, []

    def add(task, metric, values, discipline="physics"):
        for k, v in enumerate(values):
            it = _item(task, f"{discipline}{k}", discipline)
            items[it.id] = it
            if v == "fail":
                scores.append(
                    Score(item_id=it.id, model=model, metric=metric, value=None, status="judge_error", error="x")
                )
            else:
                scores.append(Score(item_id=it.id, model=model, metric=metric, value=v))

    add("deep_research", "em", [1.0, 0.0, 0.0, "fail"])  # 1/3 -> 33.33, 1 failed
    add("idea_generation", "idea_final_score", [40.0, 50.0], "life")  # native 0-100 -> 45.0
    add("dry_experiment", "dry_passall_5", ["fail", "fail"])  # all failed: missing
    add("experimental_reasoning", "mca", [1.0, 1.0, 0.0, 1.0])  # 75.0; wet_experiment: no scores
    scores.append(Score(item_id="unknown", model=model, metric="em", value=1.0))  # not in items: ignored
    return scores, items


def test_terms_missing_tasks_and_partial_mean_whole():
    scores, items = _data()
    r = sgi_score(scores, items, components=COMPONENTS)
    assert r.terms == {
        "deep_research": TaskTerm("deep_research", "DR", "em", 33.33, 3, 1, ""),
        "idea_generation": TaskTerm("idea_generation", "IG", "idea_final_score", 45.0, 2, 0, ""),
        "dry_experiment": TaskTerm(
            "dry_experiment", "DE", "dry_passall_5", None, 0, 2, "all 2 dry_passall_5 scores failed"
        ),
        "wet_experiment": TaskTerm("wet_experiment", "WE", "wet_final_score", None, 0, 0, "no wet_final_score scores"),
        "experimental_reasoning": TaskTerm("experimental_reasoning", "ER", "mca", 75.0, 4, 0, ""),
    }
    assert (r.model, r.sgi_score, r.missing, r.partial) == ("m", None, ["dry_experiment", "wet_experiment"], 51.11)
    assert r.summary() == (
        "SGI-Score not available: missing dry_experiment, wet_experiment (DR 33.33, IG 45.00, "
        "DE missing, WE missing, ER 75.00); partial mean over present tasks (not an SGI-Score): "
        "51.11"
    )
    assert [t.missing for t in r.terms.values()] == [False, False, True, True, False]


def test_per_discipline_results_use_the_same_rule():
    scores, items = _data()
    r = sgi_score(scores, items, components=COMPONENTS)
    assert sorted(r.by_discipline) == ["life", "physics"]
    life = r.by_discipline["life"]
    assert ({t: term.value for t, term in life.terms.items()}, life.partial, life.by_discipline) == (
        {
            "deep_research": None,
            "idea_generation": 45.0,
            "dry_experiment": None,
            "wet_experiment": None,
            "experimental_reasoning": None,
        },
        45.0,
        {},
    )
    assert r.by_discipline["physics"].partial == round((33.33 + 75.0) / 2, 2)


def test_nothing_present_has_no_partial_mean():
    r = sgi_score([], {}, components=COMPONENTS)
    assert (r.model, r.sgi_score, r.partial, len(r.missing)) == ("", None, None, 5)
    assert r.summary() == (
        "SGI-Score not available: missing deep_research, idea_generation, dry_experiment, "
        "wet_experiment, experimental_reasoning (DR missing, IG missing, DE missing, WE missing, "
        "ER missing); partial mean over present tasks (not an SGI-Score): n/a"
    )


def test_complete_result_and_model_choice():
    items, scores = {}, []
    for task, (metric, _scale_) in COMPONENTS.items():
        it = _item(task, 0)
        items[it.id] = it
        scores.append(Score(item_id=it.id, model="a", metric=metric, value=50.0 if _scale_ == 1.0 else 0.5))
        scores.append(Score(item_id=it.id, model="b", metric=metric, value=0.0))
    r = sgi_score(scores, items, components=COMPONENTS, model="a")
    assert (r.sgi_score, r.missing, r.partial) == (50.0, [], None)
    assert r.summary() == "SGI-Score 50.00 (DR 50.00, IG 50.00, DE 50.00, WE 50.00, ER 50.00)"
    both = sgi_scores_by_model(scores, items, components=COMPONENTS)
    assert {m: x.sgi_score for m, x in both.items()} == {"a": 50.0, "b": 0.0}
    assert isinstance(both["a"], SGIScoreResult)


def test_scale_of_a_component_follows_its_range():
    assert _scale(MetricSpec(name="x", tasks=["t"], range=(0.0, 1.0))) == 100.0
    assert _scale(MetricSpec(name="x", tasks=["t"], range=(0.0, 100.0))) == 1.0
    assert _scale(MetricSpec(name="x", tasks=["t"], range=(0.0, 1.5))) == 1.0
    assert default_components() == COMPONENTS


def test_a_failed_score_that_kept_a_value_is_counted_as_failed():
    scores, items = _data()
    it = _item("experimental_reasoning", "x9")
    items[it.id] = it
    scores.append(Score(item_id=it.id, model="m", metric="mca", value=0.0, status="parse_error", error="x"))
    er = sgi_score(scores, items, components=COMPONENTS).terms["experimental_reasoning"]
    assert (er.value, er.n, er.n_failed) == (75.0, 4, 1)


def test_complete_result_rounds_to_two_decimals_and_names_its_model():
    items, scores = {}, []
    for task, (metric, scale) in COMPONENTS.items():
        for k, v in enumerate([1.0, 0.0, 0.0] if task == "deep_research" else [0.0]):
            it = _item(task, k, "bio")
            items[it.id] = it
            scores.append(Score(item_id=it.id, model="a", metric=metric, value=v))
    r = sgi_score(scores, items, components=COMPONENTS)
    assert (r.model, r.sgi_score, r.by_discipline["bio"].model, r.by_discipline["bio"].sgi_score) == (
        "a",
        6.67,
        "a",
        6.67,
    )  # DR 33.33 + 0 + 0 + 0 + 0 = 33.33 / 5 = 6.666


def test_by_model_uses_the_components_given():
    scores, items = _data()
    custom = {**COMPONENTS, "experimental_reasoning": ("mca_lenient", 100.0)}
    r = sgi_scores_by_model(scores, items, components=custom)["m"]
    assert r.terms["experimental_reasoning"].metric == "mca_lenient"
    assert r.terms["experimental_reasoning"].reason == "no mca_lenient scores"
