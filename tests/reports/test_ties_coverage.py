"""The Answer states only what the data support (METRICS.md D.16): ties share a rank, coverage decides nothing
silently, an unscored model is named with its reason, a CI without variation supports no verdict, and the Answer
is a short list.  Each case is built by hand and run through the real build_report; every expected number is
hand-computed."""

from __future__ import annotations

import asyncio
import json
import math

from sgieval.agents.reporting import build_report
from sgieval.reports import ReportContext
from sgieval.core import Item, MetricSpec, Response, Score
from sgieval.metric_pool.reliability import reliability, reliability_rows

LEGEND = (
    "Full order (best first; '>': separated by the paired test of the adjacent pair at the 5% level, '≈': not separated"
)
"""The full order's legend (agents.reporting.separated_order) up to its optional "or not tested)"."""

EM = MetricSpec(name="em", tasks=["generic"], range=(0.0, 1.0), primary=True, description="exact match")
SCORE = MetricSpec(name="score", tasks=["generic"], range=(0.0, 10.0), primary=True, description="points")
JUDGED = MetricSpec(name="judged", tasks=["generic"], kind="judge", range=(0.0, 10.0), description="judged")
RN = MetricSpec(
    name="retrieval_novelty", tasks=["generic"], range=(0.0, 10.0), primary=True, description="S_inn (METRICS.md E)"
)
HEADER = {
    "run_id": "r1",
    "request": "Which model is best?",
    "selection_reason": "test",
    "filters": "none",
    "k": "all matches",
    "n_items": 10,
    "sampling": "all",
    "seed": 0,
    "models": "target",
    "judges": "none",
    "agent": "none",
    "metrics": "test",
    "primary": "em",
    "primary_reason": "asked",
    "data_source": "test",
    "tools": "none",
    "scope": "whole catalog",
    "extra": {},
}


def items(n: int) -> list[Item]:
    return [
        Item(id=f"g/{i}", benchmark="jsonl", task="generic", discipline="physics", prompt=f"q{i}") for i in range(n)
    ]


def ok(model: str, i: int, v: float, metric: str = "em") -> Score:
    return Score(item_id=f"g/{i}", model=model, metric=metric, value=float(v), rationale="r")


def report(tmp_path, its, scores, specs, primary, models, judges=None, n_resamples=999) -> str:
    path = asyncio.run(
        build_report(
            ReportContext(
                tmp_path,
                header=HEADER,
                items=its,
                responses=[Response(item_id=i.id, model=m, text="...") for m in models for i in its],
                scores=scores,
                specs=specs,
                primary=primary,
                models=models,
                n_resamples=n_resamples,
                seed=0,
                judges=judges or [],
            )
        )
    )
    return path.read_text()


def section(text: str, title: str) -> str:
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def correct(model: str, right: set[int], n: int = 10) -> list[Score]:
    return [ok(model, i, 1.0 if i in right else 0.0) for i in range(n)]


# ------------------------------------------------------------------ 1. ties are ties
def test_two_models_at_0_60_share_rank_2_and_no_runner_up_is_named(tmp_path):
    # alpha right on 0-7 (0.80), beta on 0-5 and gamma on 2-7 (0.60 each), delta on 0-3 (0.40).
    # beta vs gamma: differences +1 on items 0, 1 and -1 on 6, 7: mean 0, p = 1 -> not separated -> shared rank.
    # alpha vs beta: +1 on items 6, 7, 0 elsewhere; exact sign flips: P(sum >= 2) = 1/4, two-sided p = 0.5;
    # alpha vs gamma: +1 on items 0, 1: p = 0.5 as well (exact enumeration: 2**10 flips <= 2000 resamples).
    scores = (
        correct("alpha", set(range(8)))
        + correct("beta", set(range(6)))
        + correct("gamma", set(range(2, 8)))
        + correct("delta", set(range(4)))
    )
    text = report(tmp_path, items(10), scores, [EM], "em", ["gamma", "delta", "alpha", "beta"], n_resamples=2000)
    rows = section(text, "Ranking by em")
    assert "| 1 | alpha | 0.80 |" in rows
    assert "| 2= | beta | 0.60 |" in rows and "| 2= | gamma | 0.60 |" in rows
    assert "| 4 | delta | 0.40 |" in rows
    answer = section(text, "Answer")
    # alpha is not separated from either model tied for second (p = 0.5): no winner, and '≈' between the ranks
    assert (
        "No model is established as first by em on 10 items (whole catalog): alpha leads with mean 0.80 per item "
        "(95% CI 0.49 to 0.94), but the paired test does not separate it from beta (p = 0.5000) or gamma "
        "(p = 0.5000)."
    ) in answer
    assert "**alpha**" not in answer
    assert f"{LEGEND}): alpha ≈ beta = gamma ≈ delta." in answer
    assert "runner-up" not in answer
    assert (
        "- **How sure:** Against beta and gamma, tied for second (mean 0.60 each), the paired tests give "
        "p = 0.5000 against beta (10 items), p = 0.5000 against gamma (10 items): no significant difference from "
        "any of them at the 5% level."
    ) in answer
    assert (
        "beta and gamma share rank 2= (mean 0.60 each at the precision shown, not separated by the paired "
        "test); the table lists them in name order, which is not a result."
    ) in answer


def test_a_tie_at_the_top_is_never_followed_by_a_strict_order(tmp_path):
    # alpha and alpha2 both right on 0-5 (0.60 each, identical: p = 1); beta on 0-2 (0.30)
    scores = correct("alpha", set(range(6))) + correct("alpha2", set(range(6))) + correct("beta", set(range(3)))
    text = report(tmp_path, items(10), scores, [EM], "em", ["alpha2", "beta", "alpha"])
    answer = section(text, "Answer")
    assert "**alpha** and **alpha2** tie for first by em on 10 items" in answer
    assert f"{LEGEND}): alpha = alpha2 ≈ beta." in answer
    assert "alpha > alpha2" not in text
    assert "The paired test does not separate them: alpha vs alpha2 on 10 items, p = 1.0000." in answer
    assert "| 1= | alpha | 0.60 |" in text and "| 1= | alpha2 | 0.60 |" in text and "| 3 | beta | 0.30 |" in text


def test_equal_at_the_printed_precision_is_a_tie_and_name_order_breaks_nothing(tmp_path):
    # zeta 0.6025 and beta 0.5975 both print "0.60"; differences +0.005, -0.005, +0.005, +0.015 (4 items: p >= 0.125):
    # tied.  zeta's name sorts after beta's and its mean is higher: both get "1=" whatever the names.
    z = [0.61, 0.595, 0.61, 0.595]
    b = [0.605, 0.60, 0.605, 0.58]
    scores = [ok("zeta", i, v, "score") for i, v in enumerate(z)] + [ok("beta", i, v, "score") for i, v in enumerate(b)]
    text = report(tmp_path, items(4), scores, [SCORE], "score", ["zeta", "beta"])
    assert "| 1= | zeta | 0.60 |" in text and "| 1= | beta | 0.60 |" in text
    assert "**zeta** and **beta** tie for first by score on 4 items" in section(text, "Answer")
    assert f"{LEGEND}): zeta = beta." in section(text, "Answer")


# ------------------------------------------------------------------ 2. coverage decides nothing silently
def test_the_4_of_10_model_does_not_silently_beat_7_of_10(tmp_path):
    # short answered 4 items, all right (1.00 on its own items), 6 truncated; full answered all 10, right on 7
    # including the 4 that short answered.  Shared items: 1.00 and 1.00 (a tie); own items: short 1.00 on 4
    # against full 0.70 on 10; counting the 6 truncated as 0: short 4/10 = 0.40 against full 0.70.
    scores = [ok("short", i, 1.0) for i in range(4)]
    scores += [
        Score(item_id=f"g/{i}", model="short", metric="em", status="truncated", error="no response: cut")
        for i in range(4, 10)
    ]
    scores += correct("full", set(range(7)))
    text = report(tmp_path, items(10), scores, [EM], "em", ["short", "full"])
    answer = section(text, "Answer")
    assert (
        "**full** and **short** tie for first by em on 4 items (whole catalog; the items both models scored, of "
        "10 selected): mean 1.00 per item each"
    ) in answer
    assert (
        "The order by em depends on coverage: on the 4 items both scored, full = short (full 1.00, short 1.00); "
        "on each model's own scored items, short > full (short 1.00 on 4, full 0.70 on 10); counting a failed "
        "or missing score as 0 over the 10 items attempted, full > short (full 0.70, short 0.40)."
    ) in answer
    ranking = section(text, "Ranking by em")
    assert "| 1= | full | 1.00 |" in ranking and "| 4 | 0 |" in ranking  # full: n 4 shared, 0 failed
    assert "| 1= | short | 1.00 |" in ranking and "| 4 | 6 |" in ranking  # short: 6 failed
    cov = section(text, "Coverage: em")
    assert "| full | 10 | 1.00 | 0.70 | 0.70 |" in cov and "| short | 4 | 1.00 | 1.00 | 0.40 |" in cov


def test_coverage_that_changes_no_order_is_still_stated(tmp_path):
    # a right on 0-4 of its 5 items; b answered 8, right on 0-1: every reading puts a first
    scores = [ok("a", i, 1.0) for i in range(5)] + [ok("b", i, 1.0 if i < 2 else 0.0) for i in range(8)]
    text = report(tmp_path, items(8), scores, [EM], "em", ["a", "b"])
    answer = section(text, "Answer")
    assert (
        "Coverage differs (scored items: a 5, b 8): the ranking compares the 5 items both scored; the order is "
        "the same on each model's own items and with failures counted as wrong."
    ) in answer
    assert (
        "No model is established as first by em on 5 items (whole catalog; the items both models scored, of 8 "
        "selected): a leads with mean 1.00 per item (95% CI 0.57 to 1.00), but the paired test does not separate "
        "it from b (p = 0.2500)."
    ) in answer


def test_an_unscored_retrieval_novelty_model_is_named_and_never_placed(tmp_path):
    # near: S_inn 6 and 4 (mean 5.00); far: retrieval found no related work for either idea
    scores = [ok("near", 0, 6.0, "retrieval_novelty"), ok("near", 1, 4.0, "retrieval_novelty")]
    scores += [
        Score(
            item_id=f"g/{i}",
            model="far",
            metric="retrieval_novelty",
            status="not_run",
            error="no related work found for the query 'q' (corpus); novelty not scored",
            details={"not_applicable": True},
        )
        for i in range(2)
    ]
    text = report(tmp_path, items(2), scores, [RN], "retrieval_novelty", ["near", "far"])
    answer = section(text, "Answer")
    assert "ranks first" not in answer and "Full order" not in answer
    assert (
        "Only **near** has a valid retrieval_novelty score (scale 0-10): mean 5.00 per item on 2 items (whole "
        "catalog) (95% CI"
    ) in answer
    assert "with one scored model this is an absolute score, not a ranking." in answer
    assert (
        "far is unscored on retrieval_novelty (2 not applicable: no related work found for the query 'q' "
        "(corpus); novelty not scored), so it is not placed above or below any model."
    ) in answer
    assert (
        "| unscored | far | n/a | n/a | n/a | 0 | 0 (2 not applicable: no related work found for the query 'q' "
        "(corpus); novelty not scored) |"
    ) in text


# ------------------------------------------------------------------ 3. no interval without variation
def test_values_without_variation_print_no_ci(tmp_path):
    # m-a scores 7 on all 6 items, m-b 5: no bootstrap variation for either
    scores = [ok("m-a", i, 7.0, "score") for i in range(6)] + [ok("m-b", i, 5.0, "score") for i in range(6)]
    text = report(tmp_path, items(6), scores, [SCORE], "score", ["m-a", "m-b"])
    assert "| 1 | m-a | 7.00 | no variation over 6 items | 42.00 | 6 | 0 |" in text
    # separated (p = 0.0312 < 0.05): the winner in bold, and '>' in the order
    assert (
        "**m-a** ranks first by score on 6 items (whole catalog): mean 7.00 per item (no variation over 6 items, "
        "so no CI); the paired test separates it from the runner-up m-b at the 5% level (p = 0.0312). "
        f"{LEGEND}): m-a > m-b."
    ) in section(text, "Answer")
    assert "7.00 to 7.00" not in text
    # the differences are all +2: their CI has no variation either; the sign-flip test over 2**6 flips still
    # gives p = 2 / 64 = 0.03125 -> "0.0312"
    assert "| m-a vs m-b | 6 | 2.00 | no variation over 6 items | 0.0312 | significant |" in text


def _panel(values: dict[str, list[tuple[float, float]]]) -> list[Score]:
    """Judged scores with two judges' values per (item, model): the panel value is their mean."""
    out = []
    for m, pairs in values.items():
        for i, (x, y) in enumerate(pairs):
            out.append(
                Score(
                    item_id=f"g/{i}",
                    model=m,
                    metric="judged",
                    value=(x + y) / 2,
                    rationale="r",
                    judge="j1,j2",
                    details={"per_judge": {"j1": x, "j2": y}},
                )
            )
    return out


def test_six_identical_judge_pairs_support_no_agreement_verdict(tmp_path):
    # 6 units (3 items x 2 models), both judges give the same value on each: alpha = 1 and every bootstrap
    # resample of the units gives alpha = 1 (or none), so the CI shows no variation
    scores = _panel({"m-a": [(8, 8), (6, 6), (9, 9)], "m-b": [(4, 4), (5, 5), (3, 3)]})
    rel = reliability(scores, JUDGED, n_resamples=200, seed=0)
    assert rel is not None and rel.alpha == 1.0 and rel.alpha_ci == (1.0, 1.0) and rel.n_units == 6
    rows = reliability_rows(rel)
    assert rows["agreement"][0][-1] == "no variation over 6 units"
    # the judges' values vary between units (8, 6, 9, 4, 5, 3): only the bootstrap of alpha has no spread
    assert rows["verdict"] == (
        "On judged, Krippendorff's alpha across 2 judges is 1.00 over 6 units: the judges gave equal values on "
        "every unit, while the values vary between units. Its bootstrap 95% CI is degenerate (every resample of "
        "the 6 units gives alpha 1.00), so it measures no uncertainty, and 6 units are too few to establish the "
        "judges' agreement."
    )
    assert "agree well enough" not in rows["verdict"]
    # each judge's offset from the panel mean is 0 on every unit: no variation, never a "significant" bias
    assert [r[2] for r in rows["offsets"]] == ["no variation over 6 units"] * 2
    text = report(tmp_path, items(3), scores, [JUDGED], "judged", ["m-a", "m-b"], judges=["j1", "j2"])
    answer = section(text, "Answer")
    assert rows["verdict"] in answer and "agree well enough" not in text
    assert "alpha across 2 judges is 1.00 with no variation" not in text
    assert "| judged | interval | j1, j2 | 6 | 1.00 | no variation over 6 units |" in section(text, "Judge reliability")


def test_judges_that_vary_keep_their_ci():
    # a variant with disagreement: the CI has width, so it is printed as an interval
    scores = _panel({"m-a": [(8, 7), (6, 6), (9, 8)], "m-b": [(4, 5), (5, 3), (3, 3)]})
    rows = reliability_rows(reliability(scores, JUDGED, n_resamples=200, seed=0))
    lo, hi = rows["agreement"][0][-1].split(" to ")
    assert float(lo) < float(hi) and "no variation" not in rows["verdict"]


# ------------------------------------------------------------------ 10. a readable Answer
def test_the_answer_is_a_short_list_of_full_sentences(tmp_path):
    scores = (
        correct("alpha", set(range(8)))
        + correct("beta", set(range(6)))
        + correct("gamma", set(range(2, 8)))
        + correct("delta", set(range(4)))
    )
    text = report(tmp_path, items(10), scores, [EM], "em", ["alpha", "beta", "gamma", "delta"], judges=["j"])
    answer = section(text, "Answer").strip()
    lines = answer.splitlines()
    assert lines[0].startswith("- **Verdict:** ") and lines[1].startswith("- **How sure:** ")
    assert "- **Caveats:**" in lines
    for line in lines:  # every item and sub-item is short and ends as a sentence
        assert line.startswith(("- **", "  - ")) and (line.endswith(".") or line == "- **Caveats:**")
        assert len(line.split()) <= 80, line
    data = json.loads((tmp_path / "report.json").read_text())["answer"]
    assert data["verdict"].startswith('To "Which model is best?": No model is established as first by em')
    assert data["caveats"][0].startswith("beta and gamma share rank 2=")
    assert not math.isnan(len(data["how_sure"]))


def test_a_tie_at_the_printed_precision_names_no_overall_winner_per_facet(tmp_path):
    # zeta 0.62, 0.62 (physics), 0.585, 0.585 (chemistry): mean 0.6025; beta 0.59, 0.59, 0.605, 0.605: mean 0.5975.
    # Both print 0.60 and the paired test on 4 items (differences +0.03, +0.03, -0.02, -0.02) cannot separate them:
    # tied for first, so "zeta is first overall but not in chemistry" would be a claim the data do not support.
    its = [
        Item(id=f"g/{i}", benchmark="jsonl", task="generic", discipline=d, prompt=f"q{i}")
        for i, d in enumerate(["physics", "physics", "chemistry", "chemistry"])
    ]
    z, b = [0.62, 0.62, 0.585, 0.585], [0.59, 0.59, 0.605, 0.605]
    scores = [ok("zeta", i, v, "score") for i, v in enumerate(z)] + [ok("beta", i, v, "score") for i, v in enumerate(b)]
    text = report(tmp_path, its, scores, [SCORE], "score", ["zeta", "beta"])
    answer = section(text, "Answer")
    assert "**zeta** and **beta** tie for first by score on 4 items" in answer
    assert "first overall" not in text
    where = section(text, "Who wins where")
    # the facet table still shows who is first where: beta (0.605 + 0.605) / 2 against zeta 0.585, lead +0.02
    assert "| chemistry | 2 | beta (0.60) | zeta (0.58) | +0.02 |" in where
