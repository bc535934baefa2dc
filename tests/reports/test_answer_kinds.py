"""Each kind of question gets an Answer of its kind, first: where, yes/no, how good, how much, why.  On the real
stored SciAidanBench answers through `sgieval ask ... --yes`, and a constructed three-model run whose order flips by
discipline.  Every expected number is computed here from the run's stored scores (numpy/scipy), not by the code
under test."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from sgieval.cli import app
from sgieval.tests.conftest import REPO

METRIC = "aidan_accepted_answers"
O1, PHI4, FOURO, LLAMA, QWEN = (
    "replay:o1-mini",
    "replay:phi4:latest",
    "replay:openai/4o",
    "replay:llama3.3:latest",
    "replay:qwen2.5:latest",
)


def ask(tmp_path_factory, request: str) -> tuple[str, dict[str, dict[str, float]], dict]:
    """(the Answer's first bullet, model -> item -> accepted answers, model -> item -> rationale) of one run."""
    out = tmp_path_factory.mktemp("runs")
    res = CliRunner().invoke(app, ["ask", request, "--yes", "--out", str(out)])
    assert res.exit_code == 0, res.output
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    values: dict[str, dict[str, float]] = {}
    why: dict[str, dict[str, str]] = {}
    for line in (run_dir / "scores.jsonl").read_text().splitlines():
        s = json.loads(line)
        if s["metric"] == METRIC and s["status"] == "ok" and s["item_id"] != "*":
            values.setdefault(s["model"], {})[s["item_id"]] = float(s["value"])
            why.setdefault(s["model"], {})[s["item_id"]] = s["rationale"]
    answer = (run_dir / "report.md").read_text().split("## Answer\n\n", 1)[1].split("\n## ", 1)[0]
    return answer.splitlines()[0], values, why


def paired(a: dict[str, float], b: dict[str, float]) -> tuple[np.ndarray, float, float, float]:
    """(differences a - b over the shared items in id order, BCa 95% CI low, high, permutation p), as a run with
    the default 10,000 resamples and seed 0 computes them."""
    keys = sorted(set(a) & set(b))
    x, y = np.array([a[k] for k in keys]), np.array([b[k] for k in keys])

    def mean_diff(u, v, axis=-1):
        return np.mean(u - v, axis=axis)

    ci = stats.bootstrap(
        (x, y),
        mean_diff,
        paired=True,
        vectorized=True,
        n_resamples=10000,
        method="BCa",
        random_state=np.random.default_rng(0),
    ).confidence_interval
    p = stats.permutation_test(
        (x, y),
        mean_diff,
        permutation_type="samples",
        vectorized=True,
        n_resamples=10000,
        random_state=np.random.default_rng(0),
    ).pvalue
    return x - y, ci.low, ci.high, p


def link(item: str) -> str:
    return f"[{item}](viewer/index.html#/item/{item.replace('/', '%2F')})"


def test_where_in_chemistry_names_the_widest_spread_items_and_where_the_order_flips(tmp_path_factory):
    first, values, _ = ask(tmp_path_factory, "Where do the models disagree most in chemistry?")
    assert first.startswith(
        "- **Where it differs:** No facet splits the items replay:o1-mini and replay:openai/4o both scored"
    )
    # the widest spread (highest minus lowest accepted answers of the six models) on an item, top 5
    items = sorted({i for v in values.values() for i in v})
    spread = {i: max(v[i] for v in values.values()) - min(v[i] for v in values.values()) for i in items}
    top = sorted(items, key=lambda i: (-spread[i], i))[:5]
    hi = max(values, key=lambda m: values[m][top[0]])
    lo = min(values, key=lambda m: values[m][top[0]])
    assert (
        f"The items with the widest spread between the models (highest minus lowest {METRIC}): {link(top[0])} "
        f"({spread[top[0]]:g}: {hi} {values[hi][top[0]]:g}, {lo} {values[lo][top[0]]:g}); {link(top[1])} "
    ) in first
    assert all(link(i) in first for i in top)
    # o1-mini leads 4o overall (296 against 274); 4o scores more on these items
    flips = [i for i in items if values[FOURO][i] > values[O1][i]]
    worst = max(flips, key=lambda i: values[FOURO][i] - values[O1][i])
    assert (
        f"The overall order flips on {len(flips)} of the 25 items both scored, where {FOURO} scores higher than "
        f"{O1}; most on {link(worst)} ({FOURO} {values[FOURO][worst]:g}, {O1} {values[O1][worst]:g})"
    ) in first


def test_where_two_named_models_differ_by_subfield_with_holm_adjusted_p(tmp_path_factory):
    first, values, _ = ask(tmp_path_factory, "Where do o1-mini and phi4 disagree in physics?")
    assert first.startswith(f"- **Where it differs:** {O1}'s lead over {PHI4} comes most of all from Synchrotron")
    # the paired test per physics subfield (direction), then Holm's step-down adjustment over them
    direction = {i: i.split("/")[1] for i in values[O1]}
    subs = sorted(set(direction.values()))
    p = {}
    for sub in subs:
        ids = [i for i in values[O1] if direction[i] == sub and i in values[PHI4]]
        p[sub] = paired({i: values[O1][i] for i in ids}, {i: values[PHI4][i] for i in ids})[3]
    order = sorted(subs, key=lambda s: p[s])
    holm, running = {}, 0.0
    for rank, sub in enumerate(order):
        running = max(running, min(1.0, (len(subs) - rank) * p[sub]))
        holm[sub] = running
    sync = "physics-synchrotron"
    gap = np.mean([values[O1][i] - values[PHI4][i] for i in values[O1] if direction[i] == sync])
    assert f"Holm-adjusted for the {len(subs)} values tested)" in first
    assert holm[sync] > p[sync]
    assert (
        f"the gap is largest in Synchrotron (direction; {O1} "
        f"{np.mean([values[O1][i] for i in values[O1] if direction[i] == sync]):.2f} against {PHI4} "
        f"{np.mean([values[PHI4][i] for i in values[O1] if direction[i] == sync]):.2f} per item, 10 items, "
        f"p = {p[sync]:.4f}, Holm-adjusted p = {holm[sync]:.4f})."
    ) in first
    assert round(gap, 2) == 18.70
    assert first in (REPO / "docs" / "report.md").read_text(encoding="utf-8")  # the page quotes the real output


def test_is_o1_mini_better_than_phi4_at_physics_says_yes_with_the_difference_and_its_ci(tmp_path_factory):
    first, values, _ = ask(tmp_path_factory, "Is o1-mini better than phi4 at physics?")
    d, lo, hi, p = paired(values[O1], values[PHI4])
    assert p < 0.05 and d.mean() > 0 and len(d) == 57
    assert first == (
        f"- **Yes**: {O1} is better than {PHI4} by {METRIC} (count >= 0 answers, higher is better) in discipline "
        f"Physics; on the 57 items both scored, mean {np.mean(list(values[O1].values())):.2f} against "
        f"{np.mean(list(values[PHI4].values())):.2f} {METRIC} per item, a difference of {d.mean():.2f} ({O1} minus "
        f"{PHI4}; 95% CI {lo:.2f} to {hi:.2f}); the paired permutation test gives p = {p:.4f} (two-sided). The data "
        "do not settle whether this holds beyond these 57 items, on other metrics, or with other judges or samples "
        "of the models."
    )
    assert first in (REPO / "README.md").read_text(encoding="utf-8")  # the README quotes the real output


def test_is_phi4_better_than_qwen_in_chemistry_is_not_established(tmp_path_factory):
    first, values, _ = ask(tmp_path_factory, "Is phi4 better than qwen2.5 in chemistry?")
    d, lo, hi, p = paired(values[PHI4], values[QWEN])
    assert p >= 0.05 and lo < 0 < hi
    assert first.startswith(
        f"- **Not established**: the data do not establish whether {PHI4} is better than {QWEN} by {METRIC}"
    )
    assert (
        f"on the 25 items both scored, mean {sum(values[PHI4].values()) / 25:.2f} against "
        f"{sum(values[QWEN].values()) / 25:.2f} {METRIC} per item, a difference of {d.mean():.2f} ({PHI4} minus "
        f"{QWEN}; 95% CI {lo:.2f} to {hi:.2f}); the paired permutation test gives p = {p:.4f} (two-sided). The data "
        "do not settle which of the two is better: the difference is not significant at the 5% level and its 95% "
        "CI includes 0"
    ) in first


def test_how_good_is_llama_gives_its_level_first(tmp_path_factory):
    first, values, _ = ask(tmp_path_factory, "How good is llama3.3 at physics?")
    mine = list(values[LLAMA].values())
    assert first.startswith(
        f'- **Verdict:** To "How good is llama3.3 at physics?": **{LLAMA}** scores a mean of '
        f"{np.mean(mine):.2f} per item by {METRIC} (scale count >= 0 answers) on {len(mine)} items (discipline "
        f"Physics)"
    )
    assert f"total {sum(mine):g}" in first


def test_how_much_better_gives_the_difference_cohens_dz_and_the_units(tmp_path_factory):
    first, values, _ = ask(tmp_path_factory, "How much better is o1-mini than 4o at chemistry?")
    d, lo, hi, p = paired(values[O1], values[FOURO])
    sd = d.std(ddof=1)
    assert first.startswith(f"- **How much:** {O1} against {FOURO} by {METRIC} (count >= 0 answers) in discipline")
    assert f"a difference of {d.mean():.2f} ({O1} minus {FOURO}; 95% CI {lo:.2f} to {hi:.2f})" in first
    assert (
        f"Standardised effect size: Cohen's d_z = {d.mean() / sd:.2f} (mean of the 25 paired differences "
        f"{d.mean():.2f} over their SD {sd:.2f}). In the metric's units: {O1} scores about {d.mean():.1f} more "
        f"accepted answers per question than {FOURO}."
    ) in first
    assert f"{d.mean():.1f}" == "0.9"


def test_why_names_the_other_metrics_that_carry_the_difference_and_quotes_two_contrasting_items(tmp_path_factory):
    first, values, why = ask(tmp_path_factory, "Why does o1-mini beat phi4 in physics?")
    d, lo, hi, p = paired(values[O1], values[PHI4])
    assert first.startswith(
        f"- **Why:** {O1} against {PHI4} by {METRIC} (count >= 0 answers): mean "
        f"{np.mean(list(values[O1].values())):.2f} against {np.mean(list(values[PHI4].values())):.2f} on the 57 items "
        f"both scored, difference {d.mean():.2f} (95% CI {lo:.2f} to {hi:.2f}, paired permutation test p = {p:.4f})."
    )
    assert "By the run's other item-level metrics, largest difference first" in first
    assert "aidan_mean_coherence_per_item" in first and "aidan_mean_novelty_per_item" in first
    shared = sorted(set(values[O1]) & set(values[PHI4]), key=lambda i: (-(values[O1][i] - values[PHI4][i]), i))
    best, worst = shared[0], shared[-1]
    assert (
        f"Two contrasting items: on {link(best)} ({O1} {values[O1][best]:g}, {PHI4} {values[PHI4][best]:g}) {O1}'s "
        f'score says "{why[O1][best]}"; on {link(worst)} ({O1} {values[O1][worst]:g}, {PHI4} '
        f'{values[PHI4][worst]:g}) {PHI4}\'s score says "{why[PHI4][worst]}".'
    ) in first


def _exact_p(d: list[float]) -> float:
    """The exact two-sided sign-flip permutation p of mean(d)."""
    flips = [abs(np.mean([s * x for s, x in zip(signs, d)])) for signs in itertools.product((1, -1), repeat=len(d))]
    return sum(f >= abs(np.mean(d)) - 1e-12 for f in flips) / len(flips)


def test_a_three_model_run_whose_order_flips_by_discipline_names_the_facet_and_the_holm_adjusted_p(tmp_path):
    from sgieval.agents.reporting import add_statistics
    from sgieval.core import Item, Score
    from sgieval.metric_pool.generic import EXACT
    from sgieval.reports import ReportContext, compose_answer

    # x beats y on the 8 math items, y beats x on the 6 biology items, both get the 4 chemistry items right;
    # z gets 2 math items right.  Overall x 12/18 = 0.67, y 10/18 = 0.56, z 2/18 = 0.11
    rows = [("math", 1, 0, int(i < 2)) for i in range(8)] + [("bio", 0, 1, 0)] * 6 + [("chem", 1, 1, 0)] * 4
    items = [Item(id=f"q{n}", benchmark="b", task="qa", discipline=d, prompt="?") for n, (d, *_v) in enumerate(rows)]
    scores = [
        Score(item_id=f"q{n}", model=m, metric=EXACT.name, value=float(v))
        for n, (_d, *vals) in enumerate(rows)
        for m, v in zip("xyz", vals)
    ]
    request = "Where do the models disagree?"
    ctx = ReportContext(
        tmp_path, {"request": request, "question_kind": "where"}, items, [], scores, [EXACT], EXACT.name, list("xyz")
    )
    first = compose_answer(add_statistics(ctx), [], [], []).markdown().splitlines()[0]
    p = {"bio": _exact_p([-1.0] * 6), "chem": 1.0, "math": _exact_p([1.0] * 8)}  # 2/64, d = 0 everywhere, 2/256
    assert (p["bio"], p["math"]) == (2 / 64, 2 / 256)
    # Holm over the 3 values: math 3 x 0.0078 = 0.0234, then bio max(0.0234, 2 x 0.0312) = 0.0625, chem 1
    holm = {"math": 3 * p["math"], "bio": max(3 * p["math"], 2 * p["bio"]), "chem": 1.0}
    assert first.startswith(
        "- **Where it differs:** Between x and y by exact_match, per facet value (paired permutation test on the "
        "value's items, two-sided; Holm-adjusted for the 3 values tested): the order flips in bio (discipline; y "
        f"1.00 against x 0.00 per item, 6 items, p = {p['bio']:.4f}, Holm-adjusted p = {holm['bio']:.4f}); the gap "
        f"is largest in math (discipline; x 1.00 against y 0.00 per item, 8 items, p = {p['math']:.4f}, "
        f"Holm-adjusted p = {holm['math']:.4f})."
    )
    assert math.isclose(holm["bio"], 0.0625)
    assert "The overall order flips on 6 of the 18 items both scored, where y scores higher than x" in first


@pytest.mark.parametrize(
    ("request_text", "kind", "a", "b"),
    [("Which model is best?", "ranking", "x", "y"), ("Is y better than x?", "yes_no", "y", "x")],
)
def test_every_run_of_two_or_more_models_has_the_disagreement_section_with_holm_adjusted_tests(
    tmp_path, request_text, kind, a, b
):
    from sgieval.agents.reporting import add_statistics
    from sgieval.core import Item, Score
    from sgieval.metric_pool.generic import EXACT
    from sgieval.reports import ReportContext, build_sections

    # the three-model fixture above: x and y are the top two (a ranking compares them; the yes/no names y first)
    rows = [("math", 1, 0, int(i < 2)) for i in range(8)] + [("bio", 0, 1, 0)] * 6 + [("chem", 1, 1, 0)] * 4
    items = [Item(id=f"q{n}", benchmark="b", task="qa", discipline=d, prompt="?") for n, (d, *_v) in enumerate(rows)]
    scores = [
        Score(item_id=f"q{n}", model=m, metric=EXACT.name, value=float(v))
        for n, (_d, *vals) in enumerate(rows)
        for m, v in zip("xyz", vals)
    ]
    hdr = {"request": request_text, "question_kind": kind}
    ctx = add_statistics(ReportContext(tmp_path, hdr, items, [], scores, [EXACT], EXACT.name, list("xyz")))
    (sec,) = [s for s in build_sections(ctx) if s.key == "disagreement"]
    (table,) = sec.tables
    assert table.headers[3:5] == [f"{a} mean", f"{b} mean"]
    p_bio, p_math = 2 / 64, 2 / 256  # exact sign-flip p of 6 and 8 equal differences
    sign = 1 if a == "x" else -1  # the difference is a minus b
    mean = {("x", "bio"): "0.00", ("y", "bio"): "1.00", ("x", "math"): "1.00", ("y", "math"): "0.00"}
    assert table.rows == [
        ["discipline", "bio", "6", mean[a, "bio"], mean[b, "bio"], f"{-sign:.2f}", f"{p_bio:.4f}", "0.0625"],
        ["discipline", "chem", "4", "1.00", "1.00", "0.00", "1.0000", "1.0000"],
        ["discipline", "math", "8", mean[a, "math"], mean[b, "math"], f"{sign:.2f}", f"{p_math:.4f}", "0.0234"],
    ]
    assert math.isclose(max(3 * p_math, 2 * p_bio), 0.0625) and math.isclose(3 * p_math, 0.0234375)
    assert "the order flips in" in sec.blocks[0].text and "Holm-adjusted for the 3 values tested" in sec.blocks[0].text


def test_a_yes_no_question_naming_one_ranked_model_says_what_it_is_compared_with(tmp_path):
    from sgieval.agents.reporting import add_statistics
    from sgieval.core import Item, Score
    from sgieval.metric_pool.generic import EXACT
    from sgieval.reports import ReportContext, compose_answer

    # x right on 3 of 3 items, y on 1 (q0), z on none; "the others": y is the best other model
    items = [Item(id=f"q{n}", benchmark="b", task="qa", discipline="d", prompt="?") for n in range(3)]
    right = {"x": {0, 1, 2}, "y": {0}, "z": set()}
    scores = [
        Score(item_id=f"q{n}", model=m, metric=EXACT.name, value=float(n in r))
        for m, r in right.items()
        for n in range(3)
    ]
    hdr = {"request": "Is x better than the others?", "question_kind": "yes_no"}
    ctx = ReportContext(tmp_path, hdr, items, [], scores, [EXACT], EXACT.name, list("xyz"))
    first = compose_answer(add_statistics(ctx), [], [], []).markdown().splitlines()[0]
    # x - y = (0, 1, 1): mean 0.67; 2 of the 4 sign flips of the 2 nonzero differences reach it: p = 0.5
    assert first.startswith(
        "- **Not established**: the data do not establish whether x is better than y by exact_match"
    )
    assert "a difference of 0.67 (x minus y;" in first and "p = 0.5000 (two-sided)" in first
    assert first.endswith("The request names one ranked model, x: it is compared with y, the best other one.")


@pytest.mark.parametrize("kind", ["ranking", "how_good"])
def test_a_ranking_or_how_good_question_keeps_the_verdict_first(tmp_path, kind):
    from sgieval.agents.reporting import add_statistics
    from sgieval.core import Item, Score
    from sgieval.metric_pool.generic import EXACT
    from sgieval.reports import ReportContext, compose_answer

    items = [Item(id=f"q{n}", benchmark="b", task="qa", discipline="d", prompt="?") for n in range(3)]
    scores = [Score(item_id=i.id, model=m, metric=EXACT.name, value=float(m == "x")) for i in items for m in "xy"]
    ctx = ReportContext(
        tmp_path, {"request": "Which?", "question_kind": kind}, items, [], scores, [EXACT], "exact_match", ["x", "y"]
    )
    assert compose_answer(add_statistics(ctx), [], [], []).markdown().startswith("- **Verdict:** ")


def test_why_on_a_rubric_metric_names_each_criterion_with_its_paired_test(tmp_path):
    import asyncio
    from pathlib import Path

    from sgieval.core import RunConfig
    from sgieval.graphs.evaluate import execute, make_runtime
    from sgieval.tests.graphs.test_rigor_scripted import MODEL_A, MODEL_B, RESPONSES, judge_model, sgi_data

    cfg = RunConfig(
        run_id="why",
        request="Why is the most rigorous model in idea generation ahead?",
        benchmarks=["sgi-bench"],
        data_dir=str(sgi_data(tmp_path)),
        out_dir=str(tmp_path / "runs"),
        yes=True,
        bootstrap_resamples=999,
        models=[f"replay:{RESPONSES / 'fixture-model-a.jsonl'}", f"replay:{RESPONSES / 'fixture-model-b.jsonl'}"],
    )
    state = asyncio.run(execute(make_runtime(cfg, judges=[judge_model()], agent=None)))
    report = Path(state["report"])
    first = report.read_text().split("## Answer\n\n", 1)[1].splitlines()[0]
    crit: dict[str, dict[str, dict[str, float]]] = {}  # model -> criterion -> item -> 0-10
    for line in (report.parent / "scores.jsonl").read_text().splitlines():
        s = json.loads(line)
        if s["metric"] == "rigor" and s["status"] == "ok":
            for name, v in s["details"]["criteria"].items():
                crit.setdefault(s["model"], {}).setdefault(name, {})[s["item_id"]] = v
    a, b = (crit[m] for m in sorted(crit, key=lambda m: m != MODEL_A))
    assert first.startswith(f"- **Why:** {MODEL_A} against {MODEL_B} by rigor (0-100): mean 75.00 against 25.00")
    shown = []
    for name in sorted(a, key=lambda n: (-abs(np.mean(list(a[n].values())) - np.mean(list(b[n].values()))), n)):
        d = [a[name][i] - b[name][i] for i in sorted(a[name])]
        assert len(set(d)) == 1  # the scripted judge: every criterion 5 points apart on both items
        shown.append(
            f"{name} {np.mean(list(a[name].values())):.2f} against {np.mean(list(b[name].values())):.2f} (difference "
            f"{d[0]:.2f}, no CI: the difference is {d[0]:g} on every one of the 2 items, p = {_exact_p(d):.4f}, 2 items)"
        )
    assert (
        f"By the criteria of rigor (0-10), largest difference first ({MODEL_A} against {MODEL_B}; paired permutation "
        "tests, not adjusted): " + "; ".join(shown) + ". Two contrasting items: "
    ) in first
    assert (
        f"{MODEL_A}'s score says \"rigor = 75.0/100" in first and f"{MODEL_B}'s score says \"rigor = 25.0/100" in first
    )


def test_an_agent_summary_may_restate_the_kinds_numbers_and_no_others(tmp_path):
    import asyncio
    import re

    from sgieval.agents.reporting import build_report
    from sgieval.core import Item, Score
    from sgieval.metric_pool.generic import EXACT
    from sgieval.reports import ReportContext
    from sgieval.tests.agents.test_reporting import header
    from sgieval.tests.conftest import scripted

    # x - y per item: 1 on 8 items, -1 on 6, 0 on 4: mean 2/18, SD sqrt((8 (1 - 1/9)^2 + 6 (1 + 1/9)^2 + 4/81) / 17)
    rows = [(1, 0)] * 8 + [(0, 1)] * 6 + [(1, 1)] * 4
    items = [Item(id=f"q{n}", benchmark="b", task="qa", discipline="d", prompt="?") for n in range(len(rows))]
    scores = [
        Score(item_id=f"q{n}", model=m, metric=EXACT.name, value=float(v))
        for n, vals in enumerate(rows)
        for m, v in zip("xy", vals)
    ]
    d = np.array([a - b for a, b in rows], dtype=float)
    dz = f"{d.mean() / d.std(ddof=1):.2f}"

    def answer(sub: str, agent=None) -> str:
        hdr = header(request="How much better is x than y?", question_kind="how_much", models="x, y (target)")
        ctx = ReportContext(tmp_path / sub, hdr, items, [], scores, [EXACT], EXACT.name, ["x", "y"], n_resamples=999)
        (tmp_path / sub).mkdir()
        return asyncio.run(build_report(ctx, agent=agent)).read_text()

    plain = answer("plain")
    assert f"Cohen's d_z = {dz} (mean of the 18 paired differences 0.11 over their SD {d.std(ddof=1):.2f})" in plain
    assert not re.search(rf"\b{re.escape(dz)}\b", plain.split("## Run", 1)[1])  # in the Answer only
    said = f"x leads y with a standardised effect size d_z of {dz}."
    assert f"- **Summary** (agent model narrator): {said}" in answer("said", scripted("narrator", [said]))
    invented = "x leads y with a standardised effect size d_z of 9.75."
    text = answer("invented", scripted("narrator", [invented, invented]))
    assert invented not in text and "cited numbers not in the tables: ['9.75']" in text
