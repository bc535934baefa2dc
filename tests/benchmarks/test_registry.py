"""The benchmark registry and the built-in definitions (issue 10, item 1)."""

from __future__ import annotations

import pytest

from sgieval.agents.customisation import metric_for_quality
from sgieval.benchmarks import registry
from sgieval.benchmarks.base import Benchmark
from sgieval.benchmarks.sfbench import load_sfbench
from sgieval.benchmarks.sgi import load_sgi_bench
from sgieval.core import InputError
from sgieval.tests.conftest import FIXTURES


def test_builtins_in_catalog_order():
    assert registry.names() == ["sciaidanbench", "sgi-bench", "sfbench", "jsonl"]
    assert [d.name for d in registry.with_data()] == ["sciaidanbench", "sgi-bench", "sfbench"]
    assert registry.find("jsonl:sample_qa").name == "jsonl"  # items of a JSONL file carry jsonl:<stem>
    assert registry.for_path("my/questions.jsonl").name == "jsonl" and registry.for_path("x.csv") is None
    with pytest.raises(
        InputError,
        match=r"benchmark: unknown benchmark 'nope'. Fix: use one of sciaidanbench, "
        r"sgi-bench, sfbench, jsonl, or a path",
    ):
        registry.get("nope")
    from sgieval.benchmarks import load_benchmark

    with pytest.raises(InputError, match=r"benchmark: 'jsonl' is loaded from a file. Fix: give the path of a .jsonl"):
        load_benchmark("jsonl")


@pytest.mark.parametrize("name", ["sciaidanbench", "sgi-bench", "sfbench", "jsonl"])
def test_declared_primary_metrics_are_the_primary_specs(name):
    defn = registry.get(name)
    specs = {s.name: s for m in defn.metrics(None) for s in m.all_specs}
    for task, metric in defn.primary.items():
        assert specs[metric].primary, (task, metric)
        assert task in specs[metric].tasks or "*" in specs[metric].tasks
    # every primary spec of the pool is declared by the definition
    assert {n for n, s in specs.items() if s.primary} == set(defn.primary.values())


def test_prompt_templates_are_what_the_loaders_send():
    sgi = registry.get("sgi-bench")
    for it in load_sgi_bench(FIXTURES / "sgi"):
        fields = {"question": it.metadata["question"]}
        if it.task == "experimental_reasoning":
            fields["options"] = "\n".join(f"{chr(65 + k)}. {o}" for k, o in enumerate(it.reference["options"]))
        assert sgi.prompts[it.task].format(**fields) == it.prompt, it.id
    sf = registry.get("sfbench")
    for it in load_sfbench(FIXTURES / "sfbench" / "claims.jsonl"):
        assert (
            sf.prompts["feasibility"].format(
                claim=it.metadata["question"], assessment_date=it.metadata["assessment_date"]
            )
            == it.prompt
        )


def test_metric_qualities_rank_as_the_old_customisation_table():
    """The table that used to live in agents/customisation.py, now read from MetricSpec.qualities."""
    old = {
        "creativity": ["aidan_accepted_answers", "idea_novelty", "idea_final_score"],
        "novelty": ["idea_novelty", "aidan_mean_novelty", "aidan_accepted_answers"],
        "feasibility": ["idea_feasibility", "sfbench_qwk"],
        "accuracy": [
            "em",
            "mca",
            "sfbench_qwk",
            "dry_passall_5",
            "wet_final_score",
            "exact_match",
            "exact_match_normalised",
        ],
    }  # the generic JSONL metrics last
    specs = [s for d in registry.all() for m in d.metrics(None) for s in m.all_specs]
    for quality, names in old.items():
        ranked = sorted((s for s in specs if quality in s.qualities), key=lambda s: s.qualities[quality])
        assert [s.name for s in ranked] == names, quality
        # with only some of them applicable, the best-ranked applicable one wins
        assert metric_for_quality(quality, [s for s in specs if s.name in names[1:]]) == names[1]
    assert metric_for_quality("safety", specs) is None


def test_vocabulary_joins_every_definition():
    v = registry.vocabulary()
    assert v.disciplines["life"][1] == ["biology", "life"]  # SciAidanBench's Biology, SGI-Bench's life
    assert v.disciplines["material"][1] == ["material", "materials science"]  # SGI-Bench, then SFBench
    assert "bio" in v.disciplines["life"][0]
    assert [t for t, _ in v.tasks] == [
        "open_creativity",
        "idea_generation",
        "deep_research",
        "dry_experiment",
        "wet_experiment",
        "experimental_reasoning",
        "feasibility",
    ]
    assert list(v.benchmarks) == ["sciaidanbench", "sgi-bench", "sfbench"]


def test_register_refuses_builtin_duplicate_and_bad_names():
    defn = Benchmark(name="reg-test", loader=lambda folder: [])
    try:
        assert registry.register(defn) is defn and registry.register(defn) is defn  # same definition: no-op
        assert registry.names()[-1] == "reg-test"
        with pytest.raises(InputError, match="another benchmark is already registered as 'reg-test'"):
            registry.register(Benchmark(name="reg-test", loader=lambda folder: [1]))
        registry.register(Benchmark(name="reg-test", description="v2", loader=lambda folder: []), replace=True)
        assert registry.get("reg-test").description == "v2"
    finally:
        registry.unregister("reg-test")
    assert registry.find("reg-test") is None
    with pytest.raises(InputError, match="benchmark 'sgi-bench' is built in"):
        registry.register(Benchmark(name="sgi-bench", loader=lambda folder: []))
    with pytest.raises(InputError, match="benchmark name 'a b' is not a plain name"):
        registry.register(Benchmark(name="a b", loader=lambda folder: []))
