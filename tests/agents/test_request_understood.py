"""The request is understood or questioned: a misspelt facet, quality, metric or model word gets "did you mean ...?"
and a request whose words name nothing the run can select or measure stops with what was understood (exit code 2);
``--all`` ranks every item anyway.  On the real SciAidanBench data (../shared/data), through the real graph."""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from sgieval.agents.questioning import UnclearRequest, run_questioning, understand_request
from sgieval.agents.vocabulary import QUALITY_TERMS, QUALITY_WORDS, max_edits
from sgieval.benchmarks.catalog import load_catalog
from sgieval.cli import app

runner = CliRunner()
METRICS = ["aidan_accepted_answers", "aidan_mean_novelty", "exact_match", "exact_match_normalised"]
MODELS = ["replay:o1-mini", "replay:openai/4o", "replay:llama3.3:latest"]


@pytest.fixture(scope="module")
def catalog(sciaidan_dir):
    return load_catalog(["sciaidanbench"], sciaidan_dir.parent)


def read(request: str, catalog):
    return understand_request(request, catalog, metrics=METRICS, models=MODELS)


def test_misspelt_discipline_is_a_near_miss_of_the_catalog_value(catalog):
    r = read("Which model is most creative in chemsitry?", catalog)
    assert r.near_misses == {"chemsitry": "Chemistry"}  # one transposition away
    assert r.unknown == []
    assert r.corrected("Which model is most creative in chemsitry?") == "Which model is most creative in Chemistry?"
    # variants: a missing letter, a quality word, a subfield, a metric name, a stored model
    assert read("Which model is most creative in phyics?", catalog).near_misses == {"phyics": "Physics"}
    assert read("Which model is the most creatve?", catalog).near_misses == {"creatve": "creative"}
    assert read("Who is most creative on synchrotorn items?", catalog).near_misses == {"synchrotorn": "Synchrotron"}
    assert read("Rank by exact_mach", catalog).near_misses == {"exact_mach": "exact_match"}
    assert read("Is llama3.4 creative?", catalog).near_misses == {}  # a model name of its own: not a typo


def test_words_naming_nothing_are_unknown_and_known_words_are_understood(catalog):
    r = read("Which model writes the best poetry about cooking?", catalog)
    assert r.near_misses == {} and r.unknown == ["poetry", "cooking"]
    r = read("Which model is the most creative?", catalog)
    assert r.unknown == [] and r.near_misses == {}
    assert r.understood == {"creative": "task=open_creativity, quality creativity"}
    r = read("How do the models compare on physics creativity, and where do they disagree?", catalog)
    assert r.unknown == [] and r.near_misses == {}
    assert r.understood["physics"] == "discipline=Physics"
    r = read("Is o1-mini more creative than llama3.3 on Condensed Matter, ranked by exact match normalised?", catalog)
    assert r.unknown == [] and r.near_misses == {}
    assert r.understood["Condensed Matter"] == "direction=Condensed Matter"
    assert r.understood["exact match normalised"] == "metric exact_match_normalised"
    assert r.understood["o1-mini"].startswith("model o1-mini")


def test_quality_terms_are_words_of_their_quality():
    import re

    for word, quality in QUALITY_TERMS.items():
        assert any(re.fullmatch(p, word, re.I) for p in QUALITY_WORDS[quality]), word
    assert [max_edits(w) for w in ("bio", "chem", "physics", "chemsitry")] == [0, 1, 2, 2]


def test_offline_questioning_raises_and_all_ranks_everything(catalog):
    with pytest.raises(UnclearRequest) as e:
        asyncio.run(run_questioning("Which model writes the best poetry about cooking?", catalog))
    assert e.value.exit_code == 2 and e.value.corrected is None
    assert "'poetry', 'cooking' name no discipline, subfield, task, quality, metric or model here" in str(e.value)
    assert "understood: a ranking of the models over every item" in str(e.value)
    assert "--all" in str(e.value)
    plan, items, trace = asyncio.run(
        run_questioning("Which model writes the best poetry about cooking?", catalog, rank_all=True)
    )
    assert len(items) == 155 and plan.filters == {}
    assert "--all: 'poetry', 'cooking' matched nothing and were left out" in plan.reason
    assert trace["reading"]["unknown"] == ["poetry", "cooking"]
    plan, items, _ = asyncio.run(run_questioning("Which model is most creative in chemsitry?", catalog, rank_all=True))
    assert len(items) == 155  # --all: the misspelt word selects nothing
    plan, items, _ = asyncio.run(run_questioning("Which model is the most creative?", catalog))
    assert len(items) == 155


def _ask(tmp_path, request: str, *opts: str, input: str | None = None):
    return runner.invoke(app, ["ask", request, "--out", str(tmp_path), *opts], input=input)


def test_cli_typo_with_yes_stops_with_did_you_mean(tmp_path):
    res = _ask(tmp_path, "Which model is most creative in chemsitry?", "--yes")
    assert res.exit_code == 2, res.output
    assert "'chemsitry' matches no discipline, subfield, task, quality, metric or model: did you mean 'Chemistry'?" in (
        " ".join(res.output.split())
    )
    assert list(tmp_path.iterdir()) == []  # nothing computed: no run folder left


def test_cli_unknown_words_stop_with_what_was_understood(tmp_path):
    res = _ask(tmp_path, "Which model writes the best poetry about cooking?", "--yes")
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())
    assert "'poetry', 'cooking' name no discipline" in out and "pass --all to rank every item anyway" in out


def test_cli_typo_confirmed_at_the_prompt_runs_the_corrected_request(tmp_path):
    # first answer: use the corrected request; second: run with these metrics
    res = _ask(tmp_path, "Which model is most creative in chemsitry?", input="y\ny\n")
    assert res.exit_code == 0, res.output
    assert 'Ask "Which model is most creative in Chemistry?" instead?' in res.output
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    report = (run_dir / "report.md").read_text()
    assert "| 1 | replay:o1-mini | 11.84 | 7.80 to 17.52 | 296 | 25 | 0 |" in report  # the 25 chemistry items


def test_cli_typo_declined_stops(tmp_path):
    res = _ask(tmp_path, "Which model is most creative in chemsitry?", input="n\n")
    assert res.exit_code == 2, res.output
    assert "did you mean 'Chemistry'?" in " ".join(res.output.split())


def test_cli_all_ranks_everything_anyway_and_says_what_was_left_out(tmp_path):
    res = _ask(tmp_path, "Which model writes the best poetry about cooking?", "--yes", "--all")
    assert res.exit_code == 0, res.output
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    report = (run_dir / "report.md").read_text()
    assert "| 1 | replay:o1-mini | 16.45 |" in report  # 2550 accepted answers over all 155 items
    assert "--all: 'poetry', 'cooking' matched nothing and were left out" in report


def test_api_asks_the_did_you_mean_question_through_confirm(tmp_path):
    from sgieval import evaluate

    asked = []

    def confirm(payload):
        asked.append(payload.get("kind", "metrics"))
        return True

    run = evaluate(
        "Which model is most creative in chemsitry?",
        models=["replay:o1-mini"],
        out_dir=tmp_path,
        yes=False,
        confirm=confirm,
    )
    assert asked == ["did_you_mean", "metrics"]
    assert run.selection["request"] == "Which model is most creative in Chemistry?"
    assert len(run.items) == 25
