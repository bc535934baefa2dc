"""Human labels (``labels.jsonl``) against the judges: which units to label, validation, judge-label agreement and
PPI++ means and paired differences (PPI's guarantee needs a uniform random sample of the labelled units)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Iterable, Literal, Sequence

from ..core import InputError, Label, MetricSpec, Rubric, Score
from .agreement import Agreement, agreement
from .ppi import PPIEstimate, classical_mean, ppi_mean
from .reliability import judge_values

MIN_LABELS = 10  # fewer labels for a model: its judge-only figure stands

Selection = Literal["random", "disagreement"]


def latest_labels(labels: Iterable[Label]) -> list[Label]:
    """One label per (item, model, metric, criterion, labeller): the last one given.

    Args:
        labels: labels in file (time) order.

    Returns:
        The labels that count, each at the place of its last appearance.
    """
    out: dict[tuple, Label] = {}
    for lab in labels:
        out.pop(lab.key, None)
        out[lab.key] = lab
    return list(out.values())


def _label_problem(
    lab: Label, by_name: dict[str, MetricSpec], ids: set[str], names: set[str]
) -> tuple[str, str, str] | None:
    """(field, what is wrong, the fix) of one label, or None when it can be matched and is in range."""
    if lab.item_id not in ids:
        return (
            "item_id",
            f"unknown item {lab.item_id!r}",
            "use an item id of the run (`sgieval labels export` lists them)",
        )
    if lab.model not in names:
        return "model", f"unknown target model {lab.model!r}", f"use one of {', '.join(sorted(names))}"
    spec = by_name.get(lab.metric)
    if spec is None:
        return "metric", f"unknown metric {lab.metric!r}", f"use one of {', '.join(sorted(by_name))}"
    low, high = spec.range
    if lab.criterion is not None:
        crits = [c.name for c in spec.criteria] if isinstance(spec, Rubric) else []
        if lab.criterion not in crits:
            return (
                "criterion",
                f"metric {lab.metric} has no criterion {lab.criterion!r}",
                f"use one of {', '.join(crits)}" if crits else "leave criterion empty: this metric has none",
            )
        low, high = 0.0, 10.0
    if not low <= lab.value <= high:
        what = f"criterion {lab.criterion}" if lab.criterion else f"metric {lab.metric}"
        return (
            "value",
            f"value {lab.value:g} is outside the range of {what} ({low:g} to {high:g})",
            f"give a value from {low:g} to {high:g}",
        )
    return None


def validate_labels(
    labels: Sequence[Label],
    *,
    specs: Sequence[MetricSpec],
    item_ids: Iterable[str],
    models: Iterable[str],
    source: str,
    positions: Sequence[str] | None = None,
) -> None:
    """Refuse labels that cannot be matched or lie outside the declared range.

    Args:
        labels: the labels to check.
        specs: the run's metric specs (rubric criteria are scored 0-10).
        item_ids: the run's item ids.
        models: the run's target model names.
        source: the file the labels come from (named in the error).
        positions: where each label stands in ``source`` (default ``"label <n>"``).

    Raises:
        InputError: naming the first offending label, its field and the fix, then up to 5 more.
    """
    by_name = {s.name: s for s in specs}
    ids, names = set(item_ids), set(models)
    problems = (_label_problem(lab, by_name, ids, names) for lab in labels)
    found = [(positions[n] if positions else f"label {n + 1}", *p) for n, p in enumerate(problems) if p is not None]
    if not found:
        return
    where, field, why, fix = found[0]
    more = "; ".join(f"{w} field {f}: {y}" for w, f, y, _ in found[1:6])
    if len(found) > 6:
        more += f"; and {len(found) - 6} more"
    raise InputError(
        why + (f" (also {more})" if more else ""),
        what=f"{source} {where} field {field}",
        fix=fix + (f"; none of the {len(labels)} labels was saved" if len(labels) > 1 else ""),
    )


def _judged(score: Score, criterion: str | None) -> tuple[float | None, dict[str, float]]:
    """(panel value, {judge: value}) of one score for the metric (criterion None) or one rubric criterion."""
    if not score.ok or score.value is None:
        return None, {}
    if criterion is None:
        per = judge_values(score)
        return float(score.value), per or ({score.judge: float(score.value)} if score.judge != "objective" else {})
    details = score.details or {}
    panel = (details.get("criteria") or {}).get(criterion)
    per = {
        str(j): float(v[criterion])
        for j, v in (details.get("per_judge") or {}).items()
        if isinstance(v, dict) and isinstance(v.get(criterion), (int, float))
    }
    return (float(panel) if isinstance(panel, (int, float)) else None), per


def sample_units(
    scores: Sequence[Score],
    *,
    metric: str,
    n: int,
    seed: int = 0,
    selection: Selection = "random",
    done: Iterable[tuple[str, str]] = (),
) -> list[tuple[str, str]]:
    """The (item_id, model) units to label for ``metric``, in labelling order.

    Args:
        scores: the run's scores.
        metric: the metric to label.
        n: labels wanted per target model (>= 1).
        seed: the seed of the random draw.
        selection: ``random`` (the same random items for each model, as PPI needs) or ``disagreement`` (widest judge
            spread first: not covered by PPI's guarantee).
        done: units already labelled; left out but counted toward ``n``.

    Returns:
        Up to ``n`` units per model not in ``done``, item-major.

    Raises:
        ValueError: ``n`` < 1 or an unknown ``selection``.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    valid = [s for s in scores if s.metric == metric and s.ok and s.value is not None and s.item_id != "*"]
    models = sorted({s.model for s in valid})
    by_item: dict[str, set[str]] = {}
    for s in valid:
        by_item.setdefault(s.item_id, set()).add(s.model)
    if selection == "random":
        shared = sorted(i for i, ms in by_item.items() if len(ms) == len(models))
        rest = sorted(by_item.keys() - set(shared))
        rng = random.Random(seed)
        rng.shuffle(shared)
        rng.shuffle(rest)
        order = shared + rest
    elif selection == "disagreement":
        spread: dict[str, float] = {}
        for s in valid:
            vals = list(judge_values(s).values())
            if len(vals) >= 2:
                spread[s.item_id] = max(spread.get(s.item_id, 0.0), max(vals) - min(vals))
        order = sorted(by_item, key=lambda i: (-spread.get(i, 0.0), i))
    else:
        raise ValueError(f"unknown selection {selection!r} (random or disagreement)")
    taken: dict[str, int] = {m: 0 for m in models}
    out: list[tuple[str, str]] = []
    skip = set(done)
    for item in order:
        for m in models:
            if m in by_item[item] and taken[m] < n:
                taken[m] += 1
                if (item, m) not in skip:
                    out.append((item, m))
    return out


@dataclass(frozen=True)
class ModelEstimate:
    """The mean of one target model on one labelled metric three ways (judge only, labels only, PPI++); ``note`` says
    why the PPI estimate is absent or not covered by the guarantee."""

    model: str
    n_labels: int
    n_scored: int
    judge: PPIEstimate | None
    labels: PPIEstimate | None
    ppi: PPIEstimate | None
    note: str = ""

    @property
    def best(self) -> PPIEstimate | None:
        """The estimate the ranking uses: PPI++ when it exists, else the judge-only mean."""
        return self.ppi or self.judge


@dataclass(frozen=True)
class AgreementResult:
    """How the judges (and the panel) agree with ``n_labels`` labels on one metric, per criterion."""

    metric: str
    agreements: list[Agreement]
    n_labels: int

    def to_pandas(self) -> Any:
        """One row per (judge, criterion, statistic): judge, criterion, scale, n, statistic, value, low, high."""
        import pandas as pd

        head = ("judge", "criterion", "scale", "n")
        rows = [
            {**{c: getattr(a, c) for c in head}, "statistic": s.name, "value": s.value, "low": s.low, "high": s.high}
            for a in self.agreements
            for s in a.statistics
        ]
        return pd.DataFrame(rows)


@dataclass
class LabelEstimates:
    """Agreement and prediction-powered estimates of one metric; ``differences`` {(a, b): the PPI++ mean of a - b, for
    pairs with at least :data:`MIN_LABELS` items labelled for both}."""

    metric: str
    higher_is_better: bool
    agreements: list[Agreement] = field(default_factory=list)
    models: list[ModelEstimate] = field(default_factory=list)
    differences: dict[tuple[str, str], PPIEstimate] = field(default_factory=dict)
    selection: str = "random"
    n_labels: int = 0

    @property
    def covered(self) -> bool:
        """Whether PPI's guarantee covers the estimates (the labelled units are a random sample)."""
        return self.selection == "random"

    def to_pandas(self) -> Any:
        """One row per target model: model, n_labels, n_scored, judge/labels/ppi mean, low, high, note."""
        import pandas as pd

        rows = [
            {"model": m.model, "n_labels": m.n_labels, "n_scored": m.n_scored}
            | {
                f"{k}_{f}": getattr(getattr(m, k), f) if getattr(m, k) else None
                for k in ("judge", "labels", "ppi")
                for f in ("mean", "low", "high")
            }
            | {"note": m.note}
            for m in self.models
        ]
        return pd.DataFrame(rows)

    def agreement(self) -> AgreementResult:
        """The agreement statistics alone."""
        return AgreementResult(self.metric, list(self.agreements), self.n_labels)


def _agreements(
    out: LabelEstimates, grouped: dict, by_unit: dict[tuple[str, str], Score], spec: MetricSpec, seed: int
) -> None:
    """Append the agreement of every judge (and the panel) with the labels, per criterion (None: the metric)."""
    for criterion, units in grouped.items():
        low, high = (0.0, 10.0) if criterion is not None else tuple(spec.range)
        pairs: dict[str, tuple[list[float], list[float]]] = {}
        for unit, vals in [(u, v) for u, v in units.items() if u in by_unit]:  # labelled units with a score
            panel, per = _judged(by_unit[unit], criterion)
            human = sum(vals) / len(vals)
            named = ([("panel", panel)] if panel is not None else []) + (list(per.items()) if len(per) > 1 else [])
            for name, v in named:
                js, hs = pairs.setdefault(name, ([], []))
                js.append(v)
                hs.append(human)
        rng = (float(low), float(high))
        for judge, (j, h) in sorted(pairs.items(), key=lambda kv: (kv[0] != "panel", kv[0])):
            out.agreements.append(
                agreement(j, h, value_range=rng, judge=judge, metric=spec.name, criterion=criterion, seed=seed)
            )


def _model_estimate(model: str, scored: dict[str, float], given: dict[str, float], selection: str, alpha: float):
    """The :class:`ModelEstimate` of a model or a paired difference from its valid scores and {item: mean label}."""
    labelled = {i: v for i, v in given.items() if i in scored}
    y = [labelled[i] for i in sorted(labelled)]
    yhat = [scored[i] for i in sorted(labelled)]
    unl = [v for i, v in scored.items() if i not in labelled]
    judge_only = classical_mean(list(scored.values()), alpha=alpha, method="judge") if len(scored) >= 2 else None
    labels_only = classical_mean(y, alpha=alpha) if len(y) >= 2 else None
    est, note = None, ""
    if len(y) < MIN_LABELS:
        note = (
            f"{len(y)} label(s), fewer than {MIN_LABELS}: the judge-only figure stands (a prediction-powered "
            "interval on so few labels is unreliable)"
        )
    elif not unl:
        note = "every scored unit is labelled: the labels-only mean is the estimate"
        est = labels_only
    else:
        est = ppi_mean(y, yhat, unl, alpha=alpha)
        if selection != "random":
            note = f"labelled units chosen by {selection}, not at random: PPI's coverage guarantee does not hold"
    return ModelEstimate(model, len(y), len(scored), judge_only, labels_only, est, note)


def label_estimates(
    scores: Sequence[Score],
    labels: Sequence[Label],
    spec: MetricSpec,
    *,
    selection: str | None = None,
    alpha: float = 0.05,
    seed: int = 0,
) -> LabelEstimates:
    """Agreement with the labels and prediction-powered means of one metric.

    Args:
        scores: the run's scores (those of ``spec`` are used).
        labels: the run's labels (the latest per unit and labeller; several labellers are averaged).
        spec: the metric.
        selection: how the labelled units were chosen; None: from the labels' ``sample`` field.
        alpha: error level of every interval.
        seed: seed of the bootstrap intervals of the agreement statistics.

    Returns:
        A :class:`LabelEstimates`.
    """
    mine = [s for s in scores if s.metric == spec.name and s.item_id != "*"]
    labs = [lab for lab in latest_labels(labels) if lab.metric == spec.name]
    if selection is None:
        selection = next((lab.sample for lab in labs if lab.sample not in ("", "random")), "random")
    out = LabelEstimates(spec.name, spec.higher_is_better, selection=selection, n_labels=len(labs))
    grouped: dict[str | None, dict[tuple[str, str], list[float]]] = {}  # criterion -> {unit: labels}
    for lab in labs:
        grouped.setdefault(lab.criterion, {}).setdefault((lab.item_id, lab.model), []).append(float(lab.value))
    _agreements(out, grouped, {(s.item_id, s.model): s for s in mine}, spec, seed)
    models = sorted({s.model for s in mine})
    scored_by: dict[str, dict[str, float]] = {m: {} for m in models}  # model -> {item: valid score}
    for s in mine:
        if s.ok and s.value is not None:
            scored_by[s.model][s.item_id] = float(s.value)
    metric_labels = grouped.get(None, {}).items()
    labels_by = {m: {i: sum(g) / len(g) for (i, lm), g in metric_labels if lm == m} for m in models}  # {item: mean}
    out.models = [_model_estimate(m, scored_by[m], labels_by[m], selection, alpha) for m in models]
    for a, b in combinations(models, 2):  # the estimate of the per-item difference a - b
        sa, sb, la, lb = scored_by[a], scored_by[b], labels_by[a], labels_by[b]
        scored = {i: sa[i] - sb[i] for i in sorted(sa.keys() & sb.keys())}
        diff = _model_estimate(a, scored, {i: la[i] - lb[i] for i in la if i in lb}, selection, alpha).ppi
        if diff is not None:
            out.differences[(a, b)] = diff
    return out
