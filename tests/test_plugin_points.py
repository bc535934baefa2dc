"""The plug-in points of DESIGN.md "Adding things", as the checks of a redesign's "done" list.

Where each check lives (the ones not written here):

- a toy benchmark, one module plus one registration line, run end to end: tests/benchmarks/test_toy_benchmark.py
  (its metrics declared with ``@metric(spec, scope=...)`` in the same module and named by its definition);
- a toy objective metric, one new file in metric_pool/ and no other change, found by the registry and scored on any
  benchmark's items: tests/metric_pool/test_metric_registry.py (``test_a_new_metric_is_one_file_in_metric_pool``);
  one module with one decorator, chosen by the customisation agent for its quality word (offline and by a scripted
  agent model): the same file (``toy_brevity.py``);
- a report section, one builder and one registration, in report.md, report.json, the viewer's data and read by the
  narrative's number check: tests/reports/test_sections.py;
- a provider prefix with its own base URL, one registration line: tests/models/test_providers.py
  (``test_a_provider_prefix_with_its_own_base_url_is_one_registration_line``), and a vLLM-style target with an
  OpenAI-style judge on two mock servers (``test_a_vllm_target_and_an_openai_judge_on_two_servers``);
- two benchmarks that both define exact_match, each scored on every item: tests/metric_pool/test_metric_registry.py;
- an Anthropic judge of another Anthropic model is no self-preference: tests/metric_pool/test_reliability.py;
- no private name of langchain-core, langchain-openai or openai: tests/models/test_public_api_only.py;
- a call with the optional openai packages missing: tests/models/test_openai_direct.py
  (``test_a_call_works_without_the_optional_openai_package``).
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from importlib.metadata import version

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import sgieval
from sgieval.benchmarks import registry as benchmarks
from sgieval.benchmarks.base import Benchmark
from sgieval.benchmarks.user import load_yaml_benchmark
from sgieval.core import InputError, MetricSpec
from sgieval.metric_pool import registry
from sgieval.metric_pool.base import MetricResult
from sgieval.tests.benchmarks.test_yaml_benchmark import RECORDS, YAML
from sgieval.tests.conftest import REPO

PINNED = ("langchain-core", "langchain-openai", "openai")


@pytest.mark.parametrize("package", PINNED)
def test_the_transport_packages_are_pinned_to_one_minor_version(package):
    """Each of the three is required as ``>=X.Y,<X.Y+1`` (one tested minor version) and the installed one is in it."""
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (req,) = [Requirement(d) for d in deps if Requirement(d).name == package]
    lower = [Version(s.version) for s in req.specifier if s.operator == ">="]
    upper = [Version(s.version) for s in req.specifier if s.operator == "<"]
    assert len(lower) == 1 and len(upper) == 1, f"{package}: {req.specifier}"
    assert (upper[0].major, upper[0].minor) == (lower[0].major, lower[0].minor + 1), f"{package}: {req.specifier}"
    assert req.specifier.contains(version(package)), f"{package} {version(package)} is outside {req.specifier}"


ONE = MetricSpec(name="capitals_one", tasks=["*"], description="1 for every reply", source="test")
WORDS = MetricSpec(name="reply_words", tasks=["*"], description="words in the reply", source="test")


def _capitals_one(item, response):
    return MetricResult(1.0, "one")


def _reply_words(item, response):
    return MetricResult(float(len(response.text.split())), "words")


@pytest.fixture
def two_scopes(tmp_path):
    """A metric of one benchmark (``capitals``, its specs' tasks ``*``, named by that benchmark) and one of every
    benchmark, declared as a metric module would; the YAML benchmark and the JSONL file of the two-benchmark run."""
    registry.metric(WORDS, qualities={"wordiness": (r"wordy|wordiest",)})(_reply_words)
    (tmp_path / "qa").mkdir()
    (tmp_path / "qa" / "capitals.jsonl").write_text(
        "".join(
            json.dumps({"id": i, "prompt": p, "reference": r, "metadata": {"region": g}}) + "\n"
            for i, p, r, g in RECORDS
        )
    )
    (tmp_path / "capitals.yaml").write_text(YAML)
    defn = load_yaml_benchmark(tmp_path / "capitals.yaml")  # declares its listed metrics afresh
    registry.metric(ONE, scope="capitals")(_capitals_one)
    benchmarks.register(dataclasses.replace(defn, metrics=(*defn.metrics, "capitals_one")), replace=True)
    (tmp_path / "qa.jsonl").write_text(
        json.dumps({"id": "1", "prompt": "2 + 2?", "reference": "4"})
        + "\n"
        + json.dumps({"id": "2", "prompt": "Largest planet?", "reference": "Jupiter"})
        + "\n"
    )
    texts = {"capitals/fr": "Paris", "capitals/jp": "Kyoto", "capitals/ke": "It is Nairobi", "jsonl:qa/1": "4",
             "jsonl:qa/2": "Saturn, I think"}  # fmt: skip
    (tmp_path / "m.jsonl").write_text(
        "".join(json.dumps({"item_id": i, "text": f"<answer>{t}</answer>"}) + "\n" for i, t in texts.items())
    )
    yield tmp_path
    registry.unregister_scope("capitals")
    registry.unregister((registry.ALL, "reply_words"))
    benchmarks.unregister("capitals")


def test_a_benchmarks_metric_scores_its_items_only_and_an_all_benchmark_metric_every_item(two_scopes):
    """A metric declared for the benchmark ``capitals`` and named by it scores its 3 items and none of the JSONL
    file's, though its spec applies to any task; a metric declared for every benchmark, chosen for its quality
    word, scores all 5 items of both."""
    tmp = two_scopes
    run = sgieval.evaluate(
        "Which model gives the wordiest answers?",
        benchmark=["capitals", str(tmp / "qa.jsonl")],
        models=f"replay:{tmp / 'm.jsonl'}",
        out_dir=tmp / "runs",
        run_id="scopes",
        bootstrap_resamples=99,
    )
    assert len(run.items) == 5
    assert {s.item_id: s.value for s in run.values("capitals_one")} == {
        "capitals/fr": 1.0,
        "capitals/jp": 1.0,
        "capitals/ke": 1.0,
    }
    # "<answer>It is Nairobi</answer>" is 3 words, "<answer>Saturn, I think</answer>" 3
    assert {s.item_id: s.value for s in run.values("reply_words")} == {
        "capitals/fr": 1.0,
        "capitals/jp": 1.0,
        "capitals/ke": 3.0,
        "jsonl:qa/1": 1.0,
        "jsonl:qa/2": 3.0,
    }
    keys = {tuple(k) for k in run.metric_plan["metrics"]}
    assert {("capitals", "capitals_one"), ("*", "reply_words"), ("jsonl:qa", "exact_match")} <= keys
    assert ("jsonl:qa", "capitals_one") not in keys and run.metric_plan["primary"] == "reply_words"


def test_every_declared_metric_keeps_the_registry_contract():
    """Each declared metric has a unique (scope, name), specs with a finite-width range, a direction and a source,
    and builds a Metric of exactly the declared specs."""
    entries = registry.entries()
    assert len({e.key for e in entries}) == len(entries)
    for e in entries:
        assert e.specs and e.name == e.specs[0].name, e.key
        for s in e.all_specs:
            lo, hi = s.range
            assert lo < hi and isinstance(s.higher_is_better, bool) and s.source, (e.key, s.name)
        built = e.build()
        assert [*built.specs, *built.corpus_specs] == e.all_specs, e.key
        assert registry.key_of(built) == (e.key if e.scope != registry.ALL else (registry.ALL, e.name))


def test_a_benchmark_scores_the_metrics_it_names_in_its_order():
    """The predefined metrics of every benchmark are the declared metrics its definition names, in that order,
    each restricted to its items; a name no module declares is refused."""
    for defn in benchmarks.definitions():
        built = benchmarks.predefined_metrics([defn.name])
        assert [m.name for m in built] == list(defn.metrics), defn.name
        assert all(registry.key_of(m) == (defn.name, m.name) for m in built)
    bad = Benchmark(name="no-such-metrics", loader=lambda folder: [], metrics=("no_such_metric",))
    benchmarks.register(bad)
    try:
        with pytest.raises(InputError, match="names the metric 'no_such_metric', which no module declares"):
            benchmarks.predefined_metrics(["no-such-metrics"])
    finally:
        benchmarks.unregister("no-such-metrics")
