"""The Answer's caveats: coverage, shared ranks below first place, unscored models, the stand-in metric, a mean
dominated by one item, sensitivity to censored or missing stored records, who judged and self-preference."""

from __future__ import annotations

from ...core import MetricSpec, Score
from ..failures import flag_rows, flagged_items
from ..format import count_phrase, fmt, fmt2
from ..judges import judgement_sources, self_preference
from ..ranking import (
    Coverage,
    ModelStat,
    by_metric,
    groups_by_mean,
    model_means,
    order_with_ties,
    printed_tie_groups,
    rank_labels,
)
from .where import dominant_item

__all__ = ["fact_caveats", "ranking_caveats", "sensitivity_sentence"]


def _coverage_sentence(cov: Coverage, spec: MetricSpec) -> str | None:
    """One Answer sentence with the numbers when the order on the shared items, on each model's own items and
    with failures counted as wrong are not all the same; None when they agree."""
    hib = spec.higher_is_better
    readings = []
    if cov.shared_means:
        readings.append(("shared", groups_by_mean(cov.shared_means, hib)))
    readings.append(("own", groups_by_mean({m: v for m, (_, v) in cov.own.items()}, hib)))
    if cov.wrong:
        readings.append(("wrong", groups_by_mean({m: v for m, (_, v) in cov.wrong.items()}, hib)))
    if len({order_with_ties(g) for _, g in readings}) < 2:
        return None
    parts = []
    for what, g in readings:
        if what == "shared":
            vals = ", ".join(f"{m} {fmt2(cov.shared_means[m])}" for grp in g for m in grp)
            who = "both" if len(cov.own) == 2 else "all of them"
            parts.append(f"on the {count_phrase(len(cov.shared))} {who} scored, {order_with_ties(g, hib)} ({vals})")
        elif what == "own":
            vals = ", ".join(f"{m} {fmt2(cov.own[m][1])} on {cov.own[m][0]}" for grp in g for m in grp)
            parts.append(f"on each model's own scored items, {order_with_ties(g, hib)} ({vals})")
        else:
            n = next(iter(cov.wrong.values()))[0]
            vals = ", ".join(f"{m} {fmt2(cov.wrong[m][1])}" for grp in g for m in grp)
            parts.append(
                f"counting a failed or missing score as {fmt(cov.worst)} over the {count_phrase(n)} attempted, "
                f"{order_with_ties(g, hib)} ({vals})"
            )
    return f"The order by {spec.name} depends on coverage: " + "; ".join(parts) + "."


def ranking_caveats(
    stats: list[ModelStat], groups: list[list[ModelStat]], spec: MetricSpec, cov: Coverage | None
) -> list[str]:
    """The caveats about the ranking itself: coverage, ties below first place, unscored models."""
    out: list[str] = []
    if cov is not None and cov.differs:
        counts = ", ".join(f"{m} {n}" for m, (n, _) in cov.own.items())
        who = "both" if len(cov.own) == 2 else "all of them"
        sentence = _coverage_sentence(cov, spec)
        if not cov.shared:
            out.append(
                f"Coverage differs (scored items: {counts}) and no item is scored by every model, so the means "
                "are over each model's own items and not compared item by item."
            )
        else:
            same = "; the order is the same on each model's own items and with failures counted as wrong."
            out.append(
                f"Coverage differs (scored items: {counts}): the ranking compares the "
                f"{count_phrase(len(cov.shared))} {who} scored" + (f". {sentence}" if sentence else same)
            )
    labels = rank_labels(groups)
    for g in groups[1:]:
        if len(g) > 1:
            out.append(
                f"{' and '.join(s.model for s in g)} share rank {labels[g[0].model]} (mean {fmt2(g[0].stats.mean)} "
                "each at the precision shown, not separated by the paired test); the table lists them in name "
                "order, which is not a result."
            )
    for s in stats:
        if s.summary is None:
            out.append(
                f"{s.model} is unscored on {spec.name} ({s.reason or 'no valid score'}), so it is not placed "
                "above or below any model."
            )
    return out


def sensitivity_sentence(scores: list[Score], spec: MetricSpec, order: list[str]) -> str | None:
    """Whether leaving out the items with a censored or missing stored list of a ranked model changes the order.

    Args:
        scores: the run's scores.
        spec: the ranking metric.
        order: the ranked models, best first.

    Returns:
        The sentence, or None when no ranked model has a flagged score.
    """
    bad = flagged_items(scores, spec.name, order)
    if not bad:
        return None
    rows = [r for r in flag_rows((s for s in scores if s.metric == spec.name), order)]
    n_c = sum(1 for r in rows if r["flag"] == "censored")
    n_m = len(rows) - n_c
    parts = ([f"{n_c} censored (stopped by an error, so the count is a lower bound)"] if n_c else []) + (
        [f"{n_m} missing (an empty stored list)"] if n_m else []
    )
    kept = model_means(scores, spec.name, order, leave_out=bad)
    new = printed_tie_groups(kept, spec.higher_is_better)
    full = printed_tie_groups(model_means(scores, spec.name, [m for m in order if m in kept]), spec.higher_is_better)
    head = (
        f"Sensitivity: {' and '.join(parts)} stored {'list is' if len(rows) == 1 else 'lists are'} counted as "
        f"published (see Failures); leaving out the {len(bad)} item{'' if len(bad) == 1 else 's'} concerned"
    )
    if new == full:
        return f"{head}, the order by {spec.name} does not change."
    return f"{head}, the order by {spec.name} changes to {order_with_ties(new, spec.higher_is_better)}."


def fact_caveats(
    scores: list[Score],
    spec: MetricSpec,
    names: list[str],
    leaders: list[str],
    *,
    judges: list[str],
    allow_self_judge: bool,
    stand_in: str = "",
    focus: str | None = None,
) -> list[str]:
    """The caveats computed from the scores: the stand-in metric and why, a mean dominated by one item, the
    sensitivity of the order to censored or missing stored records, who judged (stored or live), self-preference.

    Args:
        scores: the run's scores.
        spec: the ranking metric.
        names: the ranked models, best first.
        leaders: the models sharing first place.
        judges: the run's judges.
        allow_self_judge: whether ``--allow-self-judge`` was set.
        stand_in: why the ranking metric stands in for the asked quality ("" when it measures it).
        focus: the one model the request asks about.

    Returns:
        The sentences.
    """
    grouped = by_metric(scores)
    out: list[str] = []
    if stand_in:
        out.append(f"No metric here measures the asked quality directly: {stand_in}.")
    for m in leaders if not focus else [focus]:
        dominant = dominant_item(grouped.get(spec.name, []), spec.name, m)
        if dominant:
            out.append(
                f"One item dominates {m}'s mean on {spec.name}: {dominant['item']} holds "
                f"{fmt(dominant['value'])} of its total {fmt(dominant['total'])} ({dominant['share']:.0%}); its "
                f"median is {fmt2(dominant['median'])} per item against a mean of {fmt2(dominant['mean'])}."
            )
    if names:
        sens = sensitivity_sentence(grouped.get(spec.name, []), spec, names)
        if sens:
            out.append(sens)
    sources = judgement_sources(scores, names)
    who = [
        f"acceptance rests on stored judgements of the original run: coherence by {src.get('coherence')} "
        f"and novelty by {src.get('novelty')} embeddings"
        if src.get("origin") == "stored"
        else f"acceptance was decided in this run: coherence by {src.get('coherence')} and novelty by "
        f"{src.get('novelty')} embeddings"
        for src in sources
    ]
    if judges:
        who.append(f"judge and rubric metrics were scored by {', '.join(judges)}")
    elif sources:
        who.append("no judge was called in this run")
    if who:
        out.append("Who judged: " + "; ".join(who) + ".")
    return out + [f"Self-preference: {x}." for x in self_preference(names, sources, judges, allow_self_judge)]
