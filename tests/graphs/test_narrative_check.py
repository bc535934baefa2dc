"""An agent's narrative cannot overrule the facts: on the real graph over the stored chemistry answers, with a
scripted agent model, the fixed verdict stays first, the agent's text follows it only when every number, model
name, metric name and facet value it cites is in the report, a failing text is regenerated once and then left
out, and the stamp says what was checked."""

from __future__ import annotations

import asyncio
import json

from sgieval.core import RunConfig
from sgieval.graphs.evaluate import execute, make_runtime
from sgieval.tests.conftest import scripted

CHEM = "Which model is the most creative in chemistry?"
PLAN = {"filters": {"discipline": ["Chemistry"], "task": ["open_creativity"]}, "reason": "chemistry creativity"}
METRIC_PLAN = {"primary": "aidan_accepted_answers", "reason": "accepted answers measure creativity"}
VERDICT = (
    '- **Verdict:** To "Which model is the most creative in chemistry?": No model is established as first by '
    "aidan_accepted_answers on 25 items"
)


def answer_of(tmp_path, narratives: list[str]) -> tuple[str, str]:
    agent = scripted("scripted-planner", [json.dumps(PLAN), json.dumps(METRIC_PLAN), *narratives])
    cfg = RunConfig(run_id="r", request=CHEM, out_dir=str(tmp_path), bootstrap_resamples=999, yes=True)
    asyncio.run(execute(make_runtime(cfg, agent=agent)))
    text = (tmp_path / "r" / "report.md").read_text()
    return text.split("## Answer", 1)[1].split("\n## ", 1)[0], text


def test_a_narrative_naming_an_unknown_model_is_regenerated_then_left_out(tmp_path):
    bad = "replay:gpt-5 leads with 296 accepted answers, ahead of replay:o1-mini."
    answer, text = answer_of(tmp_path, [bad, "gpt-5 is first with 296 answers in Chemistry."])
    assert answer.lstrip().startswith(VERDICT)  # the fixed first sentence always stays
    assert "gpt-5" not in answer and "- **Summary**" not in answer
    limitations = text.split("## Limitations", 1)[1]
    assert (
        "The agent's narrative failed the fact check twice and was left out; the Answer is computed from the "
        "tables. narrative attempt 1 named models, metrics or facet values not in the report: ['replay:gpt-5']; "
        "narrative attempt 2 named models, metrics or facet values not in the report: ['gpt-5']"
    ) in limitations
    # the totals stay the published chemistry ranking
    for total in ("| 296 | 25 | 0 |", "| 274 | 25 | 0 |", "| 200 | 25 | 0 |", "| 107 | 25 | 0 |"):
        assert total in text


def test_a_narrative_fixed_on_the_second_attempt_follows_the_verdict_with_its_stamp(tmp_path):
    first = "replay:o1-mini leads in Biology by aidan_accepted_answers_lenient."  # unknown facet value and metric
    second = "replay:o1-mini gives 296 accepted answers in chemistry; replay:mistral:latest gives 107."
    answer, text = answer_of(tmp_path, [first, second])
    lines = answer.strip().splitlines()
    assert lines[0].startswith(VERDICT)
    assert lines[1] == f"- **Summary** (agent model scripted-planner): {second}"
    assert (
        "*(The summary was written by the agent model scripted-planner; every number, model name, metric name "
        "and facet value it cites was checked against the report's tables and run facts. The verdict and the "
        "other items are computed from the tables.)*"
    ) in answer
    assert "Biology" not in answer and "aidan_accepted_answers_lenient" not in text


def test_names_check_reads_models_metrics_and_facets():
    from sgieval.reports import names_supported

    tables = "| 1 | replay:o1-mini | 11.84 |\n| aidan_accepted_answers | objective |\n| Chemistry | 25 |"
    known = ["replay:o1-mini", "replay:phi4:latest", "aidan_accepted_answers", "Chemistry"]
    assert names_supported("o1-mini and phi4:latest lead in chemistry on aidan_accepted_answers.", tables, known) == []
    assert names_supported("The best is gpt-4o, then claude-3 in Biology.", tables, known) == [
        "gpt-4o",
        "claude-3",
        "Biology",
    ]
    assert names_supported("**Gemini** wins by exact_match.", tables, known) == ["Gemini", "exact_match"]
