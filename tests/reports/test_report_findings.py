"""Report fixes from the new-user trial, each checked by running the real
build_report on hand-built Score/Response records:

1. significance wording comes from the paired test of adjacent ranks (never from CI overlap), and a
   K=1 run (no CI) says nothing about overlap;
2. a metric whose scores all failed keeps its row in "All metrics" ("all N failed (status)");
3. the Answer's item count is the n of the ranking metric, and a missing SGI-Score is explained;
4. figures are embedded only when written;
5. not_run "no accepted answers" scores are "not applicable", not failures.
"""

from __future__ import annotations

import asyncio
import re

import pytest

import sgieval.reports.sections.criteria as criteria_section
import sgieval.reports.sections.ranking as ranking_section
from sgieval.agents.reporting import build_report
from sgieval.reports import ReportContext
from sgieval.reports import not_applicable
from sgieval.core import DEEP_RESEARCH, EXPERIMENTAL_REASONING, Criterion, Item, MetricSpec, Response, Rubric, Score
from sgieval.tests.conftest import scripted

SCORE = MetricSpec(name="score", tasks=["generic"], range=(0.0, 100.0), primary=True, description="points")
EM = MetricSpec(name="em", tasks=["generic"], range=(0.0, 1.0), description="exact match")


def header(**kw) -> dict:
    h = {
        "run_id": "r1",
        "request": "Which model is best?",
        "selection_reason": "test",
        "filters": "none",
        "k": "all matches",
        "n_items": 0,
        "sampling": "all",
        "seed": 0,
        "models": "target",
        "judges": "judge-x",
        "agent": "none",
        "metrics": "test",
        "primary": "score",
        "primary_reason": "asked",
        "data_source": "test",
        "tools": "none",
        "scope": "whole catalog",
        "extra": {},
    }
    h.update(kw)
    return h


def build(tmp_path, items, scores, specs, primary, models, responses=None, agent=None, **hkw) -> str:
    responses = (
        responses
        if responses is not None
        else [Response(item_id=i.id, model=m, text="...") for m in models for i in items]
    )
    path = asyncio.run(
        build_report(
            ReportContext(
                tmp_path,
                header=header(**hkw),
                items=items,
                responses=responses,
                scores=scores,
                specs=specs,
                primary=primary,
                models=models,
                n_resamples=999,
                seed=0,
                judges=["judge-x"],
            ),
            agent=agent,
        )
    )
    return path.read_text()


def section(text: str, title: str) -> str:
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


# ------------------------------------------------------------------ 1. paired tests, not CI overlap
ITEMS8 = [Item(id=f"g/{i}", benchmark="jsonl", task="generic", discipline="physics", prompt=f"q{i}") for i in range(8)]
BASE = [0, 10, 20, 30, 40, 50, 60, 70]  # m-b, mean 280 / 8 = 35
A = [b + 1 for b in BASE]  # m-a = m-b + 1 on every item, mean 36
C_MINUS = [1, -1, 1, -1, 1, -1, 1, 2]  # m-b - m-c per item, mean 3/8 = 0.375
C = [b - d for b, d in zip(BASE, C_MINUS)]  # m-c, mean 35 - 0.375 = 34.625


def three_models() -> list[Score]:
    return [
        Score(item_id=it.id, model=m, metric="score", value=float(v[j]), rationale="r")
        for m, v in (("m-a", A), ("m-b", BASE), ("m-c", C))
        for j, it in enumerate(ITEMS8)
    ]


def test_adjacent_pairs_use_the_paired_test_not_ci_overlap(tmp_path):
    text = build(tmp_path, ITEMS8, three_models(), [SCORE], "score", ["m-a", "m-b", "m-c"])
    # m-a vs m-b: differences all +1 -> CI of the difference 1 to 1; exact sign-flip test over 2**8 = 256 flips:
    #   only the all-plus flip reaches mean 1, two-sided p = 2 * 1/256 = 0.0078125 -> "0.0078" (4 decimals, like all p)
    # m-b vs m-c: |d| = seven 1s and one 2, observed sum 3.  Flips with sum >= 3: +2 and >= 4 of seven +1:
    #   C(7,4)+C(7,5)+C(7,6)+C(7,7) = 64; -2 and >= 6 of seven +1: 7 + 1 = 8; total 72 -> p = 2 * 72/256 = 0.5625
    # all eight differences are +1: their bootstrap CI has no variation and is said so, never "1.00 to 1.00"
    assert "| m-a vs m-b | 8 | 1.00 | no variation over 8 items | 0.0078 | significant |" in text
    assert re.search(r"\| m-b vs m-c \| 8 \| 0\.38 \| [^|]+ \| 0\.5625 \| not significant \|", text)
    lim = section(text, "Limitations")
    # the marginal CIs of m-a (36) and m-b (35) overlap widely (values spread 0-71), yet the pair differs;
    # Limitations sums the table up in one line instead of repeating it
    assert (
        "- Adjacent ranks (table beside the ranking): the paired test on score does not separate m-b vs m-c at "
        "the 5% level, so their order is not evidence of a difference. 95% CI overlap is not a test (some pairs "
        "the test separates have overlapping CIs). The p-values are not adjusted for multiple comparisons."
    ) in lim
    assert "p = " not in lim
    assert "m-a and m-b: no significant" not in text and "overlapping 95% CIs" not in text
    answer = section(text, "Answer")
    assert "**m-a** ranks first by score on 8 items (whole catalog): mean 36.00 per item (95% CI" in answer
    assert (
        "Against the runner-up m-b (mean 35.00), the paired test on 8 items gives p = 0.0078: a significant "
        "difference at the 5% level."
    ) in answer


def test_agent_narrative_may_cite_the_paired_p_values(tmp_path):
    narrative = (
        "m-a beats m-b by 1 point per item on 8 shared items (paired test p = 0.0078); "
        "m-b and m-c do not differ (p = 0.5625)."
    )
    text = build(
        tmp_path,
        ITEMS8,
        three_models(),
        [SCORE],
        "score",
        ["m-a", "m-b", "m-c"],
        agent=scripted("narrator", [narrative]),
    )
    answer = section(text, "Answer")
    assert f"- **Summary** (agent model narrator): {narrative}" in answer
    assert answer.index("- **Verdict:** ") < answer.index("- **Summary**")  # the fixed verdict stays first
    assert (
        "*(The summary was written by the agent model narrator; every number, model name, metric name and facet "
        "value it cites was checked against the report's tables and run facts."
    ) in answer


def test_one_item_run_claims_no_overlap_and_no_test(tmp_path):
    item = [ITEMS8[0]]
    scores = [
        Score(item_id="g/0", model="m-a", metric="score", value=5.0, rationale="r"),
        Score(item_id="g/0", model="m-b", metric="score", value=3.0, rationale="r"),
    ]
    text = build(tmp_path, item, scores, [SCORE], "score", ["m-a", "m-b"])
    answer = section(text, "Answer")
    assert (
        "No model is established as first by score on 1 item (whole catalog): m-a leads with mean 5.00 per item (no "
        "CI: fewer than 2 items), but it is not tested against m-b (they share 1 scored item; the test needs 2). "
        "Full order (best first; '>': separated by the paired test of the adjacent pair at the 5% level, '≈': not "
        "separated or not tested): m-a ≈ m-b.\n- **How sure:** No paired test against the runner-up m-b (mean "
        "3.00): they share 1 scored item and the test needs at least 2, so the order is not evidence of a "
        "difference."
    ) in answer
    assert "overlap" not in answer
    assert (
        "- Adjacent ranks (table beside the ranking): m-a vs m-b share fewer than 2 scored items and are not "
        "tested." in section(text, "Limitations")
    )
    assert "| m-a vs m-b | 1 | n/a | n/a | n/a | not tested (needs 2 shared items) |" in text
    assert "overlap" not in section(text, "Limitations")


# ------------------------------------------------------------------ 2 + 4. failed metrics keep their row
RIGOR = Rubric(
    name="rigor",
    tasks=["generic"],
    description="rigor",
    source="user",
    criteria=[Criterion(name="logic", description="sound", anchors={0: "none", 10: "flawless"})],
)
ITEMS3 = ITEMS8[:3]


def failed_rubric_scores() -> list[Score]:
    out = [
        Score(item_id=i.id, model="m-a", metric="rigor", status="judge_error", error="judge unreachable")
        for i in ITEMS3
    ]
    out += [
        Score(item_id="g/0", model="m-b", metric="rigor", status="judge_error", error="judge unreachable"),
        Score(item_id="g/1", model="m-b", metric="rigor", status="parse_error", error="no JSON"),
    ]
    out += [
        Score(item_id=i.id, model=m, metric="em", value=v, rationale="r")
        for m, vals in (("m-a", (1.0, 0.0, 1.0)), ("m-b", (0.0, 0.0, 1.0)))
        for i, v in zip(ITEMS3, vals)
    ]
    out += [
        Score(item_id=i.id, model=m, metric="judged", status="not_run", error="no judge configured")
        for m in ("m-a", "m-b")
        for i in ITEMS3
    ]
    return out


JUDGED = MetricSpec(name="judged", tasks=["generic"], kind="judge", range=(0.0, 10.0), description="judged")
NEVER = MetricSpec(name="never_scored", tasks=["generic"], range=(0.0, 1.0), description="no scores at all")


def test_all_failed_metrics_keep_their_row_and_empty_ranking_embeds_no_figure(tmp_path):
    text = build(tmp_path, ITEMS3, failed_rubric_scores(), [RIGOR, EM, JUDGED, NEVER], "rigor", ["m-a", "m-b"])
    table = section(text, "All metrics")
    # m-a: 3 judge_error; m-b: 1 judge_error + 1 parse_error; em means 2/3 = 0.67 and 1/3 = 0.33
    assert (
        "| rigor | rubric | 0-100 | all 3 failed (judge_error) | all 2 failed (judge_error 1, parse_error 1) |" in table
    )
    assert "| em | objective | 0-1 | 0.67 | 0.33 |" in table
    assert "| judged | judge | 0-10 | not run | not run |" in table
    assert "| never_scored | objective | 0-1 | n/a | n/a |" in table
    # the ranking metric has no ok score: its rows show the failures, and no chart is written or linked
    assert "| unscored | m-a | n/a | n/a | n/a | 0 | 3 failed (judge_error): judge unreachable |" in text
    assert (
        "| unscored | m-b | n/a | n/a | n/a | 0 | 2 failed (judge_error 1, parse_error 1): judge unreachable |" in text
    )
    assert "m-a is unscored on rigor (3 failed (judge_error): judge unreachable), so it is not placed" in text
    assert "![ranking]" not in text and not (tmp_path / "figures" / "ranking.png").exists()
    assert "![rigor per criterion]" not in text  # no criterion values -> no heatmap section at all
    assert "No target model has a valid rigor score on the 3 selected items; see Failures." in text


def _rigor_scores() -> list[Score]:
    """m-a's rigor score 70 with criterion logic 7 on each of ITEMS3."""
    return [
        Score(
            item_id=i.id,
            model="m-a",
            metric="rigor",
            value=70.0,
            rationale="r",
            judge="judge-x",
            details={"criteria": {"logic": 7}},
        )
        for i in ITEMS3
    ]


def test_heatmap_that_fails_to_draw_is_not_linked(tmp_path, monkeypatch):
    def broken(path, *a, **kw):
        raise RuntimeError("no fonts")

    monkeypatch.setattr(criteria_section, "heatmap", broken)
    scores = _rigor_scores()
    text = build(tmp_path, ITEMS3, scores, [RIGOR], "rigor", ["m-a"])
    assert "| logic | 1 | 7.00 |" in text
    assert "![rigor per criterion]" not in text
    assert "- Figure figures/criteria_rigor.png could not be drawn: RuntimeError: no fonts" in text
    assert "![ranking](figures/ranking.png)" in text and (tmp_path / "figures" / "ranking.png").is_file()


# ------------------------------------------------------------------ 3. item count of the named metric; SGI-Score
def sgi_items() -> list[Item]:
    dr = [
        Item(id=f"sgi/dr/{i}", benchmark="sgi-bench", task=DEEP_RESEARCH, discipline="physics", prompt="q")
        for i in range(4)
    ]
    er = [
        Item(id=f"sgi/er/{i}", benchmark="sgi-bench", task=EXPERIMENTAL_REASONING, discipline="physics", prompt="q")
        for i in range(9)
    ]
    return dr + er


def test_sgi_answer_counts_the_items_of_the_named_metric_and_explains_missing_sgi_score(tmp_path):
    items = sgi_items()  # 13 selected: 4 deep research (em), 9 experimental reasoning (mca)
    scores = [
        Score(item_id=f"sgi/dr/{i}", model=m, metric="em", value=v, rationale="r")
        for m, vals in (("m-a", (1, 1, 1, 0)), ("m-b", (1, 0, 0, 0)))
        for i, v in enumerate(vals)
    ]
    scores += [
        Score(item_id=f"sgi/er/{i}", model=m, metric="mca", value=1.0, rationale="r")
        for m in ("m-a", "m-b")
        for i in range(9)
    ]
    mca = MetricSpec(name="mca", tasks=[EXPERIMENTAL_REASONING], range=(0.0, 1.0), description="mc accuracy")
    text = build(tmp_path, items, scores, [EM, mca], "em", ["m-a", "m-b"], scope="task deep_research")
    answer = section(text, "Answer")
    # em: m-a 3/4 = 0.75 on n = 4 items with an em score, not the 13 selected
    assert (
        "No model is established as first by em on 4 items (task deep_research; 13 items selected): m-a leads with "
        "mean 0.75 per item (95% CI 0.30 to 0.95), but the paired test does not separate it from m-b (p = 0.5000)."
    ) in answer
    assert "on 13 items" not in answer
    assert re.search(r"\| 1 \| m-a \| 0\.75 \| [^|]+ \| 3\.00 \| 4 \| 0 \|", text)
    why = (
        "SGI-Score not available for m-a, m-b: missing IG (no idea_final_score scores), DE (no dry_passall_5 "
        "scores), WE (no wet_final_score scores); an SGI-Score needs an ok score on all five SGI-Bench tasks."
    )
    assert why in answer and f"- {why}" in section(text, "Limitations")


def test_no_sgi_note_outside_sgi_bench(tmp_path):
    text = build(tmp_path, ITEMS8, three_models(), [SCORE], "score", ["m-a", "m-b", "m-c"])
    assert "SGI-Score" not in text


# ------------------------------------------------------------------ 5. not applicable vs failures
COH = MetricSpec(name="aidan_mean_coherence", tasks=["generic"], range=(0.0, 100.0), description="coherence")
NOV = MetricSpec(name="aidan_mean_novelty", tasks=["generic"], range=(0.0, 1.0), description="novelty")


def test_zero_accepted_answers_are_not_applicable_not_failures(tmp_path):
    # m-a: coherence 80 and 70 on g/0, g/1, nothing to average on g/2 (0 accepted answers);
    # m-b: nothing to average anywhere; novelty on g/0 judge_error (a genuine failure)
    scores = [
        Score(item_id="g/0", model="m-a", metric="aidan_mean_coherence", value=80.0, rationale="r"),
        Score(item_id="g/1", model="m-a", metric="aidan_mean_coherence", value=70.0, rationale="r"),
    ]
    scores += [
        Score(
            item_id="g/2",
            model="m-a",
            metric="aidan_mean_coherence",
            status="not_run",
            error="no accepted answers with a coherence_score",
        )
    ]
    scores += [
        Score(
            item_id=i.id,
            model="m-b",
            metric="aidan_mean_coherence",
            status="not_run",
            error="no accepted answers with a coherence_score",
        )
        for i in ITEMS3
    ]
    scores += [
        Score(
            item_id="g/2",
            model="m-a",
            metric="aidan_mean_novelty",
            status="not_run",
            error="no accepted answers with a embedding_dissimilarity_score",
        ),
        Score(item_id="g/0", model="m-a", metric="aidan_mean_novelty", status="judge_error", error="judge unreachable"),
    ]
    responses = [Response(item_id=i.id, model=m, text="...") for m in ("m-a", "m-b") for i in ITEMS3]
    responses.append(Response(item_id="g/9", model="m-b", status="infra_error", error="HTTP 500"))
    assert not_applicable(scores[2]) and not not_applicable(scores[-1])
    text = build(tmp_path, ITEMS3, scores, [COH, NOV], "aidan_mean_coherence", ["m-a", "m-b"], responses=responses)
    # ranking: m-a (80 + 70) / 2 = 75 on 2 items, 0 failed (the 0-accepted item is not a failure)
    assert re.search(r"\| 1 \| m-a \| 75\.00 \| [^|]+ \| 150\.00 \| 2 \| 0 \|", text)
    # m-b has no valid score (3 not applicable): unscored with the reason, and m-a is not "first" of one
    assert (
        "| unscored | m-b | n/a | n/a | n/a | 0 | 0 (3 not applicable: no accepted answers with a coherence_score) |"
    ) in text
    answer = section(text, "Answer")
    assert "ranks first" not in answer
    assert (
        "Only **m-a** has a valid aidan_mean_coherence score (scale 0-100): mean 75.00 per item on 2 items"
    ) in answer
    assert (
        "m-b is unscored on aidan_mean_coherence (3 not applicable: no accepted answers with a coherence_score), "
        "so it is not placed above or below any model."
    ) in answer
    assert "| aidan_mean_coherence | objective | 0-100 | 75.00 | not applicable (3) |" in section(text, "All metrics")
    # m-a novelty: 1 judge_error + 1 not applicable, no ok value; m-b: no novelty scores
    assert "| aidan_mean_novelty | objective | 0-1 | all 1 failed (judge_error); 1 not applicable | n/a |" in text
    failures = section(text, "Failures")
    assert (
        "2 failed records (infra_error: 1, judge_error: 1); they are excluded from means and listed here." in failures
    )
    assert "| score | g/0 | m-a | aidan_mean_novelty | judge_error | judge unreachable |" in failures
    assert "| response | g/9 | m-b |  | infra_error | HTTP 500 |" in failures
    assert "not_run" not in failures.split("Not applicable", 1)[0]
    assert (
        "Not applicable (not failures, excluded from means: nothing to score, e.g. a mean over 0 accepted "
        "answers): 5 scores (aidan_mean_coherence: 4, aidan_mean_novelty: 1)."
    ) in failures
    assert "| g/2 | m-a | aidan_mean_coherence | no accepted answers with a coherence_score |" in failures


@pytest.mark.parametrize(
    "status,error,expected",
    [
        ("not_run", "no accepted answers with a coherence_score", True),
        ("not_run", "no judge configured", False),
        ("judge_error", "no accepted answers with a coherence_score", False),
    ],
)
def test_not_applicable_rule(status, error, expected):
    assert not_applicable(Score(item_id="x", model="m", metric="c", status=status, error=error)) is expected


def test_answer_names_a_coverage_difference(tmp_path):
    items = [Item(id=f"g/{i}", benchmark="jsonl", task="generic", prompt=f"q{i}") for i in range(4)]
    # m-a answered 3 items (mean (9+9+9)/3 = 9), m-b all 4 (mean (8+8+8+8)/4 = 8)
    scores = [Score(item_id=f"g/{i}", model="m-a", metric="score", value=9.0, rationale="r") for i in range(3)]
    scores += [Score(item_id=f"g/{i}", model="m-b", metric="score", value=8.0, rationale="r") for i in range(4)]
    text = build(tmp_path, items, scores, [SCORE], "score", ["m-a", "m-b"])
    answer = section(text, "Answer")
    # shared items g/0-g/2: m-a 9.00, m-b 8.00; own items: m-a 27/3 = 9.00 on 3, m-b 32/4 = 8.00 on 4;
    # m-a's missing g/3 counted as 0: m-a 27/4 = 6.75 against m-b 8.00 -> the order reverses
    assert (
        "No model is established as first by score on 3 items (whole catalog; the items both models scored, of 4 "
        "selected): m-a leads with mean 9.00 per item (no variation over 3 items, so no CI), but the paired test "
        "does not separate it from m-b (p = 0.2500)." in answer
    )
    assert (
        "Coverage differs (scored items: m-a 3, m-b 4): the ranking compares the 3 items both scored. The order "
        "by score depends on coverage: on the 3 items both scored, m-a > m-b (m-a 9.00, m-b 8.00); on each "
        "model's own scored items, m-a > m-b (m-a 9.00 on 3, m-b 8.00 on 4); counting a failed or missing score "
        "as 0 over the 4 items attempted, m-b > m-a (m-b 8.00, m-a 6.75)."
    ) in answer
    assert "| m-a | 3 | 9.00 | 9.00 | 6.75 |" in section(text, "Coverage: score")


def test_ranking_chart_drawn_while_the_tables_are_built_still_reports_its_failure_first(tmp_path, monkeypatch):
    """The ranking chart is started before the tables and collected after them (core.offload.submit_to_worker): a
    failure to draw it is still a note, listed before a heatmap's, and the report links neither image."""

    def broken(name):
        def draw(path, *a, **kw):
            raise RuntimeError(f"{name} failed")

        return draw

    monkeypatch.setattr(ranking_section, "ranking_chart", broken("ranking"))
    monkeypatch.setattr(criteria_section, "heatmap", broken("heatmap"))
    scores = _rigor_scores()
    text = build(tmp_path, ITEMS3, scores, [RIGOR], "rigor", ["m-a"])
    first = "- Figure figures/ranking.png could not be drawn: RuntimeError: ranking failed"
    second = "- Figure figures/criteria_rigor.png could not be drawn: RuntimeError: heatmap failed"
    assert first in text and second in text and text.index(first) < text.index(second)
    assert "![ranking]" not in text and not (tmp_path / "figures" / "ranking.png").exists()
