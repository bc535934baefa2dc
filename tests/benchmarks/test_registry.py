"""The benchmark registry and the built-in definitions."""

from __future__ import annotations

import pytest

from sgieval.agents.customisation import metric_for_quality
from sgieval.benchmarks import registry
from sgieval.benchmarks.base import Benchmark
from sgieval.benchmarks.sfbench import load_sfbench
from sgieval.benchmarks.sgi import load_sgi_bench
from sgieval.core import Item, InputError
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
    specs = {s.name: s for m in registry.predefined_metrics([name]) for s in m.all_specs}
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


def test_each_benchmark_declares_its_quality_preference():
    """Which metric answers a quality is each benchmark's declaration (``Benchmark.prefer``), read for the
    benchmark holding most of the selected items; without one, the first metric declaring the quality."""
    specs = [s for d in registry.definitions() for m in registry.predefined_metrics([d.name]) for s in m.all_specs]
    by_name = {s.name: s for s in specs}
    for d in registry.definitions():
        for quality, names in d.prefer.items():
            assert names and all(by_name[n].measures(quality) for n in names), (d.name, quality)

    def item(benchmark: str, k: int) -> Item:
        return Item(id=f"{benchmark}/{k}", benchmark=benchmark, task="t", prompt="q")

    sgi, aidan = [item("sgi-bench", k) for k in range(3)], [item("sciaidanbench", k) for k in range(2)]
    assert metric_for_quality("accuracy", specs, sgi) == "em"
    assert metric_for_quality("accuracy", [s for s in specs if s.name != "em"], sgi) == "mca"  # the next one
    assert metric_for_quality("creativity", specs, aidan) == "aidan_accepted_answers"
    assert metric_for_quality("novelty", specs, aidan) == "aidan_mean_novelty"
    # a mixed selection: the benchmark with most of the items decides
    assert metric_for_quality("creativity", specs, aidan + sgi) == "idea_novelty"
    assert metric_for_quality("creativity", specs, aidan + sgi[:1]) == "aidan_accepted_answers"
    assert metric_for_quality("accuracy", specs, [item("jsonl:qa", 0)]) == "exact_match"
    # no preference declared: the first metric that declares the quality, in pool order
    assert metric_for_quality("feasibility", specs) == next(s.name for s in specs if "feasibility" in s.qualities)
    assert metric_for_quality("safety", specs, sgi) is None


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
