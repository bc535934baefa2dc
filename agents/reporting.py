"""Reporting agent (SGI-Bench paper, arXiv 2512.16969, section 3, agent 4): the narrative.

scores + rationales + metrics -> ``report.md``.  This agent computes the
statistics that need the metric pool -- the ranking metric's mean, total and
95% bootstrap CI per target model (metric_pool.aggregate.summarize), a paired
permutation test of every adjacent pair of the ranking
(metric_pool.aggregate.paired_test over the items both models scored), the
SGI-Score per target model (metric_pool/sgi/sgi_score.py) -- hands them to
:mod:`sgieval.reports.build` as plain data (the report's tables, figures,
limitations and failures are built there), and writes the Answer: the
narrative that answers the request.

The Answer (:class:`~sgieval.reports.answer.Answer`) is a short list computed from the same formatted
numbers as the tables: the verdict (winner only when the paired test separates it from the runner-up, tie, or
no established winner; scope, metric, full order with '>' only between separated adjacent models), how sure
(paired tests, CIs, judge agreement), where the models differ, and caveats (coverage, ties, unscored models,
self-preference, stored judges).  With an agent model, its summary follows the fixed verdict only when every
number, model name, metric name and facet value it cites is in the report (checked in code); a summary that
fails is regenerated once, then left out.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Iterable, Sequence

from langchain_core.messages import HumanMessage, SystemMessage

from ..core import CORPUS, Item, MetricSpec, Response, RetrievalEvidence, Score
from ..core import call_in_worker
from ..metric_pool import Summary, paired_test, summarize
from ..models import NamedModel
from ..models import ainvoke, message_text
from ..models import prompt_scope
from .estimate import estimate_blocks
from ..reports import (
    Answer,
    by_metric,
    dominant_item,
    judgement_sources,
    metric_tops,
    self_preference,
    sensitivity_sentence,
)
from ..reports import (
    Coverage,
    ModelStat,
    pair_separates,
    SgiRow,
    assemble,
    ci_overlap,
    count_phrase,
    fmt,
    fmt2,
    fmt_total,
    has_ci,
    item_values,
    coverage,
    coverage_sentence,
    no_variation,
    not_applicable,
    order_stats,
    pair_entry,
    rank_labels,
    tie_groups,
    unscored_reason,
    write_report_files,
)
from .metric_choice import variant_disagreements
from ..reports import Heading, ReportContext, Section, Table, Text, report_section

__all__ = [
    "FIXED_NUMBERS_TEXT",
    "NARRATIVE_SYSTEM",
    "NUMBER",
    "adjacent_pair_tests",
    "answer_facts",
    "build_report",
    "fmt",
    "judge_reliability",
    "recheck_section",
    "reliability_section",
    "retrieval_section",
    "usage_section",
    "reliability_sentences",
    "header_facts",
    "llm_narrative",
    "numbers_supported",
    "ranking_stats",
    "sgi_rows",
]


# ----------------------------------------------------------------------------- statistics (metric pool)
def ranking_stats(scores: list[Score], metric: str, models: list[str], n_resamples: int, seed: int) -> list[ModelStat]:
    """One :class:`ModelStat` per model in ``models`` order: the summary
    (metric_pool.aggregate.summarize: mean, total, 95% BCa bootstrap CI with
    ``n_resamples`` resamples and ``seed``) of its ok item-level ``metric``
    scores, or of its corpus-level value when it has only that (with the CI
    the metric put in its details as ``ci_low``/``ci_high``, else none), or
    None with the reason (:func:`~sgieval.reports.build.unscored_reason`); ``failed`` counts its failed scores
    (not-applicable ones excluded)."""
    mine: dict[str, list[Score]] = {m: [] for m in models}
    for s in scores:  # one pass (scores may hold other metrics' too)
        if s.metric == metric and s.model in mine:
            mine[s.model].append(s)
    out = []
    for m in models:
        vals = [s.value for s in mine[m] if s.ok and s.value is not None and s.item_id != CORPUS]
        failed = sum(1 for s in mine[m] if not s.ok and not not_applicable(s))
        corpus = [s for s in mine[m] if s.ok and s.value is not None and s.item_id == CORPUS]
        if not vals and corpus:  # a corpus-level metric (e.g. kappa): one value, no per-item CI
            v = float(corpus[0].value or 0.0)  # not None: filtered above
            d = corpus[0].details
            n = int(d.get("n", 0) or 0)
            # a CI the metric computed itself (a pooled mean's bootstrap over questions), else none
            lo, hi = float(d.get("ci_low", math.nan)), float(d.get("ci_high", math.nan))
            out.append(
                ModelStat(
                    m,
                    Summary(n=n, mean=v, total=v, std=math.nan, ci_low=lo, ci_high=hi),
                    failed,
                    corpus=True,
                )
            )
            continue
        if not vals:
            out.append(ModelStat(m, None, failed, reason=unscored_reason(mine[m])))
            continue
        out.append(ModelStat(m, call_in_worker(summarize, vals, n_resamples=n_resamples, seed=seed), failed))
    return out


def adjacent_pair_tests(
    scores: list[Score], metric: str, ranked: list[ModelStat], *, n_resamples: int, seed: int
) -> list[dict[str, Any]]:
    """Paired test (metric_pool.aggregate.paired_test, permutation, two-sided)
    of each adjacent pair of ``ranked`` (rank i vs rank i+1) over the items
    both have an ok item-level ``metric`` score for; one
    :func:`sgieval.reports.build.pair_entry` dict per pair (``p`` None when
    fewer than 2 items are shared).  p-values are not adjusted for multiple
    comparisons."""
    out = []
    for hi, lo in zip(ranked, ranked[1:]):
        a, b = item_values(scores, hi.model, metric), item_values(scores, lo.model, metric)
        shared = len(set(a) & set(b))
        pr = call_in_worker(paired_test, a, b, n_resamples=n_resamples, seed=seed) if shared >= 2 else None
        out.append(pair_entry(hi, lo, shared, pr))
    return out


def sgi_rows(scores: list[Score], items: list[Item], models: list[str]) -> list[SgiRow] | None:
    """One SGI-Score computation per target model (METRICS.md A.6,
    metric_pool/sgi/sgi_score.py) as report rows; None when no item is from
    SGI-Bench.  ``missing`` names each missing term with its reason, e.g.
    "DE (no dry_passall_5 scores), WE (all 2 wet_final_score scores failed)"."""
    if not any(i.benchmark == "sgi-bench" for i in items):
        return None
    from ..metric_pool import sgi_score

    by_id = {i.id: i for i in items}
    rows = []
    for m in models:
        res = sgi_score([s for s in scores if s.model == m], by_id, model=m)
        missing = (
            ""
            if res.sgi_score is not None
            else ", ".join(f"{t.label} ({t.reason})" for t in res.terms.values() if t.missing)
        )
        rows.append(SgiRow(m, res.sgi_score, res.summary(), missing))
    return rows


# ----------------------------------------------------------------------------- narrative
def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _ci_text(st: ModelStat) -> str:
    if st.corpus and not has_ci(st.stats):
        return " (a corpus-level value: no per-item CI)"
    if not has_ci(st.stats):
        return " (no CI: fewer than 2 items)"
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
    groups: list[list[ModelStat]] | None = None,
    pairs: list[dict[str, Any]] | None = None,
) -> str:
    """The absolute answer about one model: its mean (95% CI)
    and total on ``spec``, then where it stands among the other evaluated
    models (its rank, shared when tied (``groups``: :func:`~sgieval.reports.build.tie_groups`), and the
    leader), never "ranks first" of a one-model list; with ``pairs`` (the adjacent-rank entries of
    :func:`~sgieval.reports.build.pair_entry`), whether the paired tests separate it from the models just above
    and just below (p < 0.05, two-sided)."""
    ranked = [s for s in ranking if s.summary is not None]
    groups = groups if groups is not None else [[s] for s in ranked]
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
    others = [s for s in ranked if s.model != focus]
    if not others:
        return text + " No other model was evaluated, so this is an absolute score, not a ranking."
    pos, mine = 1, [me]
    for g in groups:
        if me in g:
            mine = g
            break
        pos += len(g)
    ties = [s.model for s in mine if s.model != focus]
    lead = next(s for s in ranked if s not in mine) if pos == 1 else ranked[0]
    text += (
        f" Among the {len(ranked)} evaluated models it ranks {'joint ' if ties else ''}{_ordinal(pos)}"
        + (f" (tied with {', '.join(ties)})" if ties else "")
        + (
            f"; first is {' and '.join(s.model for s in groups[0])} (mean {fmt2(lead.stats.mean)})."
            if pos > 1
            else f"; next is {lead.model} (mean {fmt2(lead.stats.mean)})."
        )
    )
    parts, separated = [], []
    for pr, side in [(p, "just above") for p in pairs or [] if p.get("b") == focus] + [
        (p, "just below") for p in pairs or [] if p.get("a") == focus
    ]:
        other = pr["a"] if side == "just above" else pr["b"]
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
            + (" and ".join(parts) if len(parts) < 3 else ", ".join(parts))
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
    """For a leader alone in first place: one clause per model of second place the paired test does not
    separate it from (none when it separates it from all of them), and whom it is separated from."""
    best, second = groups[0][0], groups[1]
    by_pair = {(p.get("a"), p.get("b")): p for p in pairs}
    tests = [(s, (leader_tests or {}).get(s.model) or by_pair.get((best.model, s.model))) for s in second]
    loose = _not_separated_text([(s, t) for s, t in tests if not pair_separates(t)], best.corpus)
    if loose:
        return loose, ""
    if len(second) == 1:
        return loose, f"the runner-up {second[0].model} at the 5% level (p = {tests[0][1]['p_value']})"  # type: ignore[index]
    return loose, f"each model tied for second ({', '.join(s.model for s in second)}) at the 5% level"


def _separated_winner(
    groups: list[list[ModelStat]], pairs: list[dict[str, Any]], leader_tests: dict[str, dict[str, Any]] | None
) -> str | None:
    """The verdict's winner: the model alone in first place that the paired test separates from every model of
    second place (:func:`_leader_tests`), else None."""
    if len(groups) < 2 or len(groups[0]) != 1:
        return None
    loose, _ = _leader_tests(groups, pairs or [], leader_tests)
    return None if loose else groups[0][0].model


def separated_order(groups: list[list[ModelStat]], pairs: list[dict[str, Any]], higher_is_better: bool = True) -> str:
    """The Answer's full order, grouped by the paired tests of adjacent models: ``>`` (``<`` when lower is
    better) between adjacent models the paired test separates at the 5% level, ``≈`` between adjacent models it
    does not separate or cannot test, ``=`` inside a shared rank (:func:`~sgieval.reports.build.tie_groups`), e.g.
    ``"Full order (best first; '>': ...): a ≈ b = c > d."``.

    Args:
        groups: the rank groups, best first.
        pairs: the adjacent-rank tests (``pairs[k]``: rank k against rank k + 1, :func:`pair_entry`).
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


def order_note(pairs: list[dict[str, Any]]) -> str:
    """What the full order of :func:`separated_order` does not settle, for a ranking with more than one adjacent
    pair: non-adjacent pairs are not tested, and the p-values are not adjusted for multiple comparisons ("" for
    one pair or none).

    Args:
        pairs: the adjacent-rank tests (:func:`pair_entry`).

    Returns:
        One sentence, or "".
    """
    if len(pairs) < 2:
        return ""
    n_tests = sum(1 for p in pairs if p.get("p") is not None)
    return "The full order tests adjacent models only, so it does not settle the order of models further apart" + (
        f"; its {n_tests} p-values are not adjusted for multiple comparisons." if n_tests > 1 else "."
    )


def verdict_sentence(
    request: str,
    ranking: list[ModelStat],
    spec: MetricSpec,
    n_items: int,
    scope: str,
    groups: list[list[ModelStat]] | None = None,
    cov: Coverage | None = None,
    focus: str | None = None,
    pairs: list[dict[str, Any]] | None = None,
    leader_tests: dict[str, dict[str, Any]] | None = None,
) -> str:
    """The Answer's fixed first item: the winner, the tie or no established winner, the scope, the metric and
    the full order grouped by the adjacent paired tests ("alpha > beta = gamma ≈ delta"); for one model (``focus``, or one evaluated) the absolute answer of
    :func:`focus_narrative`; for one scored model among several, its absolute score and no ranking.

    ``groups``: :func:`~sgieval.reports.build.tie_groups` of the ranked models (default: no ties);
    ``cov``: the ranking metric's :class:`~sgieval.reports.build.Coverage` (None when the item sets agree);
    ``pairs``: the adjacent-rank test entries (:func:`~sgieval.reports.build.pair_entry`, ``pairs[k]``: rank k
    against rank k + 1); ``leader_tests``: ``{model: pair_entry}`` of the leader against each model tied for
    second.

    A leader alone in first place is named the winner (in bold) only when the paired test separates it at the 5%
    level (p < 0.05, two-sided, unadjusted: the test of the Pairs table and "How sure") from the runner-up, or
    from every model tied for second; otherwise the sentence says no model is established as first and names the
    leader and the models it is not separated from (or not tested against, with why).  The full order is
    :func:`separated_order`."""
    ranked = [s for s in ranking if s.summary is not None]
    groups = groups if groups is not None else [[s] for s in ranked]
    q = _q(request)
    if not ranked:
        return f"{q}No target model has a valid {spec.name} score on the {n_items} selected items; see Failures."
    if focus or len(ranking) == 1:  # the request is about one model: an absolute answer, not a ranking
        return focus_narrative(request, ranking, spec, focus or ranking[0].model, scope, n_items, groups, pairs)
    best = ranked[0]
    where = [scope] if scope else []
    if cov is not None and cov.differs and cov.shared:
        who = "both" if len(cov.own) == 2 else f"all {len(cov.own)}"
        where.append(f"the items {who} models scored, of {n_items} selected")
    elif best.stats.n != n_items:
        where.append(f"{n_items} items selected")
    where_text = f" ({'; '.join(where)})" if where else ""
    total = f"total {fmt_total(best.stats.total, spec)}, " if math.isinf(spec.range[1]) else ""
    if len(ranked) == 1:
        value = (
            f"{fmt2(best.stats.mean)}, one corpus-level value"
            if best.corpus
            else f"{total}mean {fmt2(best.stats.mean)} per item"
        )
        return (
            f"{q}Only **{best.model}** has a valid {spec.name} score (scale {spec.scale_label}): {value} on "
            f"{count_phrase(best.stats.n)}{where_text}{_ci_text(best)}; with one scored model this is an absolute "
            "score, not a ranking."
        )
    top = groups[0]
    value = (
        f"{fmt2(best.stats.mean)}, one corpus-level value per model{_ci_text(best)}"
        if best.corpus  # e.g. a mean pooled over answers, or kappa: not a mean per item
        else f"{total}mean {fmt2(best.stats.mean)} per item{_ci_text(best)}"
    )
    if len(top) > 1:
        text = (
            f"{q}{' and '.join(f'**{s.model}**' for s in top)} tie for first by {spec.name} on "
            f"{count_phrase(best.stats.n)}{where_text}: "
            + (
                f"{fmt2(best.stats.mean)} each, one corpus-level value per model"
                if best.corpus
                else f"mean {fmt2(best.stats.mean)} per item each"
            )
            + ", so the request has no single answer on this metric."
        )
    else:
        loose, apart = _leader_tests(groups, pairs or [], leader_tests)
        if not loose:
            text = (
                f"{q}**{best.model}** ranks first by {spec.name} on {count_phrase(best.stats.n)}{where_text}: "
                f"{value}; the paired test separates it from {apart}."
            )
        else:
            text = (
                f"{q}No model is established as first by {spec.name} on {count_phrase(best.stats.n)}{where_text}: "
                f"{best.model} leads with {value}, but {'; '.join(loose)}."
            )
    text += " " + separated_order(groups, pairs or [], spec.higher_is_better)
    return text


def how_sure(
    ranking: list[ModelStat],
    groups: list[list[ModelStat]],
    pairs: list[dict[str, Any]],
    leader_tests: dict[str, dict[str, Any]] | None = None,
    metric: str = "the ranking metric",
) -> list[str]:
    """The Answer's "How sure" sentences: the paired test behind the verdict (leader against the runner-up;
    against each model of a group tied for second, ``leader_tests``: ``{model: pair_entry}``; within a tie for
    first), or why there is none.  Significance wording comes only from the paired test; CI overlap is named
    only as overlap, and a CI without variation is never used."""
    ranked = [s for s in ranking if s.summary is not None]
    if len(ranked) < 2 or not groups:
        return []
    top = groups[0]
    if len(top) > 1:
        inside = [p for p in pairs[: len(top) - 1] if p["p"] is not None]
        if not inside:
            return [f"{' and '.join(s.model for s in top)} share too few scored items for a paired test."]
        return [
            "The paired test does not separate them: "
            + "; ".join(f"{p['a']} vs {p['b']} on {count_phrase(p['n'])}, p = {p['p_value']}" for p in inside)
            + "."
        ]
    best, second = top[0], groups[1]
    if len(second) > 1:
        tests = [(leader_tests or {}).get(s.model) for s in second]
        names = " and ".join(s.model for s in second)
        head = f"Against {names}, tied for second (mean {fmt2(second[0].stats.mean)} each)"
        done = [t for t in tests if t is not None and t["p"] is not None]
        if len(done) < len(second):
            return [f"{head}, not every pair shares 2 scored items, so the order is not tested."]
        sig = [t["significant"] for t in done]
        verdict = (
            "a significant difference from each at the 5% level"
            if all(sig)
            else "no significant difference from any of them at the 5% level"
            if not any(sig)
            else "a significant difference from some of them only, at the 5% level"
        )
        return [
            f"{head}, the paired tests give "
            + ", ".join(f"p = {t['p_value']} against {t['b']} ({count_phrase(t['n'])})" for t in done)
            + f": {verdict}."
        ]
    runner = second[0]
    comparison = pairs[0] if pairs else None
    if comparison and comparison.get("p") is not None:
        word = "a significant" if comparison["p"] < 0.05 else "no significant"
        return [
            f"Against the runner-up {runner.model} (mean {fmt2(runner.stats.mean)}), the paired test on "
            f"{comparison['n']} items gives p = {comparison['p_value']}: {word} difference at the 5% level."
        ]
    if best.corpus:
        return [
            f"No paired test against the runner-up {runner.model} (mean {fmt2(runner.stats.mean)}): "
            f"{metric} is one corpus-level value per model, with no per-item values to pair, so the order "
            "alone is not evidence of a difference."
        ]
    shared = comparison["n"] if comparison else 0
    out = [
        f"No paired test against the runner-up {runner.model} (mean {fmt2(runner.stats.mean)}): they share "
        f"{count_phrase(shared, 'scored item')} and the test needs at least 2, so the order is not evidence of a "
        "difference."
    ]
    if not (no_variation(best.stats) or no_variation(runner.stats)) and ci_overlap(best.stats, runner.stats):
        out.append("Their 95% CIs overlap.")
    return out


def items_needed_sentence(
    scores: list[Score],
    spec: MetricSpec,
    groups: list[list[ModelStat]],
    pairs: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    n_items: int,
    n_matching: int | None = None,
    n_resamples: int = 10000,
) -> str:
    """The Answer's sentence on how many more items would separate the top two when the paired test does not
    (p >= 0.05), and what they would cost; "" when the top two are separated, untested or corpus-level.

    The count is :func:`sgieval.metric_pool.power.items_to_separate` on the paired per-item differences of the
    leader minus the runner-up (level 5% two-sided, power 80%, the normal approximation it states), raised to the
    fewest items with which the paired permutation test can reach p < 0.05 at all when the run's items cannot
    (:func:`smallest_permutation_p`: 4 items give at least p = 0.125), which the sentence then says.  The price
    per item is the run's estimate before any call (``usage["estimate"]``: its USD over its items), else the
    ledger's actual cost over the run's items; unknown prices are said to be unknown.

    Args:
        scores: the ranking metric's scores.
        spec: the ranking metric.
        groups: the ranked models in tie groups (:func:`tie_groups`); the top two are the two models of a tie
            for first, or the leader and a runner-up alone in second place (a shared second place has no one
            runner-up: no sentence).
        pairs: the adjacent-pair tests (``pairs[0]``: the top two, :func:`pair_entry`).
        usage: the cost section's summary (:func:`sgieval.agents.run_report.usage_summary`), or None.
        n_items: the run's items.
        n_matching: the catalog's items that match the run's selection filters (sampled or not), or None when
            the run did not record it; the sentence then says how many of the items needed the catalog holds.
        n_resamples: the paired test's resamples (its flips are enumerated exactly when 2**n <= n_resamples).

    Returns:
        One sentence, or "".
    """
    from ..metric_pool import METHOD, items_to_separate

    if not groups or not pairs or pairs[0].get("p") is None or pairs[0]["p"] < 0.05:
        return ""
    if len(groups[0]) == 2:
        best, runner = groups[0]
    elif len(groups[0]) == 1 and len(groups) > 1 and len(groups[1]) == 1:
        best, runner = groups[0][0], groups[1][0]
    else:
        return ""
    if (pairs[0].get("a"), pairs[0].get("b")) != (best.model, runner.model):
        return ""
    if best.corpus or runner.corpus:
        return ""
    a, b = item_values(scores, best.model, spec.name), item_values(scores, runner.model, spec.name)
    keys = sorted(k for k in set(a) & set(b) if math.isfinite(a[k]) and math.isfinite(b[k]))
    if len(keys) < 2:
        return ""
    diffs = [a[k] - b[k] for k in keys]
    need = items_to_separate(diffs)
    basis = (
        f"paired differences {best.model} minus {runner.model}: mean {need.mean_diff:.4g}, SD {need.sd_diff:.4g} "
        f"over {count_phrase(need.n_used)}"
    )
    p_min = smallest_permutation_p(diffs, n_resamples)
    zeros = sum(1 for d in diffs if d == 0)
    floor = ""
    if p_min >= 0.05 and need.mean_diff != 0:
        fewest = MIN_ITEMS_FOR_P05 + zeros  # the differences that are 0 stay 0: they add no flip that counts
        floor = (
            f"With {count_phrase(need.n_used)} the paired permutation test cannot reach p < 0.05 at all: its "
            f"smallest attainable p is 2/2^{need.n_used - zeros} = {p_min:.4f} (every difference of one sign"
            + (
                f"; {count_phrase(zeros, 'difference')} of 0 {'changes' if zeros == 1 else 'change'} nothing when flipped"
                if zeros
                else ""
            )
            + f"), and it needs at least {MIN_ITEMS_FOR_P05} items whose difference is not 0 "
            f"(smallest p 2/2^{MIN_ITEMS_FOR_P05} = {2.0 ** (1 - MIN_ITEMS_FOR_P05):.4f})."
        )
        if need.n_total is None or need.n_total < fewest:
            more = fewest - need.n_used
            formula = (
                f"the power formula ({METHOD}) asks for {count_phrase(need.n_total)}"
                if need.n_total is not None
                else f"the power formula gives no count: {need.reason}"
            )
            return (
                f"{floor} About {more:,} more items of the same kind ({fewest:,} in all) are the fewest with which "
                f"it could separate {best.model} from {runner.model}, if their differences keep one sign ({formula}; "
                f"{basis}); {_cost_of(more, usage, n_items)}.{_held(n_matching, n_items, more)}"
            )
    if need.n_total is None:
        return f"No number of items of the same kind would let the paired test separate them ({need.reason}; {basis})."
    more = need.n_total - need.n_used
    if more <= 0:
        return (
            f"The power formula ({METHOD}) asks for {count_phrase(need.n_total)}, no more than the {need.n_used} "
            f"used, yet the paired test did not separate them, so it gives no count of further items ({basis})."
        )
    return (
        f"About {more:,} more items of the same kind ({need.n_total:,} in all) would give the paired test 80% "
        f"power to separate {best.model} from {runner.model} at the 5% level, two-sided ({METHOD}; {basis}); "
        f"{_cost_of(more, usage, n_items)}." + (f" {floor}" if floor else "") + _held(n_matching, n_items, more)
    )


MIN_ITEMS_FOR_P05 = 6
"""The fewest items with a nonzero paired difference with which the exact two-sided sign-flip permutation test
can give p < 0.05: its smallest p is 2/2^n (the observed signs and their full flip), 0.0625 at n = 5, 0.03125 at 6."""


def smallest_permutation_p(diffs: Sequence[float], n_resamples: int = 10000) -> float:
    """The smallest p the report's paired test (:func:`sgieval.metric_pool.aggregate.paired_test`, the two-sided
    sign-flip permutation test of the mean difference, scipy ``permutation_test(permutation_type="samples")``)
    can give on ``len(diffs)`` items, whatever their differences' magnitudes.

    Exact enumeration (2**n <= ``n_resamples``): only the observed signs and their full flip reach the observed
    |mean| when every nonzero difference has one sign, and flipping a difference of 0 changes nothing, so
    p_min = 2 x 2^z / 2^n = 2/2^(n - z) for z differences of 0.  Randomised (2**n > ``n_resamples``): scipy's
    p = 2 (1 + #resamples at least as extreme) / (n_resamples + 1) is at least 2/(n_resamples + 1).

    Args:
        diffs: the per-item paired differences (finite).
        n_resamples: the test's resamples (>= 1).

    Returns:
        The smallest attainable p, in (0, 1]; 1.0 when every difference is 0 or there is one item.
    """
    n, z = len(diffs), sum(1 for d in diffs if d == 0)
    if n - z == 0 or n == 1:
        return 1.0
    if 2**n <= n_resamples:
        return min(1.0, 2.0 ** (1 + z - n))
    return min(1.0, 2.0 / (n_resamples + 1))


def _cost_of(more: int, usage: dict[str, Any] | None, n_items: int) -> str:
    """What ``more`` items of the run's kind would cost, for the items-needed sentence."""
    per_item, source = _price_per_item(usage, n_items)
    if per_item is None:
        return f"their cost is not known: {source}"
    return f"about {more * per_item:.4f} USD at {per_item:.6f} USD per item ({source})"


def _held(n_matching: int | None, n_items: int, more: int) -> str:
    """Whether the catalog holds the ``more`` items, for the items-needed sentence ("" when not recorded)."""
    if n_matching is None or n_matching < n_items:
        return ""
    unused = n_matching - n_items
    if unused == 0:
        return (
            f" The catalog holds no more items of this kind: this run used all {n_matching:,} that match its selection."
        )
    return f" The catalog holds {unused:,} more items of this kind (not used in this run), " + (
        "enough." if unused >= more else f"fewer than the {more:,} needed."
    )


def _price_per_item(usage: dict[str, Any] | None, n_items: int) -> tuple[float | None, str]:
    """(USD per item, where it comes from): the estimate's USD over its items, else the actual cost over
    ``n_items``; None when no priced call says."""
    usage = usage or {}
    est = usage.get("estimate") or {}
    rows = est.get("rows") or []
    priced = [r["usd"] for r in rows if r.get("usd") is not None]
    if priced and est.get("items") and not any(r.get("usd") is None and r.get("calls") for r in rows):
        return sum(priced) / int(est["items"]), "this run's estimate before any call, every target and judge"
    total = (usage.get("total") or {}).get("cost")
    calls = (usage.get("total") or {}).get("calls") or 0
    unpriced = (usage.get("total") or {}).get("unpriced_calls") or 0
    if not calls:
        return None, "this run made no priced call (its answers were replayed), and new items need new answers"
    if total is not None and n_items and not unpriced:
        return float(total) / n_items, "this run's actual cost per item, every model it called"
    return None, "some of this run's models have no known price"


def answer_facts(
    scores: list[Score],
    specs: list[MetricSpec],
    spec: MetricSpec,
    stats: list[ModelStat],
    *,
    judges: list[str],
    allow_self_judge: bool,
    stand_in: str = "",
    focus: str | None = None,
    leaders: list[str] | None = None,
) -> dict[str, list[str]]:
    """Sentences the Answer adds beside the verdict, computed in code, by Answer part: ``"where"`` (other
    metrics that put another model first, with a dominating item and its median) and ``"caveats"`` (the
    stand-in metric and why; a mean dominated by one item; the sensitivity of the order to censored or missing
    stored records; who judged, stored or live; self-preference).  ``leaders``: the models sharing first place
    (default: the first ranked model)."""
    ranked = [s for s in stats if s.summary is not None]
    names = [s.model for s in ranked]
    grouped = by_metric(scores)
    where: list[str] = []
    out: list[str] = []
    if stand_in:
        out.append(f"No metric here measures the asked quality directly: {stand_in}.")
    leaders = leaders if leaders is not None else names[:1]
    if len(ranked) > 1:
        others = [x for x in specs if x.name != spec.name and not x.variant_of and spec.variant_of != x.name]
        disagree = []
        for name, (top, mean) in metric_tops(scores, others, names).items():
            if set(top) & set(leaders if not focus else names[:1]):
                continue
            doms = [d for d in (dominant_item(grouped.get(name, []), name, m) for m in top) if d]
            dom = (
                f", but one item, {doms[0]['item']}, holds {fmt(doms[0]['value'])} of its {fmt(doms[0]['total'])} "
                f"({doms[0]['share']:.0%}); median {fmt2(doms[0]['median'])} per item"
                if doms
                else ""
            )
            disagree.append(f"{name} puts {' and '.join(top)} first (mean {fmt2(mean)}{dom})")
        if disagree:
            first = " and ".join(leaders) if not focus else names[0]
            where.append(
                f"The metrics disagree about the top model: {spec.name} puts {first} first, but "
                + "; ".join(disagree)
                + "."
            )
    for m in leaders if not focus else [focus]:
        dominant = dominant_item(grouped.get(spec.name, []), spec.name, m)
        if dominant:
            out.append(
                f"One item dominates {m}'s mean on {spec.name}: {dominant['item']} holds "
                f"{fmt(dominant['value'])} of its total {fmt(dominant['total'])} ({dominant['share']:.0%}); its "
                f"median is {fmt2(dominant['median'])} per item against a mean of {fmt2(dominant['mean'])}."
            )
    if ranked:
        sens = sensitivity_sentence(grouped.get(spec.name, []), spec, names)
        if sens:
            out.append(sens)
    sources = judgement_sources(scores, names)
    who = []
    for src in sources:
        if src.get("origin") == "stored":
            who.append(
                f"acceptance rests on stored judgements of the original run: coherence by {src.get('coherence')} "
                f"and novelty by {src.get('novelty')} embeddings"
            )
        else:
            who.append(
                f"acceptance was decided in this run: coherence by {src.get('coherence')} and novelty by "
                f"{src.get('novelty')} embeddings"
            )
    if judges:
        who.append(f"judge and rubric metrics were scored by {', '.join(judges)}")
    elif sources:
        who.append("no judge was called in this run")
    if who:
        out.append("Who judged: " + "; ".join(who) + ".")
    out += [f"Self-preference: {x}." for x in self_preference(names, sources, judges, allow_self_judge)]
    return {"where": where, "caveats": out}


def ranking_caveats(
    stats: list[ModelStat], groups: list[list[ModelStat]], spec: MetricSpec, cov: Coverage | None
) -> list[str]:
    """The Answer's caveats about the ranking itself: coverage (:func:`~sgieval.reports.build.coverage_sentence`
    when the readings disagree, else how many items are compared), ties below first place, unscored models."""
    out: list[str] = []
    if cov is not None and cov.differs:
        counts = ", ".join(f"{m} {n}" for m, (n, _) in cov.own.items())
        who = "both" if len(cov.own) == 2 else "all of them"
        sentence = coverage_sentence(cov, spec)
        if not cov.shared:
            out.append(
                f"Coverage differs (scored items: {counts}) and no item is scored by every model, so the means "
                "are over each model's own items and not compared item by item."
            )
        elif sentence:
            out.append(
                f"Coverage differs (scored items: {counts}): the ranking compares the "
                f"{count_phrase(len(cov.shared))} {who} scored. {sentence}"
            )
        else:
            out.append(
                f"Coverage differs (scored items: {counts}): the ranking compares the "
                f"{count_phrase(len(cov.shared))} {who} scored; the order is the same on each model's own "
                "items and with failures counted as wrong."
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


NUMBER = re.compile(r"(?<![\w.])(?<!\w-)-?\d+(?:\.\d+)?(?![\w.]*\w)")
"""A number in text: not part of a word or hyphenated name ("o1-mini", "gpt-4o", "llama3.3")."""

FIXED_NUMBERS_TEXT = "95% confidence intervals; the 5% significance level; rubric criteria 0-10; rubric scores 0-100"
"""Numbers the report's own fixed wording uses (allowed in a narrative)."""


def _as_float(x: str) -> float | None:
    try:
        return float(x)
    except ValueError:
        return None


def numbers_supported(narrative: str, tables_text: str, header_text: str = "") -> list[str]:
    """Numbers in ``narrative`` that appear neither in ``tables_text`` nor in
    ``header_text`` (the run header: item counts, K, seed, ...); empty list =
    the narrative passes the check.

    A number matches when it is written the same way or has the same value
    ("0.5" matches "0.50", "296" matches "296.0").  Digits inside words or
    hyphenated names (the "1" of "o1-mini", the "4" of "gpt-4o") are not numbers.  Order of the returned list = order in
    the narrative (every number of the narrative must be in the report).
    """
    present = NUMBER.findall(tables_text) + NUMBER.findall(header_text)
    exact = set(present)
    values = {v for v in (_as_float(x) for x in present) if v is not None}
    out = []
    for n in NUMBER.findall(narrative):
        if n in exact or _as_float(n) in values:
            continue
        out.append(n)
    return out


NAME = re.compile(r"(?<![\w.:/-])[A-Za-z][\w.:/+-]*[\w+]|(?<![\w.:/-])[A-Za-z]\b")
"""A word or a name-like token (letters, digits, ``_ . : / - +`` inside)."""

PLAIN_CAPITALS = frozenset({"I", "CI", "CIs", "A", "The", "An"})
"""Capitalised words a narrative may use mid-sentence without the report stating them."""


def _name_like(tok: str) -> bool:
    """A token that names something (a model, a metric, a benchmark id): it carries a digit, ``_``, ``:``, ``/``,
    ``+``, an inner ``.``, or a hyphen joining a one-letter part (``gpt-4o``, ``o1-mini``, ``m-a``, ``exact_match``,
    ``replay:phi4:latest``); hyphenated English words ("idea-generation", "self-preference") are not names."""
    if any(c.isdigit() for c in tok) or any(c in tok for c in "_:/+") or "." in tok:
        return True
    return "-" in tok and any(len(p) == 1 for p in tok.split("-"))


def names_supported(narrative: str, allowed_text: str, known: Iterable[str] = ()) -> list[str]:
    """Names in ``narrative`` the report does not state: model-like or metric-like tokens (:func:`_name_like`),
    ``**bold**`` names, and capitalised words inside a sentence (a facet value such as "Biology", a model such as
    "Claude"), each checked case-insensitively against the words of ``allowed_text`` (the report's tables, run
    facts and request) and the ``known`` names (target models, metrics, facet values; a model may also be named
    without its provider prefix, "o1-mini" for "replay:o1-mini").  Returns them in narrative order, without
    repeats; empty = the narrative passes."""
    words = {w.casefold() for w in NAME.findall(allowed_text)}
    for k in known:
        k = str(k)
        words.add(k.casefold())
        for part in re.split(r"[:/]", k):
            if part:
                words.add(part.casefold())
        for cut in re.finditer(r"[:/]", k):  # without its provider prefix: "phi4:latest" of "replay:phi4:latest"
            words.add(k[cut.end() :].casefold())
        words.update(w.casefold() for w in NAME.findall(k))
    out: list[str] = []

    def check(tok: str) -> None:
        t = tok.strip().strip(".,;:()").casefold()
        if t and t not in words and tok not in out:
            out.append(tok)

    for bold in re.findall(r"\*\*([^*]+)\*\*", narrative):
        check(bold.strip())
    for sentence in re.split(r"(?<=[.!?;:])\s+|\n+", narrative):
        toks = list(re.finditer(NAME, sentence))
        for pos, m in enumerate(toks):
            tok = m.group(0).rstrip(".")
            if _name_like(tok) or (pos > 0 and tok[:1].isupper() and tok not in PLAIN_CAPITALS):
                check(tok)
    return out


def header_facts(header: dict[str, Any], n_items: int, models: list[str]) -> str:
    """The run header's facts as one text (what a narrative may cite besides
    the tables): items selected, K, seed, target models and their count,
    judges, filters, plus :data:`FIXED_NUMBERS_TEXT`."""
    return (
        f"items selected: {n_items}; K: {header.get('k', 'all matches')}; seed: {header.get('seed', 0)}; "
        f"target models ({len(models)}): {', '.join(models)}; judge: {header.get('judges', 'none')}; "
        f"filters: {header.get('filters', 'none')}; {FIXED_NUMBERS_TEXT}"
    )


ORDER_CLAIM = re.compile(
    r"\b(?:is|are|was|were|comes?|came|ranks?|ranked|places?|placed|emerges?|stands?\s+out\s+as)\s+(?:as\s+)?"
    r"(?:clearly\s+|the\s+|a\s+)*(?:best|first|top|strongest|winner|leader|most\s+\w+|highest[- ]ranked)\b"
    r"|\b(?:outperform\w*|outscore\w*|beats?|wins?|superior|better\s+than|worse\s+than|the\s+winner)\b",
    re.IGNORECASE,
)
"""Words that claim an order of models: "is the most rigorous", "ranks first", "outperforms", "better than"."""

NEGATION = re.compile(r"\b(?:not|no|cannot|can't|neither|nor|without|whether)\b", re.IGNORECASE)


def order_claims_supported(narrative: str, winner: str | None, models: Iterable[str]) -> list[str]:
    """Sentences of ``narrative`` that claim an order of the target models (:data:`ORDER_CLAIM`, not negated)
    which the paired tests do not establish: the first model a claiming sentence names must be ``winner``, the
    leader the verdict's paired test separates from the runner-up (None when no model is established as first, so
    no sentence may claim one).  A model is named by its full name or without its provider prefix.

    Args:
        narrative: the agent's summary.
        winner: the verdict's separated leader, or None.
        models: the target models.

    Returns:
        The unsupported sentences in narrative order; empty = the narrative passes.
    """
    names: dict[str, str] = {}
    for m in models:
        names[m.casefold()] = m
        for cut in re.finditer(r"[:/]", m):
            names.setdefault(m[cut.end() :].casefold(), m)
    pattern = (
        re.compile(
            r"(?<![\w.:/-])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")(?![\w/-])",
            re.IGNORECASE,
        )
        if names
        else None
    )
    out = []
    for sentence in re.split(r"(?<=[.!?;])\s+|\n+", narrative):
        if not ORDER_CLAIM.search(sentence) or NEGATION.search(sentence):
            continue
        first = pattern.search(sentence) if pattern is not None else None
        named = names[first.group(1).casefold()] if first else None
        if winner is None or named != winner:
            out.append(sentence.strip())
    return out


NARRATIVE_SYSTEM = """You write a short summary for an evaluation report, read by a researcher after the report's
fixed verdict (given below; do not contradict or repeat it). In 2-4 full sentences, say what the tables show that
the verdict does not: where the models differ, how sure the result is. Use ONLY numbers, model names, metric names
and facet values that appear verbatim in the tables given; name the target models exactly as in the tables. Call a
difference significant or not significant only from the paired-test table (state its p); overlapping confidence
intervals alone are not a test. Call a model best, first or better than another only where the fixed verdict does."""

CHECKED = "every number, model name, metric name and facet value it cites was checked against the report's tables and run facts"
"""What the fact check of an agent's narrative covers (the Answer's stamp)."""


async def llm_narrative(
    agent: NamedModel,
    request: str,
    tables_text: str,
    header_text: str = "",
    *,
    verdict: str = "",
    known: Iterable[str] = (),
    models: Iterable[str] = (),
    winner: str | None = None,
) -> tuple[str | None, list[str]]:
    """A summary from ``agent`` that passes the fact check: every number (:func:`numbers_supported`) and every
    name (:func:`names_supported`: models, metrics, facet values) it cites appears in ``tables_text``,
    ``header_text``, ``request`` or ``known``.  A failing text is regenerated once with what failed; after the
    second failure, or a failed call, the result is None.

    Args:
        agent: the agent model.
        request: the researcher's request ("" for none).
        tables_text: every section's text (:attr:`~sgieval.reports.build.ReportDraft.tables_text`).
        header_text: the run facts (:func:`header_facts`).
        verdict: the Answer's fixed first item, shown to the agent so its text follows it.
        known: names the text may use (target models, metrics, facet values).
        models: the target models, whose order the text may claim only as the paired tests establish it
            (:func:`order_claims_supported`).
        winner: the leader the verdict's paired test separates from the runner-up, None when none is.

    Returns:
        ``(text or None, notes)``: notes say why each attempt failed.
    """
    notes = []
    known = list(known)
    facts = f"\n\nRun facts:\n{header_text}" if header_text else ""
    fixed = f"\n\nFixed verdict (shown before your text):\n{verdict}" if verdict else ""
    msgs = [
        SystemMessage(content=NARRATIVE_SYSTEM),
        HumanMessage(
            content=f"Question: {request or 'Which model is best overall?'}{fixed}\n\nTables:\n{tables_text}{facts}"
        ),
    ]
    for attempt in (1, 2):
        try:
            with prompt_scope("sgieval:agent/reporting"):
                text = message_text(await ainvoke(agent, msgs)).strip()
        except Exception as e:  # noqa: BLE001
            notes.append(f"narrative call failed: {e}")
            return None, notes
        bad = numbers_supported(text, tables_text, header_text)
        unknown = names_supported(text, "\n".join([tables_text, header_text, request, verdict]), known)
        claims = order_claims_supported(text, winner, models)
        if text and not bad and not unknown and not claims:
            return text, notes
        why = []
        if not text:
            why.append("was empty")
        if bad:
            why.append(f"cited numbers not in the tables: {bad[:5]}")
        if unknown:
            why.append(f"named models, metrics or facet values not in the report: {unknown[:5]}")
        if claims:
            why.append(
                f"claimed an order of models the paired tests do not establish ({count_phrase(len(claims), 'sentence')})"
            )
        notes.append(f"narrative attempt {attempt} " + " and ".join(why))
        fix = []
        if bad:
            fix.append(f"These numbers are not in the tables: {bad[:10]}.")
        if unknown:
            fix.append(f"These names are not in the report: {unknown[:10]}.")
        if claims:
            fix.append(
                "These sentences claim an order of models the paired tests do not establish (see the fixed "
                f"verdict): {claims[:5]}."
            )
        msgs = msgs + [
            HumanMessage(
                content=" ".join(fix or ["The text was empty."]) + " Rewrite using only the tables' numbers and names."
            )
        ]
    return None, notes


def judge_reliability(
    scores: list[Score], specs: list[MetricSpec], *, seed: int = 0, n_resamples: int = 1000
) -> list[dict[str, Any]]:
    """Judge-reliability rows (:func:`sgieval.metric_pool.reliability.reliability_rows`) of every judged metric
    (kind ``judge`` or ``rubric``) that a panel of two or more judges scored; [] when none."""
    from ..metric_pool.reliability import reliability, reliability_rows

    out = []
    grouped = by_metric(scores)
    for sp in specs:
        if sp.kind not in ("judge", "rubric"):
            continue
        rel = reliability(
            [s for s in grouped.get(sp.name, []) if s.item_id != CORPUS], sp, n_resamples=n_resamples, seed=seed
        )
        if rel is not None:
            out.append(reliability_rows(rel))
    return out


def reliability_section(rows: list[dict[str, Any]]) -> Section:
    """The report's "Judge reliability" section from :func:`judge_reliability` rows."""
    blocks: list[Any] = [
        Text(
            "Krippendorff's alpha (interval level for 0-10 and 0-100 scores, nominal for 0/1 labels) with a "
            "bootstrap 95% CI over units (item x target model); thresholds of Krippendorff (2004): >= 0.800 "
            "reliable, 0.667 to 0.800 tentative only, below 0.667 not reliable."
        )
    ]
    retest_caption = (
        "Test-retest (Krippendorff's alpha between a judge's repeated verdicts on the same items, each repeat a "
        "coder, a failed repeat a missing value):"
    )
    retest_headers = ["judge", "repeats", "units", "alpha", "95% CI"]
    for r in rows:
        blocks += [Heading(r["metric"]), Text(r["verdict"])]
        if r.get("n_judges", 2) < 2:  # one judge: only its test-retest agreement and position bias apply
            if r["retest"]:
                blocks += [Text(retest_caption), Table(retest_headers, r["retest"], name="retest")]
            if r["position"]:
                blocks.append(Text(f"Position bias: {r['position']}."))
            continue
        blocks.append(
            Table(["metric", "level", "judges", "units", "alpha", "95% CI"], r["agreement"], name="agreement")
        )
        if r["offsets"]:
            blocks += [
                Text("Each judge's mean offset from the panel mean (metric's scale):"),
                Table(["judge", "mean offset", "95% CI", "units"], r["offsets"], name="offsets"),
            ]
        if r["leave_one_out"]:
            blocks += [
                Text("Leave one judge out (ranking by the remaining judges):"),
                Table(
                    ["judge left out", "order (best first)", "top model changes", "order changes"],
                    r["leave_one_out"],
                    name="leave_one_out",
                ),
            ]
        if r["self_preference"]:
            blocks += [
                Text(
                    "Self-preference (a judge scoring its own model's responses, minus the other "
                    "judges' mean on the same items):"
                ),
                Table(
                    ["judge", "target", "model", "difference", "95% CI", "items", "significant"],
                    r["self_preference"],
                    name="self_preference",
                ),
            ]
        else:
            blocks.append(Text("Self-preference: no judge is one of the ranked target models."))
        if r["position"]:
            blocks.append(Text(f"Position bias: {r['position']}."))
        if r["retest"]:
            blocks += [Text(retest_caption), Table(retest_headers, r["retest"], name="retest")]
    return Section("reliability", "Judge reliability", blocks)


def definitions_section(specs: list[MetricSpec], scores: list[Score]) -> Section | None:
    """ "Metric definitions" section: for every metric of ``specs`` with a score in this run, which definition
    its figures use (the spec's description), how a model's figure is formed (per item: the mean and total of
    the per-item values; corpus level: one value per model, e.g. a mean pooled over answers) and its source
    (paper, spec section or upstream file: AidanBench's README S(q) or plot.py count, SciAidanBench's accepted
    or published count).  None when no metric has a score."""
    corpus = {s.metric for s in scores if s.item_id == CORPUS}
    used = {s.metric for s in scores}
    rows = []
    for sp in specs:
        if sp.name not in used:
            continue
        level = "corpus level (one value per model)" if sp.name in corpus else "per item (mean and total over items)"
        name = sp.name + (f" (variant of {sp.variant_of})" if sp.variant_of else "")
        rows.append([name, level, sp.description, sp.source or "n/a"])
    if not rows:
        return None
    return Section(
        "definitions",
        "Metric definitions",
        [
            Text("The definition each figure in this report uses:"),
            Table(["metric", "figure per model", "definition", "source"], rows, name="definitions"),
        ],
    )


def retrieval_section(scores: list[Score], limit: int = 40) -> Section | None:
    """ "Retrieved works" section: for each ``retrieval_novelty`` score (METRICS.md E), the item, the target
    model, S_inn and the works retrieved with their cosine similarity to the idea (at most ``limit`` rows; the
    rest are in scores.jsonl).  None when the run has no such score."""
    rows = []
    for s in scores:
        if s.metric != "retrieval_novelty":
            continue
        ev = next((e for e in (s.evidence or []) if isinstance(e, RetrievalEvidence)), None)
        if ev is None:
            continue
        works = (
            "; ".join(
                f"{w.get('title', '')} ({w['similarity']:.3f})" if "similarity" in w else str(w.get("title"))
                for w in ev.works
            )
            or "none found"
        )
        value = fmt(s.value) if s.value is not None else (s.error or s.status)
        rows.append([s.item_id, s.model, value, works, ev.query])
    if not rows:
        return None
    blocks: list[Any] = [
        Text(
            "Works retrieved for each idea (n = 4 requested; cosine similarity to the idea with the run's "
            "embedder) and the query used; S_inn = clip(10 (1 - mean similarity), 0, 10)."
        ),
        Table(
            ["item", "target model", "S_inn (0-10)", "retrieved works (similarity)", "query"],
            rows[:limit],
            name="retrieved",
        ),
    ]
    if len(rows) > limit:
        blocks.append(Text(f"{len(rows) - limit} more rows in scores.jsonl (evidence of retrieval_novelty)."))
    return Section("retrieval", "Retrieved works", blocks)


def recheck_section(responses: list[Response], embedding_model: str = "minilm") -> Section | None:
    """``--recheck``: the "Stored judgements rechecked" section (:mod:`sgieval.metric_pool.recheck`), with its
    Answer sentence under ``answer["caveats"]``; None when no response carries stored SciAidanBench records."""
    from ..metric_pool import get_embedder
    from ..metric_pool.recheck import ranking_changes, recheck

    embedder = get_embedder(embedding_model)
    rows = recheck(responses, embedder)
    if not rows:
        return None
    stored, ours, changed = ranking_changes(rows)
    name = getattr(embedder, "name", embedding_model)
    table = Table(
        [
            "target model",
            "questions",
            "answers compared",
            "Spearman rho",
            "same decision at 0.15",
            "accepted (stored)",
            "accepted (re-decided)",
        ],
        [
            [
                r.model,
                r.n_questions,
                r.n_answers,
                "n/a" if r.rho is None else f"{r.rho:.3f}",
                "n/a" if r.same_share is None else f"{r.same_share:.1%}",
                r.stored_accepted,
                r.recheck_accepted,
            ]
            for r in rows
        ],
        name="recheck",
    )
    sentence = (
        f"Rechecked with {name}, the stored acceptance decisions "
        + ("would change the ranking order" if changed else "give the same ranking order")
        + "."
    )
    return Section(
        "recheck",
        "Stored judgements rechecked",
        [
            Text(
                f"Each stored answer's novelty recomputed with {name} (1 - max cosine against the earlier answers "
                "of its list, METRICS.md B.3) against the stored text-embedding-3-large value, over the non-first "
                "answers; accepted answers re-decided with the B.5 stop rule (stored coherence, recomputed "
                "novelty; a list the recheck would continue past its stored end counts as a lower bound)."
            ),
            table,
            Text(
                f"Ranking by accepted answers: stored {' > '.join(stored)}; re-decided {' > '.join(ours)} "
                + ("(the order changes)." if changed else "(same order).")
            ),
        ],
        answer={"caveats": [sentence]},
    )


def cached_share_text(summ: dict[str, Any]) -> str:
    """The sentence on prompt caching of a ledger summary, "" when no provider reported cached input tokens.

    Args:
        summ: ``Ledger.summary()``: ``rows`` and ``total`` with ``input_tokens`` and ``cache_read_tokens`` (the
            input tokens a provider served from its prompt cache, part of ``input_tokens``).

    Returns:
        E.g. "Prompt caching: 1,200 of 2,000 input tokens (60.0%) were served from the providers' prompt caches,
        priced at the cached rate where the price is known (...); by model and role: openai:judge (judge) 75.0% of
        1,600."
    """
    total = summ.get("total") or {}
    cached, inp = int(total.get("cache_read_tokens") or 0), int(total.get("input_tokens") or 0)
    if not cached or not inp:
        return ""
    parts = [
        f"{r['model']} ({r['role']}) {100 * r['cache_read_tokens'] / r['input_tokens']:.1f}% of {r['input_tokens']:,}"
        for r in summ.get("rows") or []
        if r.get("cache_read_tokens") and r.get("input_tokens")
    ]
    return (
        f"Prompt caching: {cached:,} of {inp:,} input tokens ({100 * cached / inp:.1f}%) were served from the "
        "providers' prompt caches, priced at the cached rate where the price is known (a price given with --price "
        "applies to every input token); by model and role: " + "; ".join(parts) + "."
    )


def usage_section(summ: dict[str, Any]) -> Section:
    """ "Cost and usage" from a ledger summary (``models.accounting.Ledger.summary()``: ``rows`` and ``total``
    per (model, role) with calls, cached, failed, tokens, latency in s, cost in USD or None; ``budget_usd``,
    ``spent_usd``, ``stopped``; ``prices``: where the prices come from; ``interrupted``: calls sent, never
    answered); ``estimate``: the estimate made before any call, shown beside the actual figures, also when the
    run made no call).  Unknown prices show as n/a, never 0."""
    if not summ.get("rows"):
        est = summ.get("estimate") if isinstance(summ.get("estimate"), dict) else None
        blocks_none: list[Any] = [
            Text(
                "No model calls were made (replayed responses and objective metrics only, or every call "
                "served from the cache)."
            )
        ]
        if est and est.get("rows"):  # calls were estimated, none was made (every one served from the cache)
            blocks_none += estimate_blocks(est, [])
        elif est:  # estimate.jsonl is a file of the run folder: data, its lines shown only when they are text
            lines = [str(x).strip().rstrip(".") for x in est.get("lines") or [] if isinstance(x, str) and x.strip()]
            if lines:
                blocks_none.append(Text(f"The estimate made before any call agrees: {'; '.join(lines)}."))
        return Section("usage", "Cost and usage", blocks_none)

    def row(t: dict[str, Any]) -> list[Any]:
        return [
            t["model"],
            t["role"],
            t["calls"],
            t["cached_calls"],
            t["failed_calls"],
            t["input_tokens"],
            t["output_tokens"],
            fmt(t["latency_s"]),
            "n/a" if t["cost"] is None else f"{t['cost']:.4f}",
        ]

    blocks: list[Any] = [
        Table(
            [
                "model",
                "role",
                "calls",
                "cached",
                "failed",
                "input tokens",
                "output tokens",
                "latency (s)",
                "cost (USD)",
            ],
            [row(t) for t in summ["rows"]] + [row(summ["total"])],
            name="usage",
        )
    ]
    cached_text = cached_share_text(summ)
    if cached_text:
        blocks.append(Text(cached_text))
    if summ.get("prices"):
        blocks.append(Text(summ["prices"]))
    blocks += estimate_blocks(summ.get("estimate"), summ["rows"])
    if summ.get("interrupted"):  # counted among the failed calls; what they cost is not in the totals
        blocks.append(
            Text(
                f"{summ['interrupted']} call(s) were interrupted: the process ended after their requests were sent "
                "and before their replies were recorded. They are counted as failed; their tokens and cost are "
                "unknown and not in the totals (the provider may have billed them)."
            )
        )
    if summ.get("budget_usd") is not None:
        text = f"Budget {summ['budget_usd']} USD; spent {summ['spent_usd']:.4f} USD in all."
        if summ.get("stopped"):
            st = summ["stopped"]
            text += (
                f" The budget was reached at {st.get('spent_usd', 0.0):.4f} USD, before a {st.get('role', '')} "
                f"call to {st.get('model', '')}; calls already in flight then finished and are counted."
            )
        blocks.append(Text(text))
    return Section("usage", "Cost and usage", blocks)


@report_section("usage", order=70)
def _usage_builder(ctx: ReportContext) -> Section | None:
    summ = ctx.options.get("usage")
    return usage_section(summ) if summ is not None else None


@report_section("reliability", order=80)
def _reliability_builder(ctx: ReportContext) -> Section | None:
    rows = ctx.options.get("reliability")
    if rows is None:
        rows = judge_reliability(
            ctx.scores, ctx.specs, seed=ctx.options.get("seed", 0), n_resamples=ctx.options.get("n_resamples", 1000)
        )
    return reliability_section(rows) if rows else None


@report_section("retrieval", order=90)
def _retrieval_builder(ctx: ReportContext) -> Section | None:
    return retrieval_section(ctx.grouped.get("retrieval_novelty", []))


@report_section("labels", order=85)
def _labels_builder(ctx: ReportContext) -> list[Section] | None:
    """Agreement with the researcher's labels and the prediction-powered means, for each metric with labels."""
    from ..core import RunStore

    labels = ctx.options.get("labels")
    if labels is None:
        labels = (
            RunStore(ctx.run_dir, read_only=True).read("labels") if (ctx.run_dir / "labels.jsonl").is_file() else []
        )
    if not labels:
        return None  # before the imports below: they load scipy.stats, which a run without labels never needs
    from ..metric_pool import label_estimates
    from ..reports import labels_sections

    labelled = {lab.metric for lab in labels}
    found = [label_estimates(ctx.scores, labels, sp) for sp in ctx.specs if sp.name in labelled]
    return labels_sections(found, live_judges=bool(ctx.judges))


@report_section("definitions", order=110)
def _definitions_builder(ctx: ReportContext) -> Section | None:
    return definitions_section(ctx.specs, ctx.scores)


@report_section("recheck", order=100)
def _recheck_builder(ctx: ReportContext) -> Section | None:
    if not ctx.options.get("recheck"):
        return None
    return recheck_section(ctx.responses, ctx.options.get("embedding_model", "minilm"))


def reliability_sentences(rows: list[dict[str, Any]], primary: str) -> str:
    """Sentences for the Answer: the verdict on the ranking metric's judges (else the first judged metric's),
    and every significant self-preference."""
    if not rows:
        return ""
    # an idea-generation dimension (idea_novelty) is judged through its votes (idea_novelty_win)
    main = next((r for r in rows if r["metric"] == primary), None) or next(
        (r for r in rows if r["metric"] == f"{primary}_win"), rows[0]
    )
    text = " " + main["verdict"]
    if main.get("retest_sentence"):
        text += " " + main["retest_sentence"]
    prefs = [p for r in rows for p in r["significant_self_preference"]]
    if prefs:
        text += " Self-preference: " + "; ".join(prefs) + "."
    return text


async def build_report(
    run_dir: Path,
    *,
    header: dict[str, Any],
    items: list[Item],
    responses: list[Response],
    scores: list[Score],
    specs: list[MetricSpec],
    primary: str,
    models: list[str],
    custom: set[str] | None = None,
    agent: NamedModel | None = None,
    n_resamples: int = 10000,
    seed: int = 0,
    warnings: list[str] | None = None,
    usage: dict[str, Any] | None = None,
    judges: list[str] | None = None,
    allow_self_judge: bool = False,
    focus: str | None = None,
    stand_in: str = "",
    recheck: bool = False,
    embedding_model: str = "minilm",
    settled: dict[str, Any] | None = None,
    added_scores: list[Score] | None = None,
    added_judges: list[str] | None = None,
) -> Path:
    """Write ``run_dir/report.md`` with its figures (``figures/ranking.png``, one ``figures/criteria_<rubric>.png``
    heatmap per rubric metric with criterion scores).

    The Answer ends with :func:`answer_facts` (also after an agent's narrative).

    Args:
        run_dir: the run folder.
        header: the run header (:func:`sgieval.agents.run_report.report_run` builds it).
        items: the selected items.
        responses: the target models' responses.
        scores: every score of those responses, corpus-level ones included.
        specs: the specs of the applied metrics.
        primary: the ranking metric (else the first of ``specs``).
        models: the target model names, in the run's order.
        custom: names of the custom rubric metrics.
        agent: the agent model that writes the narrative; None: the offline Answer.
        n_resamples: bootstrap resamples of each confidence interval (>= 1).
        seed: the bootstrap and permutation seed.
        warnings: sentences the report states at its top.
        usage: the "Cost and usage" data (:func:`sgieval.agents.run_report.usage_summary`).
        judges: judge model names (for the self-judging limitation; default none).
        allow_self_judge: whether ``--allow-self-judge`` was set.
        focus: the one model the request asks about (absolute answer).
        stand_in: why the ranking metric stands in for the asked quality.
        recheck: whether stored judgements were re-decided (``--recheck``).
        embedding_model: the embedder of novelty metrics, named in the report.
        settled: the stop record of an ``--until-settled`` run (:func:`sgieval.agents.settle.evaluate_until_settled`).
        added_scores: the scores of the judges added to the finished run (``added_judge_scores.jsonl``): shown
            beside the run's in "Added judges" and compared in "Judge reliability"; the ranking, the Answer's
            verdict and the other tables use ``scores`` alone.
        added_judges: the judges added to the finished run (``RunConfig.added_judges``).

    Returns:
        The path of ``report.md``.
    """
    from . import where  # noqa: F401 - registers the "Who wins where" section
    from . import settle  # noqa: F401 - registers the "Stopped when settled" section
    from . import added_judges as _added  # noqa: F401 - registers the "Added judges" section
    from ..metric_pool import with_added_judges

    spec = next((s for s in specs if s.name == primary), None) or specs[0]
    of_spec = [s for s in scores if s.metric == spec.name]  # the ranking metric's scores, read by the next two
    cov = coverage(of_spec, spec, models, len(items))
    if cov is not None and cov.differs and cov.shared:  # compare on the items every scored model has (D.16)
        of_spec = [s for s in of_spec if not s.ok or s.item_id in cov.shared or s.item_id == CORPUS]
    stats = order_stats(ranking_stats(of_spec, spec.name, models, n_resamples, seed), spec.higher_is_better)
    ranked = [s for s in stats if s.summary is not None]
    pairs = adjacent_pair_tests(of_spec, spec.name, ranked, n_resamples=n_resamples, seed=seed)
    groups = tie_groups(ranked, pairs)
    leader_tests: dict[str, dict[str, Any]] = {}
    if len(groups) > 1 and len(groups[0]) == 1 and len(groups[1]) > 1:  # the leader against each tied second
        best = groups[0][0]
        a = item_values(of_spec, best.model, spec.name)
        for other in groups[1]:
            b = item_values(of_spec, other.model, spec.name)
            shared = len(set(a) & set(b))
            pr = call_in_worker(paired_test, a, b, n_resamples=n_resamples, seed=seed) if shared >= 2 else None
            leader_tests[other.model] = pair_entry(best, other, shared, pr)
    reliabilities = judge_reliability(with_added_judges(scores, added_scores or []), specs, seed=seed)
    draft = assemble(
        run_dir,
        header=header,
        items=items,
        responses=responses,
        scores=scores,
        specs=specs,
        spec=spec,
        stats=stats,
        pairs=pairs,
        sgi=sgi_rows(scores, items, models),
        models=models,
        custom=custom,
        warnings=warnings,
        judges=judges,
        allow_self_judge=allow_self_judge,
        options={
            "usage": usage,
            "settled": settled,
            "reliability": reliabilities,
            "recheck": recheck,
            "embedding_model": embedding_model,
            "seed": seed,
            "n_resamples": n_resamples,
            "coverage": cov,
            "ranking_scores": of_spec,
            "added_judges": {"judges": list(added_judges or []), "scores": list(added_scores or [])},
        },
    )
    request = header.get("request", "")
    verdict = verdict_sentence(
        request, stats, spec, len(items), header.get("scope", ""), groups, cov, focus, pairs, leader_tests
    )
    one = focus is not None or len(stats) == 1
    answer = Answer(verdict, how_sure=[] if one else how_sure(stats, groups, pairs, leader_tests, spec.name))
    note = "" if one else order_note(pairs)
    if note:
        answer.how_sure.append(note)
    n_matching = header.get("n_matching")
    needed = (
        ""
        if one
        else items_needed_sentence(
            of_spec,
            spec,
            groups,
            pairs,
            usage,
            len(items),
            n_matching if isinstance(n_matching, int) else None,
            n_resamples=n_resamples,
        )
    )
    if needed:
        answer.more_items.append(needed)
    rel = reliability_sentences(reliabilities, spec.name).strip()
    if rel:
        answer.how_sure.append(rel)
    facts = answer_facts(
        scores,
        specs,
        spec,
        stats,
        judges=list(judges or []),
        allow_self_judge=allow_self_judge,
        stand_in=stand_in,
        focus=focus,
        leaders=[s.model for s in groups[0]] if groups else [],
    )
    for sec in draft.sections:  # what the sections add to the Answer
        answer.how_sure += sec.answer.get("how_sure", [])
        answer.where += sec.answer.get("where", [])
        answer.caveats += sec.answer.get("caveats", [])
        answer.where_first = answer.where_first or (sec.leads and bool(sec.answer.get("where")))
    answer.where += facts["where"]
    answer.where += variant_disagreements(
        scores, spec, specs, [s.model for s in ranked], n_resamples=n_resamples, seed=seed
    )
    answer.caveats = ranking_caveats(stats, groups, spec, cov) + facts["caveats"] + answer.caveats
    answer.caveats += draft.sgi_missing
    if agent is not None:
        known = [*models, *(sp.name for sp in specs)] + [
            str(v) for i in items for v in (i.discipline, i.direction, i.task, i.type, i.benchmark) if v
        ]
        text, notes = await llm_narrative(
            agent,
            request,
            draft.tables_text,
            header_facts(header, len(items), models),
            verdict=verdict,
            known=dict.fromkeys(known),
            models=models,
            winner=_separated_winner(groups, pairs, leader_tests),
        )
        if text:
            answer.summary, answer.summary_by = text, f"agent model {agent.name}"
            answer.stamp = (
                f"The summary was written by the agent model {agent.name}; {CHECKED}. The verdict and the other "
                "items are computed from the tables."
            )
        else:
            draft.limitations.append(
                "The agent's narrative failed the fact check twice and was left out; the Answer is computed from "
                "the tables. " + "; ".join(notes)
            )
    draft.data["answer"] = answer.to_dict()
    narrative = answer.markdown()
    return write_report_files(run_dir, draft, narrative)
