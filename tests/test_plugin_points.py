"""The plug-in points of DESIGN.md "Adding things", as the checks of a redesign's "done" list.

Where each check lives (the ones not written here):

- a toy benchmark, one module plus one registration line, run end to end: tests/benchmarks/test_toy_benchmark.py
  (its predefined metrics registered with ``@metric(scope=..., predefined=True)`` in the same module);
- a toy metric, one module with one decorator, chosen by the customisation agent for its quality word (offline and
  by a scripted agent model): tests/metric_pool/test_metric_registry.py (``toy_brevity.py``);
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

import json
import tomllib
from importlib.metadata import version

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import sgieval
from sgieval.benchmarks import registry as benchmarks
from sgieval.core import MetricSpec
from sgieval.metric_pool import registry
from sgieval.metric_pool.base import FunctionMetric, MetricResult
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


def _capitals_one(options=None):
    return FunctionMetric(ONE, lambda item, response: MetricResult(1.0, "one"))


def _reply_words(options=None):
    return FunctionMetric(WORDS, lambda item, response: MetricResult(float(len(response.text.split())), "words"))


@pytest.fixture
def two_scopes(tmp_path):
    """A metric of one benchmark (``capitals``, its specs' tasks ``*``) and one of every benchmark, registered as a
    metric module would; the YAML benchmark and the JSONL file of the two-benchmark run."""
    registry.metric(scope="capitals", predefined=True, name="capitals_one")(_capitals_one)
    registry.metric(scope=registry.ALL, qualities={"wordiness": (r"wordy|wordiest",)}, name="reply_words")(_reply_words)
    (tmp_path / "qa").mkdir()
    (tmp_path / "qa" / "capitals.jsonl").write_text(
        "".join(
            json.dumps({"id": i, "prompt": p, "reference": r, "metadata": {"region": g}}) + "\n"
            for i, p, r, g in RECORDS
        )
    )
    (tmp_path / "capitals.yaml").write_text(YAML)
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
    registry.unregister(("capitals", "capitals_one"))
    registry.unregister((registry.ALL, "reply_words"))
    benchmarks.unregister("capitals")


def test_a_benchmarks_metric_scores_its_items_only_and_an_all_benchmark_metric_every_item(two_scopes):
    """A metric registered for the benchmark ``capitals`` scores its 3 items and none of the JSONL file's, though
    its spec applies to any task; a metric registered for every benchmark, chosen for its quality word, scores all
    5 items of both."""
    tmp = two_scopes
    run = sgieval.evaluate(
        "Which model gives the wordiest answers?",
        benchmark=[str(tmp / "capitals.yaml"), str(tmp / "qa.jsonl")],
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


def test_the_built_in_metrics_come_from_the_registry(two_scopes):
    """Every predefined metric of a built-in benchmark is a registered ``@metric(scope=<benchmark>,
    predefined=True)`` entry, built restricted to that benchmark's items: the registry is the one list."""
    for defn in benchmarks.definitions():
        if defn.name == "capitals":
            continue
        built = benchmarks.predefined_metrics([defn.name])
        entries = {e.name: e for e in registry.entries() if e.predefined and e.scope == defn.name}
        assert built and set(entries) == {m.name for m in built}, defn.name
        assert all(registry.key_of(m) == (defn.name, m.name) for m in built)
    # in the order of the definition's metric modules (DR, IG, DE, WE, ER), whichever registered first (here the
    # Deep Research metrics register again, last)
    for e in [e for e in registry.entries() if e.module.endswith("sgi.deep_research")]:
        registry.unregister(e.key)
        registry.metric(scope=e.scope, predefined=True, name=e.name)(e.factory)
    assert [e.name for e in registry.entries() if e.scope == "sgi-bench"][-2:] == ["em", "sla"]
    sgi = [m.name for m in benchmarks.predefined_metrics(["sgi-bench"])]
    assert sgi == ["em", "sla", "idea_effectiveness_obj", "dry_passall_1", "wet_sequence_similarity", "mca",
                   "reasoning_validity"]  # fmt: skip
    assert [m.name for m in benchmarks.predefined_metrics(["jsonl:qa"])] == ["exact_match", "numeric_match"]
