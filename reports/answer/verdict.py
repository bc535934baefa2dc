"""The Answer's verdict: the winner (only when the paired test separates it from the runner-up), the tie or no
established winner, with its scope and metric and the full order; for one model the absolute answer about it."""

from __future__ import annotations

import math
from typing import Any

from ..format import count_phrase, fmt2, fmt_total, ordinal
from ..ranking import Coverage, ModelStat, has_ci, no_variation, pair_separates
from ...core import MetricSpec

__all__ = ["focus_narrative", "separated_order", "separated_winner", "verdict_sentence"]


def _ci_text(st: ModelStat) -> str:
    if not has_ci(st.stats):
        return " (a corpus-level value: no per-item CI)" if st.corpus else " (no CI: fewer than 2 items)"
    if no_variation(st.stats):
        return f" (no variation over {count_phrase(st.stats.n)}, so no CI)"
    return f" (95% CI {fmt2(st.stats.ci_low)} to {fmt2(st.stats.ci_high)})"


def _q(request: str) -> str:
    return f'To "{request}": ' if request else ""


def focus_narrative(
    request: str,
    ranking: list[ModelStat],
    spec: MetricSpec,
    focus: str,
    scope: str,
    n_items: int,
    groups: list[list[ModelStat]],
    pairs: list[dict[str, Any]],
) -> str:
    """The absolute answer about ``focus``: its mean (95% CI) and total on ``spec``, its rank among the other models
    (shared by ``groups``) and the leader, and whether ``pairs``' tests separate it from its neighbours (p < 0.05)."""
    ranked = [s for s in ranking if s.summary is not None]
    me = next((s for s in ranked if s.model == focus), None)
    q = _q(request)
    if me is None:
        return f"{q}{focus} has no valid {spec.name} score on the {n_items} selected items; see Failures."
    total = f", total {fmt_total(me.stats.total, spec)}" if math.isinf(spec.range[1]) else ""
    unscored = (
        f"without a valid score: {n_items - me.stats.n} of the {n_items} selected items, see Failures"
        if 0 < me.stats.n < n_items
        else ""
    )
    where = f" ({'; '.join(p for p in (scope, unscored) if p)})" if scope or unscored else ""
    text = (
        f"{q}**{focus}** scores a mean of {fmt2(me.stats.mean)} per item by {spec.name} (scale "
        f"{spec.scale_label}) on {count_phrase(me.stats.n)}{where}{_ci_text(me)}{total}."
    )
    if len(ranked) == 1:
        return text + " No other model was evaluated, so this is an absolute score, not a ranking."
    k = next((k for k, g in enumerate(groups) if me in g), len(groups))
    mine, pos = groups[k] if k < len(groups) else [me], 1 + sum(map(len, groups[:k]))
    ties = [s.model for s in mine if s.model != focus]
    lead = next((s for s in ranked if s not in mine), None) if pos == 1 else ranked[0]
    if lead is None:
        after = "; every evaluated model is in this tie."
    elif pos > 1:
        after = f"; first is {' and '.join(s.model for s in groups[0])} (mean {fmt2(lead.stats.mean)})."
    else:
        after = f"; next is {lead.model} (mean {fmt2(lead.stats.mean)})."
    text += (
        f" Among the {len(ranked)} evaluated models it ranks {'joint ' if ties else ''}{ordinal(pos)}"
        + (f" (tied with {', '.join(ties)})" if ties else "")
        + after
    )
    parts, separated = [], []
    above = [(p["a"], "just above", p) for p in pairs if p.get("b") == focus]
    for other, side, pr in above + [(p["b"], "just below", p) for p in pairs if p.get("a") == focus]:
        if pr.get("p") is None:
            parts.append(f"no paired test against {other} {side}")
            continue
        sep = bool(pr["p"] < 0.05)
        separated.append(sep)
        parts.append(
            f"{'separated' if sep else 'not separated'} from {other} {side} (p = {pr['p']:.2f}, {pr['n']} items)"
        )
    if parts:
        text += (
            " By the paired tests it is "
            + " and ".join(parts)  # at most two: the adjacent pairs above and below it
            + ("; so its rank is not established." if separated and not any(separated) else ".")
        )
    return text


def _not_separated_text(tests: list[tuple[ModelStat, dict[str, Any] | None]], corpus: bool) -> list[str]:
    tested = [f"{s.model} (p = {t['p_value']})" for s, t in tests if t is not None and t.get("p") is not None]
    out = [f"the paired test does not separate it from {' or '.join(tested)}"] if tested else []
    for s, t in tests:
        if t is None or t.get("p") is None:
            shared = t["n"] if t is not None else 0
            why = (
                "one corpus-level value per model, no per-item values to pair"
                if corpus or s.corpus
                else f"they share {count_phrase(shared, 'scored item')}; the test needs 2"
            )
            out.append(f"it is not tested against {s.model} ({why})")
    return out


def _leader_tests(
    groups: list[list[ModelStat]], pairs: list[dict[str, Any]], leader_tests: dict[str, dict[str, Any]] | None
) -> tuple[list[str], str]:
    """(clauses on the second-place models the test does not separate a lone leader from, whom it separates it from)."""
    best, second = groups[0][0], groups[1]
    by_pair = {(p.get("a"), p.get("b")): p for p in pairs}
    tests = [(s, (leader_tests or {}).get(s.model) or by_pair.get((best.model, s.model))) for s in second]
    loose = _not_separated_text([(s, t) for s, t in tests if not pair_separates(t)], best.corpus)
    if loose:
        return loose, ""
    if len(second) == 1:
        return loose, f"the runner-up {second[0].model} at the 5% level (p = {tests[0][1]['p_value']})"  # type: ignore[index]
    return loose, f"each model tied for second ({', '.join(s.model for s in second)}) at the 5% level"


def separated_winner(
    groups: list[list[ModelStat]], pairs: list[dict[str, Any]], leader_tests: dict[str, dict[str, Any]] | None
) -> str | None:
    """The model alone in first place that the paired test separates from every second-place model, else None."""
    if len(groups) < 2 or len(groups[0]) != 1:
        return None
    loose, _ = _leader_tests(groups, pairs or [], leader_tests)
    return None if loose else groups[0][0].model


def separated_order(groups: list[list[ModelStat]], pairs: list[dict[str, Any]], higher_is_better: bool = True) -> str:
    """The full order by the adjacent paired tests: ``>`` (``<`` when lower is better) where the test separates at 5%,
    ``≈`` where it does not or cannot, ``=`` inside a shared rank.

    Args:
        groups: the rank groups, best first.
        pairs: ``pairs[k]``: rank k against rank k + 1 (:func:`pair_entry`).
        higher_is_better: the metric's direction.

    Returns:
        One sentence.
    """
    by_pair = {(p.get("a"), p.get("b")): p for p in pairs}
    sep = " > " if higher_is_better else " < "
    text, untested = "", False
    for k, g in enumerate(groups):
        if k:
            pair = by_pair.get((groups[k - 1][-1].model, g[0].model))
            untested = untested or pair is None or pair.get("p") is None
            text += sep if pair_separates(pair) else " ≈ "
        text += " = ".join(s.model for s in g)
    return (
        f"Full order ({'best first' if higher_is_better else 'lowest first'}; '{sep.strip()}': separated by the "
        f"paired test of the adjacent pair at the 5% level, '≈': not separated{' or not tested' if untested else ''}"
        f"): {text}."
    )


def verdict_sentence(
    request: str,
    ranking: list[ModelStat],
    spec: MetricSpec,
    n_items: int,
    scope: str,
    groups: list[list[ModelStat]],
    cov: Coverage | None,
    focus: str | None,
    pairs: list[dict[str, Any]],
    leader_tests: dict[str, dict[str, Any]] | None = None,
) -> str:
    """The Answer's fixed first item: the winner, the tie or no established winner, the scope, the metric and
    :func:`separated_order`; for one model the :func:`focus_narrative`.

    A leader alone in first place is named the winner only when the paired test separates it at the 5% level
    (two-sided, unadjusted) from the runner-up or from every model tied for second (``leader_tests``); otherwise the
    sentence names the models it is not separated from (or not tested against, with why).  ``cov`` says which items
    are compared when the models' item sets differ."""
    ranked = [s for s in ranking if s.summary is not None]
    q = _q(request)
    if not ranked:
        return f"{q}No target model has a valid {spec.name} score on the {n_items} selected items; see Failures."
    if focus or len(ranking) == 1:  # the request is about one model: an absolute answer, not a ranking
        return focus_narrative(request, ranking, spec, focus or ranking[0].model, scope, n_items, groups, pairs)
    best = ranked[0]
    where = _where_text(best, scope, cov, n_items)
    total = f"total {fmt_total(best.stats.total, spec)}, " if math.isinf(spec.range[1]) else ""
    value = (
        f"{fmt2(best.stats.mean)}, one corpus-level value"
        if best.corpus  # e.g. a mean pooled over answers, or kappa: not a mean per item
        else f"{total}mean {fmt2(best.stats.mean)} per item"
    )
    if len(ranked) == 1:
        return (
            f"{q}Only **{best.model}** has a valid {spec.name} score (scale {spec.scale_label}): {value} on "
            f"{count_phrase(best.stats.n)}{where}{_ci_text(best)}; with one scored model this is an absolute "
            "score, not a ranking."
        )
    value += f"{' per model' if best.corpus else ''}{_ci_text(best)}"
    head = _first_place(groups, pairs, leader_tests, spec, f"{count_phrase(best.stats.n)}{where}", value)
    return f"{q}{head} " + separated_order(groups, pairs, spec.higher_is_better)


def _where_text(best: ModelStat, scope: str, cov: Coverage | None, n_items: int) -> str:
    """The verdict's scope in parentheses ("" for none): the request's scope and which items are compared."""
    where = [scope] if scope else []
    if cov is not None and cov.differs and cov.shared:
        who = "both" if len(cov.own) == 2 else f"all {len(cov.own)}"
        where.append(f"the items {who} models scored, of {n_items} selected")
    elif best.stats.n != n_items:
        where.append(f"{n_items} items selected")
    return f" ({'; '.join(where)})" if where else ""


def _first_place(
    groups: list[list[ModelStat]],
    pairs: list[dict[str, Any]],
    leader_tests: dict[str, dict[str, Any]] | None,
    spec: MetricSpec,
    on: str,
    value: str,
) -> str:
    """The verdict's sentence on first place: a tie, the separated winner, or no model established as first."""
    top, best = groups[0], groups[0][0]
    if len(top) > 1:
        each = (
            f"{fmt2(best.stats.mean)} each, one corpus-level value per model"
            if best.corpus
            else f"mean {fmt2(best.stats.mean)} per item each"
        )
        return (
            f"{' and '.join(f'**{s.model}**' for s in top)} tie for first by {spec.name} on {on}: {each}, so the "
            "request has no single answer on this metric."
        )
    loose, apart = _leader_tests(groups, pairs, leader_tests)
    if not loose:
        return (
            f"**{best.model}** ranks first by {spec.name} on {on}: {value}; the paired test separates it from {apart}."
        )
    return (
        f"No model is established as first by {spec.name} on {on}: {best.model} leads with {value}, but "
        f"{'; '.join(loose)}."
    )
