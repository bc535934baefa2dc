"""The README's examples run as written (issue 10, item 7): the Python API section's doctests, offline,
on the real SciAidanBench data, and the YAML benchmark definition of the Data section."""

from __future__ import annotations

import doctest
import json
import re

import pytest

from sgieval.benchmarks import registry
from sgieval.benchmarks.user import load_yaml_benchmark
from sgieval.tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = README.index(f"### {title}\n")
    end = README.find("\n## ", start)
    nxt = README.find("\n### ", start + 1)
    return README[start : min(x for x in (end, nxt) if x != -1)]


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_python_api_examples_run(tmp_path, monkeypatch):
    blocks = _blocks(_section("Python API"), "python")
    assert len(blocks) == 3 and all(">>> " in b for b in blocks)
    monkeypatch.chdir(tmp_path)
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    test = parser.get_doctest("\n".join(blocks), {}, "README Python API", "README.md", 0)
    try:
        runner.run(test, out=lambda s: pytest.fail(s), clear_globs=False)
    finally:
        registry.unregister("sums")
    assert runner.summarize(verbose=False) == (0, len(test.examples))
    assert (tmp_path / test.globs["run"].run_dir / "report.md").is_file()


def test_yaml_benchmark_example_loads(tmp_path):
    (yaml_text,) = _blocks(_section("Data"), "yaml")
    (tmp_path / "capitals.yaml").write_text(yaml_text)
    (tmp_path / "capitals.jsonl").write_text(
        json.dumps({"id": "fr", "prompt": "Capital of France?", "reference": "Paris"}) + "\n"
    )
    defn = load_yaml_benchmark(tmp_path / "capitals.yaml")
    (item,) = defn.loader(None)
    assert item.id == "capitals/fr" and (item.task, item.discipline) == ("capitals", "geography")
    assert item.prompt == "Answer with the city only, inside <answer></answer>.\nCapital of France?"
    assert [s.name for m in defn.metrics(None) for s in m.specs] == ["exact_match"]
    assert defn.vocabulary.tasks == (("capitals", ("capital cities",)),)
