"""Agreement with your labels: how the judges agree with the researcher's labels, and the prediction-powered
estimates per target model, one section per labelled metric (``metric_pool.labels.LabelEstimates``)."""

from __future__ import annotations

from typing import Any

from ...core import RunStore
from ..blocks import Section, Table, Text
from ..context import ReportContext
from . import section

STAT_NAMES = {
    "weighted_kappa": "quadratic-weighted kappa",
    "kappa": "Cohen's kappa",
    "spearman": "Spearman's rho",
    "tpr": "true-positive rate",
    "tnr": "true-negative rate",
    "mean_difference": "mean difference (judge - you)",
}


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def _ci(s: Any) -> str:
    if s.value is None:
        return "undefined"
    if s.low is None:
        return f"{_num(s.value)} (no variation over {s.n} units: no interval)"
    return f"{_num(s.value)} ({_num(s.low)} to {_num(s.high)})"


def _est(e: Any) -> str:
    return "n/a" if e is None else f"{e.mean:.2f} ({e.low:.2f} to {e.high:.2f})"


def _headline(est: Any, who: str) -> str:
    """One sentence on the panel's agreement with the labels on the metric itself (or its first criterion)."""
    own = [a for a in est.agreements if a.judge == "panel" and a.criterion is None] or [
        a for a in est.agreements if a.judge == "panel"
    ]
    if not own:
        return ""
    a = own[0]
    main = next((s for s in a.statistics if s.name != "mean_difference"), None)
    bias = a.get("mean_difference")
    what = f"{est.metric}" + (f" ({a.criterion})" if a.criterion else "")
    parts = []
    if main is not None and main.value is not None:
        parts.append(f"{STAT_NAMES[main.name]} {_ci(main)}")
    if bias is not None and bias.value is not None:
        side = "above" if bias.value > 0 else "below" if bias.value < 0 else "level with"
        amount = f"{abs(bias.value):.1f} points " if bias.value else ""
        parts.append(f"it scores {amount}{side} you on average")
    if not parts:
        return ""
    return f"On {what} {who} agree with your {a.n} labels: " + "; ".join(parts) + "."


def labels_sections(found: list[Any], *, live_judges: bool = True) -> list[Section] | None:
    """One section per labelled metric: agreement per judge and criterion, the judge-only, labels-only and PPI++ means
    per target model, the paired PPI++ differences, and the Answer's sentences.

    Args:
        found: the LabelEstimates.
        live_judges: the run's judges made the scores (else "the scores" are stored or objective).

    Returns:
        The sections, or None when nothing is labelled.
    """
    who = "the judges" if live_judges else "the scores (no judge was called in this run)"
    out = [_label_section(est, who, live_judges) for est in found if est.n_labels]
    return out or None


def _label_section(est: Any, who: str, live_judges: bool) -> Section:
    coverage = (
        "The labelled units are a seeded random sample of the scored units, so the prediction-powered intervals "
        "(PPI++, Angelopoulos, Duchi and Zrnic 2024) keep their 95% coverage."
        if est.covered
        else f"The labelled units were chosen by {est.selection}, not at random: the prediction-powered intervals "
        "below are not covered by PPI's guarantee."
    )
    blocks: list[Any] = [Text(f"{est.n_labels} label(s) of {est.metric}. {coverage}")]
    rows = [
        [
            a.judge if live_judges or a.judge != "panel" else "scores",
            a.criterion or "(metric)",
            a.scale,
            str(a.n),
            STAT_NAMES[s.name],
            _ci(s),
        ]
        for a in est.agreements
        for s in a.statistics
    ]
    if rows:
        headers = ["judge", "criterion", "scale", "labels", "statistic", "value (95% CI)"]
        blocks.append(Table(headers, rows, name=f"agreement_{est.metric}"))
    order = sorted(
        est.models,
        key=lambda m: (
            m.best is None,
            -(m.best.mean if m.best else 0) if est.higher_is_better else (m.best.mean if m.best else 0),
        ),
    )
    mrows = [
        [
            m.model,
            str(m.n_labels),
            str(m.n_scored),
            _est(m.judge),
            _est(m.labels),
            _est(m.ppi),
            m.note or ("PPI++ used" if m.ppi is not None else ""),
        ]
        for m in order
    ]
    if mrows:
        blocks.append(Table(PPI_HEADERS, mrows, name=f"ppi_{est.metric}"))
    for (a, b), d in sorted(est.differences.items()):
        sep = d.low > 0 or d.high < 0
        blocks.append(
            Text(
                f"{a} minus {b} on {est.metric} by your labels ("
                + (
                    f"PPI++ over {d.n_labelled} items labelled for both"
                    if d.method != "labels"
                    else f"every one of the {d.n_labelled} shared items labelled for both: the labels alone"
                )
                + "): "
                f"{_est(d)}; " + ("the interval excludes 0." if sep else "the interval includes 0: not separated.")
            )
        )
    headline = _headline(est, who)
    answer = {"how_sure": [headline]} if headline else {}
    with_ppi = [m for m in order if m.ppi is not None]
    if len(with_ppi) >= 2:
        answer.setdefault("how_sure", []).append(_ppi_sentence(est, with_ppi[0], with_ppi[1]))
    elif not with_ppi:
        answer.setdefault("caveats", []).append(
            f"Fewer than 10 labels per model on {est.metric}: the judge-only figures stand."
        )
    return Section(f"labels_{est.metric}", f"Agreement with your labels: {est.metric}", blocks, answer)


PPI_HEADERS = (
    "target model|labels|scored|judge only (95% CI, normal approx.)|labels only (95% CI, normal approx.)|"
    "PPI++ (95% CI)|note"
).split("|")


def _ppi_sentence(est: Any, top: Any, second: Any) -> str:
    """The Answer's sentence on the top two by the researcher's labels."""
    diff = est.differences.get((top.model, second.model)) or est.differences.get((second.model, top.model))
    if diff is not None and (diff.low > 0 or diff.high < 0):
        verdict = f"{top.model} is ahead of {second.model} by your standard (the paired PPI++ interval excludes 0)"
    elif diff is not None:
        verdict = f"your labels do not separate {top.model} from {second.model} (the paired PPI++ interval includes 0)"
    else:
        verdict = (
            f"fewer than 10 items are labelled for both {top.model} and {second.model}, too few to compare "
            "them directly"
        )
    how = (
        "the labels alone, every unit labelled" if top.ppi.method == "labels" else "prediction-powered PPI++ estimates"
    )
    return (
        f"By your labels ({how} of {est.metric}): {top.model} {_est(top.ppi)}, "
        f"{second.model} {_est(second.ppi)}; {verdict}."
    )


@section("labels", title="Agreement with your labels", after="reliability")
def labels_builder(ctx: ReportContext) -> list[Section] | None:
    """Agreement with the researcher's labels and the prediction-powered means, for each metric with labels."""
    if not (ctx.run_dir / "labels.jsonl").is_file() or ctx.pool is None:
        return None
    labels = RunStore(ctx.run_dir, read_only=True).read("labels")
    if not labels:
        return None
    labelled = {lab.metric for lab in labels}
    found = [ctx.pool.label_estimates(ctx.scores, labels, sp) for sp in ctx.specs if sp.name in labelled]
    return labels_sections(found, live_judges=bool(ctx.judges))
