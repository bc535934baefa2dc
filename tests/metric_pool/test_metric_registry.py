"""The metric registry: metrics registered with a decorator (scope, qualities), plans that name metrics by
(scope, name), and two benchmarks with a metric of the same name each scored on their own items."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from pathlib import Path

import pytest

import sgieval
from sgieval.agents.customisation import run_customisation
from sgieval.benchmarks import registry as benchmarks
from sgieval.benchmarks.jsonl import load_jsonl
from sgieval.core import InputError, Item, Response
from sgieval.metric_pool import registry
from sgieval.metric_pool.base import FunctionMetric, MetricResult, ScoringContext
from sgieval.tests.benchmarks.test_yaml_benchmark import RECORDS, YAML

TOY = "sgieval.tests.metric_pool.toy_brevity"


@pytest.fixture
def toy_metric():
    module = importlib.import_module(TOY)  # importing the module is its registration
    yield module
    registry.unregister(("*", "brevity"))
    sys.modules.pop(TOY, None)


def _qa(tmp_path):
    p = tmp_path / "qa.jsonl"
    p.write_text(
        json.dumps({"id": "1", "prompt": "2 + 2?", "reference": "4"})
        + "\n"
        + json.dumps({"id": "2", "prompt": "Largest planet?", "reference": "Jupiter"})
        + "\n"
    )
    return p


def test_a_registered_metric_is_chosen_for_its_quality_word(toy_metric, tmp_path):
    items = load_jsonl(_qa(tmp_path))
    plan, metrics, _ = asyncio.run(run_customisation("Which model gives the most concise answers?", items))
    assert plan.primary == "brevity" and plan.added == ["brevity"] and plan.qualities == ["conciseness"]
    assert ("*", "brevity") in plan.metrics and ("jsonl:qa", "exact_match") in plan.metrics
    assert "'conciseness' is measured by the registered metric brevity" in plan.reason
    assert [m.name for m in metrics if m.name == "brevity"] == ["brevity"]
    # a request that does not name the quality leaves it out
    plan2, metrics2, _ = asyncio.run(run_customisation("Which model is most accurate?", items))
    assert "brevity" not in plan2.added and all(m.name != "brevity" for m in metrics2)


def test_a_registered_metric_scores_a_run_end_to_end(toy_metric, tmp_path):
    qa = _qa(tmp_path)
    replies = tmp_path / "m.jsonl"
    replies.write_text(
        json.dumps({"item_id": "jsonl:qa/1", "text": "<answer>4</answer>"})
        + "\n"
        + json.dumps(
            {
                "item_id": "jsonl:qa/2",
                "text": "It is the planet Jupiter, by far the largest one. <answer>Jupiter</answer>",
            }
        )
        + "\n"
    )
    run = sgieval.evaluate(
        "Which model gives the most concise answers?",
        benchmark=str(qa),
        models=f"replay:{replies}",
        out_dir=tmp_path / "runs",
        run_id="brief",
        bootstrap_resamples=99,
    )
    assert run.metric_plan["primary"] == "brevity"
    # 1 word -> 1.0; 11 words -> 5/11
    assert {s.item_id: round(s.value, 4) for s in run.values("brevity")} == {"jsonl:qa/1": 1.0, "jsonl:qa/2": 0.4545}
    assert {s.item_id: s.value for s in run.values("exact_match")} == {"jsonl:qa/1": 1.0, "jsonl:qa/2": 1.0}


TOY_FILE = '''"""A toy objective metric: this file is the whole change."""

from sgieval.core import MetricSpec
from sgieval.metric_pool.base import MetricResult
from sgieval.metric_pool.registry import metric

VOWELS = MetricSpec(name="toy_vowel_share", tasks=["*"], range=(0.0, 1.0), description="share of vowels", source="test")


@metric(VOWELS, qualities={"vowels": (r"vowel\\w*",)})
def toy_vowel_share(item, response):
    letters = [c for c in response.text.lower() if c.isalpha()]
    return MetricResult(sum(c in "aeiou" for c in letters) / max(len(letters), 1), f"{len(letters)} letters")
'''


def test_a_new_metric_is_one_file_in_metric_pool(tmp_path, monkeypatch):
    """A module written into the metric_pool package, and nothing else, is found by the registry on its first read,
    chosen for its quality word and scores the items of any benchmark (a YAML benchmark and a JSONL file)."""
    path = Path(registry.__file__).with_name("toy_vowels_test_only.py")
    name = f"{registry.__package__}.toy_vowels_test_only"
    (tmp_path / "qa").mkdir()
    (tmp_path / "qa" / "capitals.jsonl").write_text(
        "".join(
            json.dumps({"id": i, "prompt": p, "reference": r, "metadata": {"region": g}}) + "\n"
            for i, p, r, g in RECORDS
        )
    )
    (tmp_path / "capitals.yaml").write_text(YAML)
    texts = {"capitals/fr": "Paris", "capitals/jp": "Tokyo", "capitals/ke": "Nairobi", "jsonl:qa/1": "4",
             "jsonl:qa/2": "Jupiter"}  # fmt: skip
    (tmp_path / "m.jsonl").write_text("".join(json.dumps({"item_id": i, "text": t}) + "\n" for i, t in texts.items()))
    try:
        path.write_text(TOY_FILE)
        importlib.invalidate_caches()
        monkeypatch.setattr(registry, "_loaded", False)
        assert ("*", "toy_vowel_share") in {e.key for e in registry.entries()}
        run = sgieval.evaluate(
            "Which model gives the answers with the most vowels?",
            benchmark=[str(tmp_path / "capitals.yaml"), str(_qa(tmp_path))],
            models=f"replay:{tmp_path / 'm.jsonl'}",
            out_dir=tmp_path / "runs",
            run_id="vowels",
            bootstrap_resamples=99,
        )
    finally:
        path.unlink(missing_ok=True)
        for cached in path.parent.glob("__pycache__/toy_vowels_test_only.*"):
            cached.unlink()
        registry.unregister(("*", "toy_vowel_share"))
        registry.unregister_scope("capitals")
        benchmarks.unregister("capitals")
        sys.modules.pop(name, None)
    assert run.metric_plan["primary"] == "toy_vowel_share"
    # Paris 2/5, Tokyo 2/5, Nairobi 4/7, "4" no letters, Jupiter 3/7
    assert {s.item_id: round(s.value, 4) for s in run.values("toy_vowel_share")} == {
        "capitals/fr": 0.4,
        "capitals/jp": 0.4,
        "capitals/ke": 0.5714,
        "jsonl:qa/1": 0.0,
        "jsonl:qa/2": 0.4286,
    }


def test_two_benchmarks_with_exact_match_score_every_item_of_both(tmp_path):
    (tmp_path / "qa").mkdir()
    (tmp_path / "qa" / "capitals.jsonl").write_text(
        "".join(
            json.dumps({"id": i, "prompt": p, "reference": r, "metadata": {"region": g}}) + "\n"
            for i, p, r, g in RECORDS
        )
    )
    (tmp_path / "capitals.yaml").write_text(YAML)
    qa = _qa(tmp_path)
    texts = {
        "capitals/fr": "Paris",
        "capitals/jp": "Kyoto",
        "capitals/ke": "Nairobi",
        "jsonl:qa/1": "4",
        "jsonl:qa/2": "Saturn",
    }
    replies = tmp_path / "m.jsonl"
    replies.write_text(
        "".join(json.dumps({"item_id": i, "text": f"<answer>{t}</answer>"}) + "\n" for i, t in texts.items())
    )
    try:
        run = sgieval.evaluate(
            "",
            benchmark=[str(tmp_path / "capitals.yaml"), str(qa)],
            models=f"replay:{replies}",
            out_dir=tmp_path / "runs",
            run_id="two",
            bootstrap_resamples=99,
        )
    finally:
        benchmarks.unregister("capitals")
    assert len(run.items) == 5
    em = {s.item_id: s.value for s in run.values("exact_match")}
    assert em == {"capitals/fr": 1.0, "capitals/jp": 0.0, "capitals/ke": 1.0, "jsonl:qa/1": 1.0, "jsonl:qa/2": 0.0}
    assert {tuple(k) for k in run.metric_plan["metrics"]} >= {("capitals", "exact_match"), ("jsonl:qa", "exact_match")}
    assert run.metric_plan["predefined"].count("exact_match") == 1
    assert run.means("exact_match") == {f"replay:m": 0.6}


def test_a_scoped_metric_scores_only_its_benchmarks_items():
    spec = sgieval.MetricSpec(name="always_one", tasks=["*"], description="1", source="test")
    m = registry.Scoped(FunctionMetric(spec, lambda item, response: MetricResult(1.0, "one")), "bench-a")
    a = Item(id="bench-a/1", benchmark="bench-a", task="generic", prompt="q")
    b = Item(id="bench-b/1", benchmark="bench-b", task="generic", prompt="q")
    assert m.applies(a) and not m.applies(b) and registry.key_of(m) == ("bench-a", "always_one")
    (s,) = asyncio.run(m.score(a, Response(item_id=a.id, model="x", text="hi"), ScoringContext()))
    assert (s.value, s.rationale) == (1.0, "one")


def test_function_metric_takes_one_function_per_spec_each_failing_alone():
    specs = [sgieval.MetricSpec(name=n, tasks=["*"], description=n, source="test") for n in ("length", "needs_number")]

    def number(item, response):
        return MetricResult(float(response.text), "parsed")  # ValueError for a non-number

    m = FunctionMetric(specs, [lambda item, response: MetricResult(len(response.text), "chars", {"n": 1}), number])
    it = Item(id="b/1", benchmark="b", task="generic", prompt="q")
    out = {s.metric: s for s in m.score_sync(it, Response(item_id=it.id, model="x", text="abc"))}
    assert (out["length"].value, out["length"].details) == (3.0, {"n": 1})
    assert out["needs_number"].status == "parse_error" and out["needs_number"].value is None
    with pytest.raises(ValueError, match="one function per spec"):
        FunctionMetric(specs, [number])
    untyped = FunctionMetric(specs[0], lambda item, response: (1.0, "a tuple"))
    with pytest.raises(TypeError, match=r"returned tuple: return MetricResult\(value, rationale, details\)"):
        untyped.score_sync(it, Response(item_id=it.id, model="x", text="abc"))


def test_registering_a_name_twice_in_one_scope_is_refused(toy_metric):
    with pytest.raises(InputError, match="metric 'brevity' \\(scope '\\*'\\) is registered twice"):

        @registry.metric(toy_metric.SPEC, qualities=("conciseness",))
        def brevity(item, response):  # noqa: F811 - the clash under test
            return toy_metric.brevity(item, response)


def test_an_installed_packages_metric_module_registers_through_its_entry_point(monkeypatch):
    from importlib.metadata import EntryPoint

    found = [EntryPoint(name="brevity", value=TOY, group=registry.ENTRY_POINTS)]
    monkeypatch.setattr(
        "importlib.metadata.entry_points", lambda group: found if group == registry.ENTRY_POINTS else []
    )
    monkeypatch.setattr(registry, "_loaded", False)
    try:
        assert ("*", "brevity") in {e.key for e in registry.entries()}
        broken = [
            EntryPoint(name="broken", value="sgieval.tests.metric_pool.no_such_module", group=registry.ENTRY_POINTS)
        ]
        monkeypatch.setattr("importlib.metadata.entry_points", lambda group: broken)
        monkeypatch.setattr(registry, "_loaded", False)
        with pytest.raises(InputError, match="the metric module 'sgieval.tests.metric_pool.no_such_module'"):
            registry.entries()
    finally:
        registry.unregister(("*", "brevity"))
        sys.modules.pop(TOY, None)


def test_score_finds_a_registered_metric_by_name(toy_metric):
    out = sgieval.score(["Paris.", "The capital of France is the city of Paris."], "brevity")
    assert [(s.value, s.rationale) for s in out] == [(1.0, "1 words"), (pytest.approx(5 / 9), "9 words")]


def test_the_agent_model_is_offered_every_registered_metric_and_may_choose_it(toy_metric, tmp_path):
    from langchain_core.messages import AIMessage

    from sgieval.tests.graphs.test_retrieval_novelty_agent import agent

    items = load_jsonl(_qa(tmp_path))
    a = agent(
        [AIMessage(content=json.dumps({"primary": "brevity", "added": ["brevity"], "reason": "short is better"}))]
    )
    plan, metrics, _ = asyncio.run(run_customisation("Rank the models by how terse they are", items, agent=a))
    prompt = str(a.chat.seen[0][1].content)
    assert "- brevity (objective, 0-1): 1 for a reply of at most 5 words" in prompt
    assert "brevity; choose it (added and primary) for a request about conciseness." in prompt
    assert plan.primary == "brevity" and plan.added == ["brevity"] and ("*", "brevity") in plan.metrics
    assert plan.qualities == ["conciseness"] and "brevity" in [m.name for m in metrics]
