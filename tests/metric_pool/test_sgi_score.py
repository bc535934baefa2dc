"""SGI-Score (A.6) with per-task and per-discipline terms, missing tasks, and the
SGI-Bench metric list."""

import pytest

from sgieval.core import InputError, Item, Score
from sgieval.metric_pool.registry import entries
from sgieval.metric_pool.sgi import sgi_score, sgi_scores_by_model
from sgieval.metric_pool.sgi.sgi_score import default_components

COMPONENTS = {
    "deep_research": ("em", 100.0),
    "idea_generation": ("idea_final_score", 1.0),
    "dry_experiment": ("dry_passall_5", 100.0),
    "wet_experiment": ("wet_final_score", 100.0),
    "experimental_reasoning": ("mca", 100.0),
}


def build(model="openai:gpt-4.1", skip=(), discipline_of=lambda k: "physics"):
    """Per-item scores reproducing the README's GPT-4.1 row with the real item counts:
    DR 36/318 = 0.113207 -> 11.32; IG mean 36.49 over 315 items; DE 93/271 = 0.343173 -> 34.32;
    WE 68 items summing to 24.9084 -> 0.3663 -> 36.63; ER 112/291 = 0.384880 -> 38.49."""
    items, scores = {}, []

    def add(task, metric, values):
        if task in skip:
            return
        for k, v in enumerate(values):
            iid = f"sgi-bench/{task}_{k:04d}"
            items[iid] = Item(id=iid, benchmark="sgi-bench", task=task, discipline=discipline_of(k), prompt="p")
            scores.append(Score(item_id=iid, model=model, metric=metric, value=v))

    add("deep_research", "em", [1.0] * 36 + [0.0] * 282)
    add("idea_generation", "idea_final_score", [36.49] * 315)
    add("dry_experiment", "dry_passall_5", [1.0] * 93 + [0.0] * 178)
    add("wet_experiment", "wet_final_score", [1.0] * 24 + [0.9084] + [0.0] * 43)
    add("experimental_reasoning", "mca", [1.0] * 112 + [0.0] * 179)
    return scores, items


def test_gpt41_example():
    scores, items = build()
    r = sgi_score(scores, items, components=COMPONENTS)
    assert {t.label: t.value for t in r.terms.values()} == {
        "DR": 11.32,
        "IG": 36.49,
        "DE": 34.32,
        "WE": 36.63,
        "ER": 38.49,
    }
    assert [t.n for t in r.terms.values()] == [318, 315, 271, 68, 291]
    # (11.32 + 36.49 + 34.32 + 36.63 + 38.49) / 5 = 157.25 / 5 = 31.45
    assert r.sgi_score == 31.45
    assert r.missing == [] and r.partial is None
    assert r.summary() == "SGI-Score 31.45 (DR 11.32, IG 36.49, DE 34.32, WE 36.63, ER 38.49)"


def test_missing_task_is_not_zero():
    scores, items = build(skip=("idea_generation",))
    r = sgi_score(scores, items, components=COMPONENTS)
    assert r.sgi_score is None
    assert r.missing == ["idea_generation"]
    assert r.terms["idea_generation"].value is None
    assert r.terms["idea_generation"].reason == "no idea_final_score scores"
    # partial mean over the 4 present terms: (11.32 + 34.32 + 36.63 + 38.49) / 4 = 120.76 / 4 = 30.19
    assert r.partial == 30.19
    assert r.summary() == (
        "SGI-Score not available: missing idea_generation (DR 11.32, IG missing, DE 34.32, "
        "WE 36.63, ER 38.49); partial mean over present tasks (not an SGI-Score): 30.19"
    )


def test_failed_scores_are_excluded_and_counted():
    scores, items = build()
    # one extra DR item whose em failed: excluded from the mean (D.7), counted
    items["sgi-bench/dr_fail"] = Item(
        id="sgi-bench/dr_fail", benchmark="sgi-bench", task="deep_research", prompt="p", discipline="physics"
    )
    scores.append(
        Score(item_id="sgi-bench/dr_fail", model="openai:gpt-4.1", metric="em", status="infra_error", error="timeout")
    )
    # a task whose every score failed is missing
    scores = [s for s in scores if s.metric != "mca"] + [
        Score(
            item_id="sgi-bench/experimental_reasoning_0000",
            model="openai:gpt-4.1",
            metric="mca",
            status="parse_error",
            error="x",
        )
    ]
    r = sgi_score(scores, items, components=COMPONENTS)
    assert (r.terms["deep_research"].value, r.terms["deep_research"].n, r.terms["deep_research"].n_failed) == (
        11.32,
        318,
        1,
    )
    assert r.missing == ["experimental_reasoning"]
    assert r.terms["experimental_reasoning"].reason == "all 1 mca scores failed"


def test_per_discipline_breakdown():
    # even item index -> physics, odd -> life
    scores, items = build(discipline_of=lambda k: "physics" if k % 2 == 0 else "life")
    r = sgi_score(scores, items, components=COMPONENTS)
    assert sorted(r.by_discipline) == ["life", "physics"]
    phys = r.by_discipline["physics"]
    # DR physics: even indices 0..316 (159 items), hits at even k < 36 -> 18 -> 18/159 = 0.113208 -> 11.32
    assert phys.terms["deep_research"].n == 159 and phys.terms["deep_research"].value == 11.32
    # ER life: odd k < 291 -> 145 items, hits at odd k < 112 -> 56 -> 56/145 = 0.386207 -> 38.62
    life = r.by_discipline["life"]
    assert life.terms["experimental_reasoning"].n == 145 and life.terms["experimental_reasoning"].value == 38.62
    assert phys.sgi_score is not None and life.sgi_score is not None


def test_mixed_models_need_a_choice():
    s1, items = build(model="a:m1")
    s2, _ = build(model="b:m2", skip=("wet_experiment",))
    with pytest.raises(InputError) as e:
        sgi_score(s1 + s2, items, components=COMPONENTS)
    assert str(e.value) == (
        "sgi_score(scores): scores of several models ['a:m1', 'b:m2']. "
        "Fix: pass model=<name> or use sgi_scores_by_model()"
    )
    both = sgi_scores_by_model(s1 + s2, items, components=COMPONENTS)
    assert (both["a:m1"].sgi_score, both["b:m2"].sgi_score, both["b:m2"].missing) == (31.45, None, ["wet_experiment"])


def test_default_components_use_primary_specs():
    comps = default_components()
    assert comps["deep_research"] == ("em", 100.0)
    assert comps["wet_experiment"] == ("wet_final_score", 100.0)
    assert comps["experimental_reasoning"] == ("mca", 100.0)
    assert set(comps) == set(COMPONENTS)


def test_sgi_metric_list():
    specs = [s for e in entries() if e.scope == "sgi-bench" for s in e.specs]
    names = [s.name for s in specs]
    assert len(names) == len(set(names))
    for n in (
        "em",
        "em_normalised",
        "sla",
        "wet_sequence_similarity",
        "wet_parameter_accuracy",
        "wet_final_score",
        "wet_parameter_accuracy_perm",
        "wet_final_score_code",
        "wet_soft_parameter_accuracy",
        "mca",
        "mca_lenient",
        "reasoning_validity",
    ):
        assert n in names
    by = {s.name: s for s in specs}
    assert all(s.benchmark == "sgi-bench" for s in specs)
    assert (by["em_normalised"].variant_of, by["wet_parameter_accuracy_perm"].variant_of) == (
        "em",
        "wet_parameter_accuracy",
    )
    assert by["reasoning_validity"].range == (0.0, 10.0) and by["reasoning_validity"].kind == "judge"
    assert by["em"].source == "METRICS.md A.1 / paper arXiv 2512.16969"
    primaries = {
        s.tasks[0]
        for s in specs
        if s.primary and s.tasks[0] in ("deep_research", "wet_experiment", "experimental_reasoning")
    }
    assert primaries == {"deep_research", "wet_experiment", "experimental_reasoning"}


def test_gpt41_example_with_default_components():
    # default components: the primary spec of each task (fallback names when a module is absent)
    scores, items = build()
    assert sgi_score(scores, items).sgi_score == 31.45
