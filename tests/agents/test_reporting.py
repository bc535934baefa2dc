"""Reporting agent: per-criterion rubric breakdown (table + heatmap), custom metrics beside predefined ones,
limitations (sample size, judge identity, self-judging, overlapping CIs), and the narrative number check.  Records are built by hand so every expected number is hand-computed."""

from __future__ import annotations

import asyncio
import re

from sgieval.agents.reporting import build_report
from sgieval.reports import ReportContext
from sgieval.reports import (
    criterion_scores,
    header_facts,
    numbers_supported,
    order_claims_supported,
    rubric_breakdown,
)
from sgieval.core import Criterion, Item, MetricSpec, Response, Rubric, Score
from sgieval.tests.conftest import scripted

MODELS = ["m-a", "m-b"]
EM = MetricSpec(name="em", tasks=["generic"], range=(0.0, 1.0), primary=True, description="exact match")
RIGOR = Rubric(
    name="rigor",
    tasks=["generic"],
    description="rigor",
    source="user",
    criteria=[
        Criterion(name="logic", description="sound reasoning", anchors={0: "none", 10: "flawless"}),
        Criterion(name="grounding", description="cites theory", anchors={0: "none", 10: "full"}),
    ],
    weights={"logic": 2.0},
)
ITEMS = [
    Item(id=f"t/{i}", benchmark="jsonl", task="generic", discipline=d, prompt=f"q{i}")
    for i, d in ((1, "chemistry"), (2, "physics"), (3, "physics"))
]

# rubric value = 10 * (2 * logic + 1 * grounding) / 3   (Rubric.aggregate, weights logic 2, grounding 1)
CRITERIA = {
    ("m-a", "t/1"): (8, 5),  # 10 * 21 / 3 = 70
    ("m-a", "t/2"): (6, 8),  # 10 * 20 / 3 = 66.67
    ("m-a", "t/3"): (10, 2),  # 10 * 22 / 3 = 73.33
    ("m-b", "t/1"): (4, 6),  # 10 * 14 / 3 = 46.67
    ("m-b", "t/2"): (5, 3),  # 10 * 13 / 3 = 43.33
}
EM_VALUES = {
    ("m-a", "t/1"): 1,
    ("m-a", "t/2"): 1,
    ("m-a", "t/3"): 0,
    ("m-b", "t/1"): 0,
    ("m-b", "t/2"): 1,
    ("m-b", "t/3"): 0,
}


def records() -> tuple[list[Response], list[Score]]:
    responses = [Response(item_id=i.id, model=m, text="...") for m in MODELS for i in ITEMS]
    scores = [
        Score(item_id=iid, model=m, metric="em", value=float(v), rationale="exact") for (m, iid), v in EM_VALUES.items()
    ]
    for (m, iid), (lo, gr) in CRITERIA.items():
        crit = [
            {"criterion": "logic", "score": lo, "rationale": f"logic {lo}"},
            {"criterion": "grounding", "score": gr, "rationale": f"grounding {gr}"},
        ]
        scores.append(
            Score(
                item_id=iid,
                model=m,
                metric="rigor",
                value=RIGOR.aggregate({"logic": lo, "grounding": gr}),
                rationale="per criterion",
                judge="judge-x",
                details={"criteria": crit},
            )
        )
    scores.append(
        Score(
            item_id="t/3", model="m-b", metric="rigor", status="judge_error", error="judge unreachable", judge="judge-x"
        )
    )
    return responses, scores


def header(**kw) -> dict:
    h = {
        "run_id": "r1",
        "request": "Which model is most rigorous?",
        "selection_reason": "test",
        "filters": "none",
        "k": "all matches",
        "n_items": 3,
        "sampling": "all",
        "seed": 7,
        "models": "m-a, m-b (target)",
        "judges": "judge-x",
        "agent": "none",
        "metrics": "em; custom: rigor",
        "primary": "rigor",
        "primary_reason": "asked",
        "data_source": "test",
        "tools": "none",
        "scope": "whole catalog",
        "extra": {},
    }
    h.update(kw)
    return h


def report(tmp_path, primary="rigor", agent=None, judges=("judge-x",), allow_self_judge=False, **hkw) -> str:
    responses, scores = records()
    path = asyncio.run(
        build_report(
            ReportContext(
                tmp_path,
                header=header(**hkw),
                items=ITEMS,
                responses=responses,
                scores=scores,
                specs=[EM, RIGOR],
                primary=primary,
                models=MODELS,
                custom={"rigor"},
                n_resamples=999,
                seed=0,
                judges=list(judges),
                allow_self_judge=allow_self_judge,
            ),
            agent=agent,
        )
    )
    return path.read_text()


def test_criterion_scores_accepts_the_three_shapes():
    def s(crit):
        return Score(item_id="x", model="m", metric="r", value=1.0, details={"criteria": crit})

    assert criterion_scores(s({"a": 7, "b": 3.5})) == {"a": 7.0, "b": 3.5}
    assert criterion_scores(s({"a": {"score": 7, "rationale": "r"}, "b": {"value": 2}})) == {"a": 7.0, "b": 2.0}
    assert criterion_scores(
        s([{"criterion": "a", "score": 9}, {"name": "b", "value": 1}, {"criterion": "c", "score": None}])
    ) == {"a": 9.0, "b": 1.0}
    assert criterion_scores(Score(item_id="x", model="m", metric="r", value=1.0)) == {}


def test_rubric_breakdown_means_per_model_and_criterion():
    _, scores = records()
    bd = rubric_breakdown(scores, RIGOR, MODELS)
    # m-a logic (8 + 6 + 10) / 3 = 8, grounding (5 + 8 + 2) / 3 = 5; m-b (failed t/3 has no criteria):
    # logic (4 + 5) / 2 = 4.5, grounding (6 + 3) / 2 = 4.5
    assert bd["criteria"] == ["logic", "grounding"] and bd["weights"] == [2.0, 1.0]
    assert bd["means"] == {"m-a": [8.0, 5.0], "m-b": [4.5, 4.5]}
    assert bd["n"] == {"m-a": [3, 3], "m-b": [2, 2]}
    assert rubric_breakdown([s for s in scores if s.metric == "em"], RIGOR, MODELS) is None


def test_report_has_criteria_breakdown_custom_metric_and_limitations(tmp_path):
    text = report(tmp_path)
    # m-b's t/3 failed, so the ranking compares the 2 items both scored (t/1, t/2): m-a (70 + 66.67) / 2 = 68.33,
    # total 136.67; m-b (46.67 + 43.33) / 2 = 45, one failed.  On its own 3 items m-a has (70 + 66.67 + 73.33) / 3 = 70
    # one format per column: means and totals of a 0-100 metric with 2 decimals
    assert re.search(r"\| 1 \| m-a \| 68\.33 \| [^|]+ \| 136\.67 \| 2 \| 0 \|", text)
    assert re.search(r"\| 2 \| m-b \| 45\.00 \| [^|]+ \| 90\.00 \| 2 \| 1 \|", text)
    assert "| m-a | 3 | 68.33 | 70.00 |" in text  # the Coverage section: shared items, own items
    section = text.split("## Rubric breakdown: rigor (mean criterion score per target model, 0-10)", 1)[1]
    section = section.split("## ", 1)[0]
    assert "| criterion | weight | m-a: mean (0-10) | m-b: mean (0-10) |" in section
    assert "| logic | 2 | 8.00 | 4.50 |" in section and "| grounding | 1 | 5.00 | 4.50 |" in section
    assert "![rigor per criterion](figures/criteria_rigor.png)" in section
    assert (tmp_path / "figures" / "criteria_rigor.png").stat().st_size > 5000
    # custom metric listed beside the predefined one; em means 2/3 = 0.67 and 1/3 = 0.33
    assert "| rigor *custom* | rubric | 0-100 | 70.00 | 45.00 |" in text
    assert "| em | objective | 0-1 | 0.67 | 0.33 |" in text
    lim = text.split("## Limitations", 1)[1].split("## Failures", 1)[0]
    assert "- 3 items selected; CIs are wide at this sample size." in lim
    assert (
        "- Judge: judge-x. Judge and rubric scores are this one model's judgement: another judge may score "
        "differently, and a judge may favour models of its own family."
    ) in lim
    assert "both judge and target" not in lim
    assert "| score | t/3 | m-b | rigor | judge_error | judge unreachable |" in text


def test_non_significance_comes_from_the_paired_test(tmp_path):
    text = report(tmp_path, primary="em")
    # em per item: m-a [1, 1, 0], m-b [0, 1, 0] -> differences [1, 0, 0], mean 1/3 = 0.33.  Exact sign-flip
    # permutation (2**3 = 8 flips): P(mean >= 1/3) = 4/8, two-sided p = min(1, 2 * 4/8) = 1.
    assert (
        "- Adjacent ranks (table beside the ranking): the paired test on em does not separate m-a vs m-b at the "
        "5% level, so their order is not evidence of a difference."
    ) in text
    assert "| m-a vs m-b | 3 | 0.33 | 0.00 to 1.00 | 1.0000 | not significant |" in text
    assert "overlapping 95% CIs on em, no significant difference" not in text


def test_self_judging_is_stated(tmp_path):
    text = report(tmp_path / "a", judges=("openai:m-a",))
    assert (
        "- openai:m-a is both judge and target: it did not score its own responses (those judge metrics are "
        "not run; pass --allow-self-judge to allow it)."
    ) in text
    text = report(tmp_path / "b", judges=("openai:m-a",), allow_self_judge=True)
    assert "- --allow-self-judge was set: openai:m-a scored its own responses." in text


def test_numbers_supported_checks_tables_and_header():
    tables = "| 1 | m-a | 70 | 66.67 to 73.33 | 210 | 3 | 0 |\n| logic | 2 | 8 | 4.50 |"
    facts = header_facts({"k": "all matches", "seed": 7, "judges": "judge-x", "filters": "task = generic"}, 3, MODELS)
    assert facts == (
        "items selected: 3; K: all matches; seed: 7; target models (2): m-a, m-b; judge: judge-x; "
        "filters: task = generic; 95% confidence intervals; the 5% significance level; "
        "rubric criteria 0-10; rubric scores 0-100"
    )
    # 70 and 8 from the tables; 4.5 equals the table's 4.50; 3 items, 2 models, seed 7 and "95% CI" from the header
    ok = "m-a leads with 70 (logic 8 vs 4.5) over 3 items and 2 models, seed 7; 95% CIs overlap."
    assert numbers_supported(ok, tables, facts) == []
    # without the header facts, 7 is unsupported (3 and 2 are in the ranking row; 95 is not)
    assert numbers_supported(ok, tables) == ["7", "95"]
    # digits inside model names are not numbers; invented numbers are listed in narrative order
    assert numbers_supported("o1-mini scored 71.5 and gpt-4o 12", tables, facts) == ["71.5", "12"]


def test_llm_narrative_may_cite_header_numbers(tmp_path):
    narrative = "m-a has mean 70 against 45 for m-b on 3 items (seed 7); logic 8 vs 4.50."
    agent = scripted("narrator", [narrative])
    text = report(tmp_path, agent=agent)
    assert f"- **Summary** (agent model narrator): {narrative}" in text
    assert "every number, model name, metric name and facet value it cites was checked" in text


def test_llm_narrative_that_crowns_a_model_the_test_does_not_separate_falls_back(tmp_path):
    # m-a leads m-b with p = 0.5000 (the verdict names no winner): "the most rigorous" and "outperforms" claim an
    # order the data do not support, though every number and name in them is in the report
    crowned = "m-a is the most rigorous: mean 70 against 45 for m-b."
    beats = "On 3 items, m-a outperforms m-b (logic 8 vs 4.50)."
    text = report(tmp_path, agent=scripted("narrator", [crowned, beats]))
    assert crowned not in text and beats not in text and "- **Summary**" not in text
    assert (
        "narrative attempt 1 claimed an order of models the paired tests do not establish (1 sentence); narrative "
        "attempt 2 claimed an order of models the paired tests do not establish (1 sentence)" in text
    )


def test_order_claims_are_checked_against_the_separated_winner():
    models = ["openai:gpt-4o", "replay:o1-mini"]
    claim = "o1-mini ranks first; its lead is mostly in Biology."
    assert order_claims_supported(claim, None, models) == ["o1-mini ranks first;"]
    assert order_claims_supported(claim, "replay:o1-mini", models) == []  # the test separates it: supported
    # a claim for another model than the separated winner, in any spelling of its name
    assert order_claims_supported("OpenAI:GPT-4o is better than o1-mini.", "replay:o1-mini", models) == [
        "OpenAI:GPT-4o is better than o1-mini."
    ]
    # a negated claim, or a sentence without an order word, claims nothing
    assert order_claims_supported("gpt-4o is not better than o1-mini (p = 0.78).", None, models) == []
    assert order_claims_supported("o1-mini has the higher mean, 11.84 against 10.96.", None, models) == []


def test_llm_narrative_with_invented_number_falls_back_to_template(tmp_path):
    agent = scripted("narrator", ["m-a scores 99.", "m-a scores 98."])
    text = report(tmp_path, agent=agent)
    assert "m-a scores 99." not in text
    assert (
        "No model is established as first by rigor on 2 items (whole catalog; the items both models scored, of 3 "
        "selected): m-a leads with mean 68.33 per item (95% CI 66.67 to 70.00), but the paired test does not "
        "separate it from m-b (p = 0.5000)." in text
    )
    assert (
        "The agent's narrative failed the fact check twice and was left out; the Answer is computed from the "
        "tables. narrative attempt 1 cited numbers not in the tables: ['99']; narrative attempt 2 cited numbers "
        "not in the tables: ['98']"
    ) in text
    assert "- **Summary**" not in text and "checked against" not in text
