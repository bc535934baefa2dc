"""Choosing the ranking metric (``--metric``, else one the request names, else the customisation agent's), and saying
when a variant of it (``MetricSpec.variant_of``) disagrees with it (:func:`variant_disagreements`)."""

from __future__ import annotations

import re
from typing import Any

from ..benchmarks import predefined_metrics
from ..core import InputError, Item, MetricSpec, Score
from ..metric_pool import list_rubrics
from ..reports import item_values
from .customisation import MetricPlan, planned_metrics, registered_offers
from .vocabulary import REQUEST_WORDS, max_edits

_STOP = REQUEST_WORDS | {"by", "metric", "metrics", "rubric", "rubrics", "using", "use", "rank", "ranked"}


def _words(text: str) -> list[str]:
    return [w.casefold() for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", text or "")]


def _stem(w: str) -> str:
    """The singular of a plural word ("matches" -> "match", "answers" -> "answer")."""
    if len(w) > 4 and w.endswith("es") and w[:-2].endswith(("ch", "sh", "x", "ss")):
        return w[:-2]
    return w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w


def named_metric(request: str, names: list[str], descriptions: dict[str, str]) -> tuple[str, str] | None:
    """The metric or rubric ``request`` names, with the words that name it, or None.

    Args:
        request: the plain-language request.
        names: the metric and rubric names the run could rank by.
        descriptions: name -> its description (``MetricSpec.description``, ``Rubric.description``).

    Returns:
        (name, the request's words naming it): the multi-word name with the most words written out or all among
        the request's words ("normalised exact match" names exact_match_normalised), a written-out one first;
        else the first name whose description holds two consecutive content words of the request.
    """
    text = request or ""
    said = {_stem(w) for w in _words(text)}
    found: list[tuple[int, int, str, str]] = []  # (name words matched, written out, name, the words)
    for n in names:
        m = re.search(rf"(?<![\w-]){re.escape(n).replace('_', '[_ ]')}(?![\w-])", text, re.I)
        parts = [_stem(w) for w in n.casefold().split("_") if len(w) >= 3]
        if len(n.split("_")) < 2:  # a one-word name ("feasibility", "rigor") is the quality it measures
            continue
        if m:
            found.append((len(parts), 1, n, m.group(0)))
        elif len(parts) >= 2 and all(p in said for p in parts):
            found.append((len(parts), 0, n, n.replace("_", " ")))
    if found:
        _, _, name, words = max(found)
        return name, words
    content = [w for w in _words(text) if w not in _STOP and len(w) >= 3]
    pairs = [f"{a} {b}" for a, b in zip(content, content[1:])]
    for n in names:
        desc = " ".join(_words(descriptions.get(n, "")))
        for pair in pairs:
            if re.search(rf"\b{re.escape(pair)}\b", desc):
                return n, pair
    return None


def ranking_metric(
    plan: MetricPlan, items: list[Item], request: str, *, metric: str | None = None, options: dict | None = None
) -> MetricPlan:
    """``plan`` with its ranking metric set by ``metric`` (``--metric``) or by a metric the request names: one of the
    plan, a registered metric applying to the items (it joins ``added``) or a saved rubric (it joins ``custom``).

    Args:
        plan: the customisation agent's plan.
        items: the selected items.
        request: the request.
        metric: the ``--metric`` value (None or "": not given).
        options: the run's metric options.

    Returns:
        The plan (a copy when changed), its ``reason`` saying how the ranking metric was chosen.

    Raises:
        InputError: ``metric`` names no metric of the plan, registered metric or saved rubric.
    """
    predefined = predefined_metrics(list(dict.fromkeys(i.benchmark for i in items)), items, options)
    offers = registered_offers(items, predefined, options)
    offered = {s.name: (e.name, s) for e, m in offers for s in m.all_specs}
    customs = {r.name: r for r in plan.custom}
    saved = {r.name: r for r in list_rubrics()}
    known = {s.name: s.description for m in planned_metrics(plan, items, options) for s in m.all_specs}
    known.update({n: s.description for n, (_e, s) in offered.items() if n not in known})
    names = [
        *known,
        *[n for n in customs if n not in known],
        *[n for n in saved if n not in known and n not in customs],
    ]
    descriptions = {**known, **{n: r.description for n, r in {**saved, **customs}.items()}}
    if metric:
        if metric not in descriptions:
            from rapidfuzz.distance import OSA

            near = min(names, key=lambda n: OSA.distance(metric.casefold(), n.casefold()), default=None)
            close = near and OSA.distance(metric.casefold(), near.casefold()) <= max(1, max_edits(metric))
            guess = f"; did you mean {near}?" if close else ""
            fix = f"use one of {', '.join(names)}"
            raise InputError(f"--metric {metric} is no metric or rubric of this run{guess}", what="--metric", fix=fix)
        name, how = metric, f"set by --metric {metric}"
    else:
        found = named_metric(request, names, descriptions)
        if found is None or found[0] == plan.primary:
            return plan
        name, how = found[0], f"named in the request ('{found[1]}')"
    if name == plan.primary and metric:
        return plan.model_copy(update={"reason": f"{how}; {plan.reason}" if plan.reason else how})
    custom = list(plan.custom)
    if name not in known and name not in customs:
        custom.append(saved[name])
    entry = offered[name][0] if name in offered else None
    extra = [entry] if entry is not None and entry not in plan.added else []
    before = f"; instead of {plan.primary}" if plan.primary else ""
    reason = f"{how}{before} ({plan.reason})" if plan.reason else how
    update = {"primary": name, "custom": custom, "added": [*plan.added, *extra], "reason": reason, "stand_in": ""}
    keys = [e.key for e, _m in offers if e.name in extra]
    if keys and plan.metrics:  # a plan that names its metrics by key scores the added one too
        update["metrics"] = [*plan.metrics, *[k for k in keys if k not in plan.metrics]]
    return plan.model_copy(update=update)


def variants_of(spec: MetricSpec, specs: list[MetricSpec]) -> list[MetricSpec]:
    """The variants of ``spec`` in ``specs``: its base metric and the base's other variants."""
    base = spec.variant_of or spec.name
    return [s for s in specs if s.name != spec.name and (s.name == base or s.variant_of == base)]


def variant_disagreements(
    scores: list[Score], spec: MetricSpec, specs: list[MetricSpec], ranked: list[str], *, n_resamples: int = 10000,
    seed: int = 0,
) -> list[str]:  # fmt: skip
    """Sentences for the Answer: each variant of ``spec`` that orders the ``ranked`` models differently (means equal at
    2 decimals are a tie), or whose paired test of the first two separates them where ``spec``'s does not (or the
    reverse), with both metrics' means on the items every ranked model scored.

    Args:
        scores: the run's scores.
        spec: the ranking metric.
        specs: every metric spec of the run.
        ranked: the ranked models, best first by ``spec``.
        n_resamples, seed: of the paired permutation tests (two-sided, 5% level).

    Returns:
        One sentence per disagreeing variant (empty when fewer than two models are ranked).
    """
    from ..reports import printed_tie_groups

    if len(ranked) < 2:
        return []
    mine = {m: item_values(scores, m, spec.name) for m in ranked}
    # the verdict's basis: the items every ranked model scored by the ranking metric
    verdict_items: set[str] = set(mine[ranked[0]]).intersection(*(set(mine[m]) for m in ranked[1:]))
    hib = spec.higher_is_better
    out = []
    for v in variants_of(spec, specs):
        if v.higher_is_better != hib:
            continue
        theirs = {m: item_values(scores, m, v.name) for m in ranked}
        found = _variant_means(scores, spec, v, ranked, mine, theirs, verdict_items)
        if found is None:
            continue
        means_v, means_s, basis, where = found
        groups_v, groups_s = printed_tie_groups(means_v, hib), printed_tie_groups(means_s, hib)
        pairs = [
            (x, y) for k, x in enumerate(ranked) for y in ranked[k + 1 :]
            if _relation(means_v[x], means_v[y]) != _relation(means_s[x], means_s[y])
        ]  # fmt: skip
        a, b = groups_s[0][0], (groups_s[0][1] if len(groups_s[0]) > 1 else groups_s[1][0])
        base = _paired(mine, basis, a, b, n_resamples, seed) if basis else None
        other = _paired(theirs, basis, a, b, n_resamples, seed) if basis else None
        split = base is not None and other is not None and (base.p_value < 0.05) != (other.p_value < 0.05)
        if not pairs and not split:
            continue

        def shown(groups: list[list[str]], means: dict[str, float]) -> str:
            return (" > " if hib else " < ").join(f"{' = '.join(g)} {means[g[0]]:.2f}" for g in groups)

        if pairs:
            out.append(
                f"The variant {v.name} disagrees with the ranking metric {spec.name} about "
                f"{_differ(pairs, ranked)}: {where}, {v.name} gives {shown(groups_v, means_v)}, where {spec.name} "
                f"gives {shown(groups_s, means_s)}; rank by it with --metric {v.name}."
            )
        else:
            out.append(
                f"The variant {v.name} disagrees with the ranking metric {spec.name} about whether {a} and {b} "
                f"differ: {where}, {v.name} gives {a} {means_v[a]:.2f} against {b} {means_v[b]:.2f} "
                f"({_verdict(other)}), where {spec.name} gives {a} {means_s[a]:.2f} against {b} {means_s[b]:.2f} "
                f"({_verdict(base)}); rank by it with --metric {v.name}."
            )
    return out


def _variant_means(
    scores: list[Score], spec: MetricSpec, v: MetricSpec, ranked: list[str], mine: dict[str, dict[str, float]],
    theirs: dict[str, dict[str, float]], verdict_items: set[str],
) -> tuple[dict[str, float], dict[str, float], set[str], str] | None:  # fmt: skip
    """(variant means, ranking-metric means, items compared, where), or None when they cannot be set side by side."""
    if any(theirs[m] for m in ranked):
        basis = verdict_items.intersection(*(set(theirs[m]) for m in ranked))
        means_v, means_s = _mean_on(theirs, basis, ranked), _mean_on(mine, basis, ranked)
        where = f"on the {len(basis)} items every model scored" + (
            "" if basis == verdict_items else f" by both metrics (the verdict uses {len(verdict_items)})"
        )
        return None if means_v is None or means_s is None else (means_v, means_s, basis, where)
    corpus = {(s.metric, s.model): float(s.value) for s in scores if s.item_id == "*" and s.ok and s.value is not None}
    cv = {m: corpus.get((v.name, m)) for m in ranked}
    if any(x is None for x in cv.values()):
        return None
    means_v = {m: float(x) for m, x in cv.items() if x is not None}
    cs = {m: corpus.get((spec.name, m)) for m in ranked}
    if verdict_items:
        means_s = _mean_on(mine, verdict_items, ranked)
        where = (
            f"with {v.name} one value per model over its answers and {spec.name} on the "
            f"{len(verdict_items)} items every model scored"
        )
    elif all(x is not None for x in cs.values()):  # both corpus-level: the values the verdict uses
        means_s = {m: float(x) for m, x in cs.items() if x is not None}
        where = "with both one value per model over its answers"
    else:
        return None
    return None if means_s is None else (means_v, means_s, set(), where)


def _mean_on(vals: dict[str, dict[str, float]], basis: set[str], ranked: list[str]) -> dict[str, float] | None:
    return {m: sum(vals[m][i] for i in basis) / len(basis) for m in ranked} if basis else None


def _paired(vals: dict[str, dict[str, float]], basis: set[str], a: str, b: str, n_resamples: int, seed: int) -> Any:
    from ..metric_pool import paired_test

    if len(basis) < 2:
        return None
    return paired_test(
        {i: vals[a][i] for i in basis}, {i: vals[b][i] for i in basis}, n_resamples=n_resamples, seed=seed
    )


def _verdict(t: Any) -> str:
    if t is None:
        return "no paired test"
    return f"p = {t.p_value:.4f}, {'separated' if t.p_value < 0.05 else 'not separated'}"


def _relation(x: float, y: float) -> int:
    return (round(x, 2) > round(y, 2)) - (round(x, 2) < round(y, 2))


def _differ(pairs: list[tuple[str, str]], ranked: list[str]) -> str:
    """What two metrics' orders differ about: the pairs, or the order of the models involved."""
    involved = [m for m in ranked if any(m in pr for pr in pairs)]
    if len(pairs) <= 2:
        return _listed([f"{x} against {y}" for x, y in pairs])
    if len(involved) == len(ranked):
        return f"the order of all {len(ranked)} models"
    return f"the order of {_listed(involved)}"


def _listed(ms: list[str]) -> str:
    return ms[0] if len(ms) == 1 else ", ".join(ms[:-1]) + " and " + ms[-1]
