"""Judge-label agreement and prediction-powered means, against hand computations and the method authors' ppi_py."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sgieval.core import InputError, Label, Rubric, Score
from sgieval.core import Criterion
from sgieval.metric_pool.agreement import agreement, _scale_of
from sgieval.metric_pool.labels import MIN_LABELS, label_estimates, latest_labels, sample_units, validate_labels
from sgieval.metric_pool.ppi import classical_mean, _power_tuning, ppi_mean


@pytest.mark.slow
def test_quadratic_weighted_kappa_by_hand_on_six_likert_labels():
    # human -2 -1 0 1 2 2, judge -2 0 0 1 1 2: sum of squared disagreements 2; expected under independence
    # sum_ij h_i j_j (i-j)^2 / n = 136 / 6, so kappa_w = 1 - 2 / (136/6) = 31/34
    a = agreement([-2, 0, 0, 1, 1, 2], [-2, -1, 0, 1, 2, 2], value_range=(-2, 2), judge="j", metric="feasibility")
    assert a.scale == "ordinal" and a.n == 6
    assert a.get("weighted_kappa").value == pytest.approx(31 / 34)
    assert a.get("mean_difference").value == pytest.approx(0.0)  # (0 + 1 + 0 + 0 - 1 + 0) / 6
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(1)
    for _ in range(20):  # the numpy kappa is sklearn's, on random ordinal and binary labels
        h, j = rng.integers(0, 11, 15), rng.integers(0, 11, 15)
        got = agreement(j, h, value_range=(0, 10), judge="j", metric="m").get("weighted_kappa").value
        assert got == pytest.approx(cohen_kappa_score(h, j, labels=list(range(11)), weights="quadratic"))
        hb, jb = rng.integers(0, 2, 15), rng.integers(0, 2, 15)
        got = agreement(jb, hb, value_range=(0, 1), judge="j", metric="m").get("kappa").value
        assert got == pytest.approx(cohen_kappa_score(hb, jb, labels=[0, 1]))


def test_spearman_and_bias_by_hand_on_six_continuous_labels():
    # ranks of the judge 2 1 3 4 6 5 against 1..6: sum d^2 = 4, rho = 1 - 6*4/(6*35) = 31/35; bias (5-10+5+5+20+5)/6
    a = agreement([15, 10, 35, 45, 70, 65], [10, 20, 30, 40, 50, 60], value_range=(0, 100), judge="j", metric="rigor")
    assert a.scale == "continuous"
    assert a.get("spearman").value == pytest.approx(31 / 35)
    md = a.get("mean_difference")
    assert md.value == pytest.approx(5.0)
    assert md.low < 5.0 < md.high


def test_tpr_tnr_and_kappa_by_hand_on_six_binary_labels():
    # labels 1 1 1 0 0 0, judge 1 1 0 0 0 1: TPR 2/3, TNR 2/3; po 4/6, pe .5 -> kappa (4/6 - .5)/.5 = 1/3
    a = agreement([1, 1, 0, 0, 0, 1], [1, 1, 1, 0, 0, 0], value_range=(0, 1), judge="j", metric="exact_match")
    assert a.scale == "binary"
    assert (a.get("tpr").value, a.get("tpr").n) == (pytest.approx(2 / 3), 3)
    assert (a.get("tnr").value, a.get("tnr").n) == (pytest.approx(2 / 3), 3)
    assert a.get("kappa").value == pytest.approx(1 / 3)


def test_no_interval_without_variation_and_undefined_kappa_is_none():
    same = agreement([7, 7, 7, 7], [7, 7, 7, 7], value_range=(0, 10), judge="j", metric="m")
    assert same.get("weighted_kappa").value is None  # one category on both sides: undefined, never 0 or 1
    md = same.get("mean_difference")
    assert md.value == 0.0 and md.low is None and md.high is None
    assert _scale_of(0, 10, [3.5, 7]) == "continuous"


Y = [1, 0, 1, 1, 0, 1]
YHAT = [0.9, 0.2, 0.8, 0.6, 0.1, 0.7]
YU = [0.5, 0.9, 0.3, 0.8]


def test_classic_ppi_mean_and_interval_by_hand():
    # mean(YU) 0.625 + mean(Y - YHAT) 0.7/6; se^2 = var0(YU)/4 + var0(Y - YHAT)/6 = 0.056875/4 + 0.0447222/6
    e = ppi_mean(Y, YHAT, YU, lam=1)
    assert e.mean == pytest.approx(0.625 + 0.7 / 6)
    se = np.sqrt(0.056875 / 4 + 0.26833333 / 6 / 6)
    assert (e.low, e.high) == (
        pytest.approx(e.mean - 1.959964 * se, abs=1e-6),
        pytest.approx(e.mean + 1.959964 * se, abs=1e-6),
    )
    assert (e.n_labelled, e.n_unlabelled, e.method) == (6, 4, "ppi")


def test_ppi_plus_plus_equals_the_method_authors_package():
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(3)
    y = rng.normal(5, 2, 40)
    yhat = y + rng.normal(0.8, 1.0, 40)
    yu = rng.normal(5.8, 2.2, 400)
    for lam in (None, 1.0, 0.3):
        ours = ppi_mean(y, yhat, yu, lam=lam)
        low, high = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.05, lam=lam)
        point = ppi_py.ppi_mean_pointestimate(y, yhat, yu, lam=lam)
        assert ours.mean == pytest.approx(float(np.squeeze(point)), rel=1e-9)
        assert (ours.low, ours.high) == (
            pytest.approx(float(low[0]), rel=1e-9),
            pytest.approx(float(high[0]), rel=1e-9),
        )
    small = ppi_mean(Y, YHAT, YU)
    low, high = ppi_py.ppi_mean_ci(np.array(Y, float), np.array(YHAT), np.array(YU), alpha=0.05)
    assert (small.low, small.high) == (pytest.approx(float(low[0])), pytest.approx(float(high[0])))
    c = classical_mean(Y)
    clow, chigh = ppi_py.classical_mean_ci(np.array(Y, float), alpha=0.05)
    assert (c.low, c.high) == (pytest.approx(float(clow)), pytest.approx(float(chigh)))


def test_power_tuning_is_zero_for_a_useless_judge_and_clipped_at_one():
    assert _power_tuning([1, 2, 3, 4], [5, 5, 5, 5], [5, 5]) == 0.0
    assert _power_tuning([1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4] * 100) == pytest.approx(1.0, abs=0.02)
    with pytest.raises(ValueError, match="at least 2 labelled"):
        ppi_mean([1], [1], [1])


RIGOR = Rubric(
    name="rigor",
    tasks=["*"],
    description="rigor",
    criteria=[Criterion(name="evidence", description="e"), Criterion(name="logic", description="l")],
)


def score(item: str, model: str, value: float, per_judge=None, criteria=None) -> Score:
    return Score(
        item_id=item,
        model=model,
        metric="rigor",
        value=value,
        judge="judge-a",
        details={"per_judge": per_judge or {}, "criteria": criteria or {}},
    )


def test_labels_are_validated_against_the_declared_ranges():
    ok = Label(item_id="q1", model="m1", metric="rigor", criterion="logic", value=7)
    validate_labels([ok], specs=[RIGOR], item_ids=["q1"], models=["m1"], source="labels.csv")
    bad = [
        (
            Label(item_id="q1", model="m1", metric="rigor", criterion="logic", value=11),
            "outside the range of criterion logic (0 to 10)",
        ),
        (Label(item_id="q1", model="m1", metric="rigor", value=101), "outside the range of metric rigor (0 to 100)"),
        (Label(item_id="q9", model="m1", metric="rigor", value=50), "unknown item 'q9'"),
        (Label(item_id="q1", model="gpt-x", metric="rigor", value=50), "unknown target model 'gpt-x'"),
        (Label(item_id="q1", model="m1", metric="rigor", criterion="style", value=5), "has no criterion 'style'"),
    ]
    for lab, msg in bad:
        with pytest.raises(InputError, match=re.escape(msg)) as e:
            validate_labels([ok, lab], specs=[RIGOR], item_ids=["q1"], models=["m1"], source="labels.csv")
        assert "labels.csv label 2" in e.value.one_line()
    with pytest.raises(ValueError, match="finite number"):
        Label(item_id="q1", model="m1", metric="rigor", value=True)


def test_the_latest_label_of_a_unit_counts():
    first = Label(item_id="q1", model="m1", metric="rigor", value=40, labeller="ana")
    second = Label(item_id="q1", model="m1", metric="rigor", value=60, labeller="ana")
    other = Label(item_id="q1", model="m1", metric="rigor", value=80, labeller="ben")
    assert [x.value for x in latest_labels([first, other, second])] == [80, 60]


def test_random_sample_is_the_same_items_for_every_model_and_continues_where_it_stopped():
    scores = [score(f"q{i}", m, 50.0) for i in range(20) for m in ("m1", "m2")]
    scores.append(score("q20", "m1", 50.0))  # only m1 has q20: never in the shared sample
    units = sample_units(scores, metric="rigor", n=5, seed=7)
    assert len(units) == 10
    items_m1 = [i for i, m in units if m == "m1"]
    assert items_m1 == [i for i, m in units if m == "m2"] and "q20" not in items_m1
    assert units == sample_units(scores, metric="rigor", n=5, seed=7)
    rest = sample_units(scores, metric="rigor", n=5, seed=7, done=units[:4])
    assert rest == units[4:]


def test_label_estimates_pair_labels_with_scores_per_model_and_criterion():
    scores, labels = [], []
    rng = np.random.default_rng(0)
    for i in range(40):
        for m, shift in (("m1", 10.0), ("m2", -10.0)):
            truth = float(rng.uniform(20, 80))
            judged = min(100.0, max(0.0, truth + shift))
            per = {"judge-a": {"evidence": 6, "logic": 7}, "judge-b": {"evidence": 4, "logic": 5}}
            scores.append(score(f"q{i}", m, judged, per_judge=per, criteria={"evidence": 5.0, "logic": 6.0}))
            if i < 12:
                labels.append(Label(item_id=f"q{i}", model=m, metric="rigor", value=round(truth, 1)))
                labels.append(Label(item_id=f"q{i}", model=m, metric="rigor", criterion="logic", value=6))
    est = label_estimates(scores, labels, RIGOR)
    by = {m.model: m for m in est.models}
    assert by["m1"].n_labels == 12 and by["m1"].n_scored == 40
    # the judge is 10 points high on m1 and 10 low on m2: PPI moves each mean back toward the labels
    assert by["m1"].ppi.mean < by["m1"].judge.mean - 5
    assert by["m2"].ppi.mean > by["m2"].judge.mean + 5
    panel = next(a for a in est.agreements if a.judge == "panel" and a.criterion is None)
    assert panel.n == 24 and panel.get("mean_difference").value == pytest.approx(0.0, abs=1.0)
    logic = {a.judge: a for a in est.agreements if a.criterion == "logic"}
    assert set(logic) == {"panel", "judge-a", "judge-b"}
    assert logic["judge-a"].get("mean_difference").value == pytest.approx(1.0)  # 7 against the label 6
    assert logic["judge-b"].get("mean_difference").value == pytest.approx(-1.0)
    assert ("m1", "m2") in est.differences
    df = est.to_pandas()
    assert list(df["model"]) == ["m1", "m2"] and df.loc[0, "n_labels"] == 12


def test_with_fewer_than_ten_labels_the_judge_figure_stands():
    scores = [score(f"q{i}", "m1", 50.0 + i) for i in range(30)]
    labels = [Label(item_id=f"q{i}", model="m1", metric="rigor", value=40.0 + i) for i in range(MIN_LABELS - 1)]
    (m,) = label_estimates(scores, labels, RIGOR).models
    assert m.ppi is None and m.best is m.judge and "fewer than 10" in m.note
