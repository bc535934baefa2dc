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

The template narrative is built from the same formatted numbers as the
tables.  With an agent model the narrative is written by the model and every
number in it must appear in the report's tables (checked in code); a
narrative that fails the check is regenerated once, then replaced by the
template narrative (issue 5).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from ..core import CORPUS, Item, MetricSpec, Response, RetrievalEvidence, Score
from ..core.offload import call
from ..metric_pool.aggregate import Summary, paired_test, summarize
from ..models.base import NamedModel
from ..models.calls import ainvoke, message_text
from ..reports.answer import (
    by_metric,
    dominant_item,
    judgement_sources,
    metric_tops,
    self_preference,
    sensitivity_sentence,
    tied_at_top,
)
from ..reports.build import (
    ModelStat,
    SgiRow,
    assemble,
    ci_overlap,
    count_phrase,
    fmt,
    fmt2,
    fmt_total,
    has_ci,
    item_values,
    not_applicable,
    order_stats,
    pair_entry,
    write_report,
)
from ..reports.render import markdown_table
from .metric_choice import variant_disagreements
from .where import where_report

__all__ = [
    "FIXED_NUMBERS_TEXT",
    "NARRATIVE_SYSTEM",
    "NUMBER",
    "adjacent_pair_tests",
    "answer_facts",
    "build_report",
    "fmt",
    "judge_reliability",
    "reliability_section",
    "reliability_sentences",
    "header_facts",
    "llm_narrative",
    "numbers_supported",
    "ranking_stats",
    "sgi_rows",
    "template_narrative",
]


# ----------------------------------------------------------------------------- statistics (metric pool)
def ranking_stats(scores: list[Score], metric: str, models: list[str], n_resamples: int, seed: int) -> list[ModelStat]:
    """One :class:`ModelStat` per model in ``models`` order: the summary
    (metric_pool.aggregate.summarize: mean, total, 95% BCa bootstrap CI with
    ``n_resamples`` resamples and ``seed``) of its ok item-level ``metric``
    scores, or of its corpus-level value when it has only that (with the CI
    the metric put in its details as ``ci_low``/``ci_high``, else none), or
    None; ``failed`` counts its failed scores (not-applicable ones excluded)."""
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
        out.append(ModelStat(m, call(summarize, vals, n_resamples=n_resamples, seed=seed) if vals else None, failed))
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
        pr = call(paired_test, a, b, n_resamples=n_resamples, seed=seed) if shared >= 2 else None
        out.append(pair_entry(hi, lo, shared, pr))
    return out


def sgi_rows(scores: list[Score], items: list[Item], models: list[str]) -> list[SgiRow] | None:
    """One SGI-Score computation per target model (METRICS.md A.6,
    metric_pool/sgi/sgi_score.py) as report rows; None when no item is from
    SGI-Bench.  ``missing`` names each missing term with its reason, e.g.
    "DE (no dry_passall_5 scores), WE (all 2 wet_final_score scores failed)"."""
    if not any(i.benchmark == "sgi-bench" for i in items):
        return None
    from ..metric_pool.sgi.sgi_score import sgi_score

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
    return (
        f" (95% CI {fmt2(st.stats.ci_low)} to {fmt2(st.stats.ci_high)})"
        if has_ci(st.stats)
        else " (a corpus-level value: no per-item CI)"
        if st.corpus
        else " (no CI: fewer than 2 items)"
    )


def focus_narrative(
    request: str, ranking: list[ModelStat], spec: MetricSpec, focus: str, scope: str, n_items: int
) -> str:
    """The absolute answer about one model (issue 17 item 4): its mean (95% CI)
    and total on ``spec``, then where it stands among the other evaluated
    models (its rank and the leader), never "ranks first" of a one-model list."""
    ranked = [s for s in ranking if s.summary is not None]
    me = next((s for s in ranked if s.model == focus), None)
    q = f'To "{request}": ' if request else ""
    if me is None:
        return f"{q}{focus} has no valid {spec.name} score on the {n_items} selected items; see Failures."
    total = f", total {fmt_total(me.stats.total, spec)}" if math.isinf(spec.range[1]) else ""
    where = f" ({scope})" if scope else ""
    text = (
        f"{q}**{focus}** scores a mean of {fmt2(me.stats.mean)} per item by {spec.name} (scale "
        f"{spec.scale_label}) on {count_phrase(me.stats.n)}{where}{_ci_text(me)}{total}."
    )
    others = [s for s in ranked if s.model != focus]
    if not others:
        return text + " No other model was evaluated, so this is an absolute score, not a ranking."
    rank = ranked.index(me) + 1
    lead = ranked[0] if ranked[0].model != focus else ranked[1]
    ties = [s.model for s in ranked if s.model != focus and s.stats.mean == me.stats.mean]
    text += (
        f" Among the {len(ranked)} evaluated models it ranks {_ordinal(rank)}"
        + (f" (tied with {', '.join(ties)})" if ties else "")
        + (
            f"; first is {lead.model} (mean {fmt2(lead.stats.mean)})."
            if rank > 1
            else f"; next is {lead.model} (mean {fmt2(lead.stats.mean)})."
        )
    )
    return text


def template_narrative(
    request: str,
    ranking: list[ModelStat],
    spec: MetricSpec,
    n_items: int,
    scope: str,
    comparison: dict[str, Any] | None,
    focus: str | None = None,
) -> str:
    """Answer the request from the ranking table's own numbers.

    The item count named is the leader's ``n`` for ``spec`` (items with an ok
    score of that metric), with the number of selected items beside it when
    they differ.  ``comparison``: the paired test of the top two
    (:func:`adjacent_pair_tests` entry; ``p`` None when it could not be run).
    Significance wording comes only from that paired test; without one the
    text says so and mentions CI overlap only when both CIs exist.  Models
    sharing the best mean exactly are stated as a tie.  ``focus`` (the one
    model the request asks about), or a single ranked model, gets the
    absolute answer of :func:`focus_narrative` instead of a ranking (also when only
    one target model was evaluated).
    """
    ranked = [s for s in ranking if s.summary is not None]
    if not ranked:
        return f"No target model has a valid {spec.name} score on the {n_items} selected items; see Failures."
    if focus or len(ranking) == 1:  # the request is about one model: an absolute answer, not a ranking
        return focus_narrative(request, ranking, spec, focus or ranking[0].model, scope, n_items)
    best = ranked[0]
    q = f'To "{request}": ' if request else ""
    total = f"total {fmt_total(best.stats.total, spec)}, " if math.isinf(spec.range[1]) else ""
    where = [scope] if scope else []
    if best.stats.n != n_items:
        where.append(f"{n_items} items selected")
    where_text = f" ({'; '.join(where)})" if where else ""
    tied = tied_at_top([(s.model, s.stats.mean) for s in ranked])
    if len(tied) > 1:
        text = (
            f"{q}{' and '.join(f'**{m}**' for m in tied)} tie for first by {spec.name} on "
            f"{count_phrase(best.stats.n)}{where_text}: mean {fmt2(best.stats.mean)} per item each, so the "
            "request has no single answer on this metric."
        )
    else:
        value = (
            f"{fmt2(best.stats.mean)}, one corpus-level value per model{_ci_text(best)}"
            if best.corpus  # e.g. a mean pooled over answers, or kappa: not a mean per item
            else f"{total}mean {fmt2(best.stats.mean)} per item{_ci_text(best)}"
        )
        text = f"{q}**{best.model}** ranks first by {spec.name} on {count_phrase(best.stats.n)}{where_text}: {value}."
    if len(ranked) > 1:
        order = " > ".join(s.model for s in ranked) if spec.higher_is_better else " < ".join(s.model for s in ranked)
        text += f" Full order ({'best first' if spec.higher_is_better else 'lowest first'}): {order}."
        second = ranked[1]
        if not best.corpus and best.stats.n != second.stats.n:
            text += (
                f" Coverage differs: {best.model} has {count_phrase(best.stats.n, 'scored item')} and "
                f"{second.model} {second.stats.n}; the paired test below uses only the items both have."
            )
        if len(tied) > 1:
            pass
        elif comparison and comparison.get("p") is not None:
            sig = "a significant" if comparison["p"] < 0.05 else "no significant"
            text += (
                f" Against the runner-up {second.model} (mean {fmt2(second.stats.mean)}), the paired test on "
                f"{comparison['n']} items gives p = {comparison['p_value']}: {sig} difference at the 5% level."
            )
        elif best.corpus:
            text += (
                f" No paired test against the runner-up {second.model} (mean {fmt2(second.stats.mean)}): "
                f"{spec.name} is one corpus-level value per model, with no per-item values to pair, so the order "
                "alone is not evidence of a difference."
            )
        else:
            shared = comparison["n"] if comparison else 0
            text += (
                f" No paired test against the runner-up {second.model} (mean {fmt2(second.stats.mean)}): "
                f"they share {count_phrase(shared, 'scored item')} and the test needs at least 2, so the order is not "
                "evidence of a difference."
            )
            if ci_overlap(best.stats, second.stats):
                text += " Their 95% CIs overlap."
    return text


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
) -> list[str]:
    """Sentences the Answer adds after the narrative (template or agent),
    computed in code (issue 17 items 1-3): the stand-in metric and why; other
    metrics that put another model first; a mean dominated by one item (with
    the median); the sensitivity of the order to censored or missing stored
    records; who judged (stored or live); self-preference."""
    ranked = [s for s in stats if s.summary is not None]
    names = [s.model for s in ranked]
    grouped = by_metric(scores)
    out: list[str] = []
    if stand_in:
        out.append(f"No metric here measures the asked quality directly: {stand_in}.")
    leaders = tied_at_top([(s.model, s.stats.mean) for s in ranked]) if ranked else []
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
            out.append(
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
    the narrative (issue 5: every number of the narrative must be in the report).
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


def header_facts(header: dict[str, Any], n_items: int, models: list[str]) -> str:
    """The run header's facts as one text (what a narrative may cite besides
    the tables): items selected, K, seed, target models and their count,
    judges, filters, plus :data:`FIXED_NUMBERS_TEXT`."""
    return (
        f"items selected: {n_items}; K: {header.get('k', 'all matches')}; seed: {header.get('seed', 0)}; "
        f"target models ({len(models)}): {', '.join(models)}; judge: {header.get('judges', 'none')}; "
        f"filters: {header.get('filters', 'none')}; {FIXED_NUMBERS_TEXT}"
    )


NARRATIVE_SYSTEM = """You write the answer paragraph of an evaluation report for a researcher.
Answer their question in 3-6 sentences using ONLY numbers that appear verbatim in the tables given.
Name the target models exactly as in the tables. Call a difference significant or not significant only from the
paired-test table (state its p); overlapping confidence intervals alone are not a test."""


async def llm_narrative(
    agent: NamedModel, request: str, tables_text: str, header_text: str = ""
) -> tuple[str | None, list[str]]:
    """A narrative from ``agent`` that passes the number check against
    ``tables_text`` and ``header_text`` (:func:`numbers_supported`), or None
    after two attempts; returns (narrative, notes)."""
    notes = []
    facts = f"\n\nRun facts:\n{header_text}" if header_text else ""
    msgs = [
        SystemMessage(content=NARRATIVE_SYSTEM),
        HumanMessage(content=f"Question: {request or 'Which model is best overall?'}\n\nTables:\n{tables_text}{facts}"),
    ]
    for attempt in (1, 2):
        try:
            text = message_text(await ainvoke(agent, msgs)).strip()
        except Exception as e:  # noqa: BLE001
            notes.append(f"narrative call failed: {e}")
            return None, notes
        bad = numbers_supported(text, tables_text, header_text)
        if text and not bad:
            return text, notes
        notes.append(f"narrative attempt {attempt} cited numbers not in the tables: {bad[:5]}")
        msgs = msgs + [
            HumanMessage(content=f"These numbers are not in the tables: {bad[:10]}. Rewrite using only table numbers.")
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


def reliability_section(rows: list[dict[str, Any]]) -> dict[str, str]:
    """The report's "Judge reliability" section (title, Markdown body) from :func:`judge_reliability` rows."""
    parts = [
        "Krippendorff's alpha (interval level for 0-10 and 0-100 scores, nominal for 0/1 labels) with a "
        "bootstrap 95% CI over units (item x target model); thresholds of Krippendorff (2004): >= 0.800 "
        "reliable, 0.667 to 0.800 tentative only, below 0.667 not reliable."
    ]
    for r in rows:
        parts.append(f"### {r['metric']}\n\n{r['verdict']}\n")
        if r.get("n_judges", 2) < 2:  # one judge: only its test-retest agreement and position bias apply
            if r["retest"]:
                parts.append(
                    "Test-retest (Krippendorff's alpha between a judge's repeated verdicts on the same "
                    "items, each repeat a coder, a failed repeat a missing value):\n\n"
                    + markdown_table(["judge", "repeats", "units", "alpha", "95% CI"], r["retest"])
                )
            if r["position"]:
                parts.append(f"Position bias: {r['position']}.")
            continue
        parts.append(markdown_table(["metric", "level", "judges", "units", "alpha", "95% CI"], r["agreement"]))
        if r["offsets"]:
            parts.append(
                "Each judge's mean offset from the panel mean (metric's scale):\n\n"
                + markdown_table(["judge", "mean offset", "95% CI", "units"], r["offsets"])
            )
        if r["leave_one_out"]:
            parts.append(
                "Leave one judge out (ranking by the remaining judges):\n\n"
                + markdown_table(
                    ["judge left out", "order (best first)", "top model changes", "order changes"], r["leave_one_out"]
                )
            )
        if r["self_preference"]:
            parts.append(
                "Self-preference (a judge scoring its own model's responses, minus the other "
                "judges' mean on the same items):\n\n"
                + markdown_table(
                    ["judge", "target", "model", "difference", "95% CI", "items", "significant"], r["self_preference"]
                )
            )
        else:
            parts.append("Self-preference: no judge is one of the ranked target models.")
        if r["position"]:
            parts.append(f"Position bias: {r['position']}.")
        if r["retest"]:
            parts.append(
                "Test-retest (Krippendorff's alpha between a judge's repeated verdicts on the same items, "
                "each repeat a coder, a failed repeat a missing value):\n\n"
                + markdown_table(["judge", "repeats", "units", "alpha", "95% CI"], r["retest"])
            )
    return {"title": "Judge reliability", "body": "\n\n".join(parts)}


def definitions_section(specs: list[MetricSpec], scores: list[Score]) -> dict[str, str] | None:
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
    body = "The definition each figure in this report uses:\n\n" + markdown_table(
        ["metric", "figure per model", "definition", "source"], rows
    )
    return {"title": "Metric definitions", "body": body}


def retrieval_section(scores: list[Score], limit: int = 40) -> dict[str, str] | None:
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
    body = (
        "Works retrieved for each idea (n = 4 requested; cosine similarity to the idea with the run's "
        "embedder) and the query used; S_inn = clip(10 (1 - mean similarity), 0, 10).\n\n"
        + markdown_table(
            ["item", "target model", "S_inn (0-10)", "retrieved works (similarity)", "query"], rows[:limit]
        )
    )
    if len(rows) > limit:
        body += f"\n\n{len(rows) - limit} more rows in scores.jsonl (evidence of retrieval_novelty)."
    return {"title": "Retrieved works", "body": body}


def recheck_section(responses: list[Response], embedding_model: str = "minilm") -> dict[str, Any] | None:
    """``--recheck``: the "Stored judgements rechecked" section and one Answer sentence
    (:mod:`sgieval.metric_pool.recheck`), or None when no response carries stored SciAidanBench records."""
    from ..metric_pool.embeddings import get_embedder
    from ..metric_pool.recheck import ranking_changes, recheck

    embedder = get_embedder(embedding_model)
    rows = recheck(responses, embedder)
    if not rows:
        return None
    stored, ours, changed = ranking_changes(rows)
    name = getattr(embedder, "name", embedding_model)
    table = markdown_table(
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
    )
    body = (
        f"Each stored answer's novelty recomputed with {name} (1 - max cosine against the earlier answers of its "
        "list, METRICS.md B.3) against the stored text-embedding-3-large value, over the non-first answers; "
        "accepted answers re-decided with the B.5 stop rule (stored coherence, recomputed novelty; a list the "
        "recheck would continue past its stored end counts as a lower bound).\n\n"
        + table
        + f"\n\nRanking by accepted answers: stored {' > '.join(stored)}; re-decided {' > '.join(ours)} "
        + ("(the order changes)." if changed else "(same order).")
    )
    sentence = (
        f"Rechecked with {name}, the stored acceptance decisions "
        + ("would change the ranking order" if changed else "give the same ranking order")
        + "."
    )
    return {"section": {"title": "Stored judgements rechecked", "body": body}, "sentence": sentence}


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
    extra_sections: list[dict[str, str]] | None = None,
    judges: list[str] | None = None,
    allow_self_judge: bool = False,
    focus: str | None = None,
    stand_in: str = "",
    recheck: bool = False,
    embedding_model: str = "minilm",
) -> Path:
    """Write ``run_dir/report.md`` (and ``figures/ranking.png``, one
    ``figures/criteria_<rubric>.png`` heatmap per rubric metric with criterion
    scores); returns its path.

    The ranking metric is ``primary`` (else the first of ``specs``).
    ``judges``: judge model names (for the self-judging limitation; default
    none); ``allow_self_judge``: whether ``--allow-self-judge`` was set;
    ``focus``: the one model the request asks about (absolute answer);
    ``stand_in``: why the ranking metric stands in for the asked quality.
    The Answer ends with :func:`answer_facts` (also after an agent's narrative).
    """
    spec = next((s for s in specs if s.name == primary), None) or specs[0]
    of_spec = [s for s in scores if s.metric == spec.name]  # the ranking metric's scores, read by the next two
    stats = order_stats(ranking_stats(of_spec, spec.name, models, n_resamples, seed), spec.higher_is_better)
    ranked = [s for s in stats if s.summary is not None]
    pairs = adjacent_pair_tests(of_spec, spec.name, ranked, n_resamples=n_resamples, seed=seed)
    reliabilities = judge_reliability(scores, specs, seed=seed)
    retrieved = retrieval_section(scores)
    rechecked = recheck_section(responses, embedding_model) if recheck else None
    where = where_report(
        header.get("request", ""),
        items,
        of_spec,
        spec,
        [(s.model, s.stats.mean) for s in ranked],
        n_resamples=n_resamples,
        seed=seed,
    )
    sections = [
        *([where.section] if where else []),
        *(extra_sections or []),
        *([reliability_section(reliabilities)] if reliabilities else []),
        *([retrieved] if retrieved else []),
        *([rechecked["section"]] if rechecked else []),
        *([defined] if (defined := definitions_section(specs, scores)) else []),
    ]
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
        extra_sections=sections,
        judges=judges,
        allow_self_judge=allow_self_judge,
    )
    narrative = template_narrative(
        header.get("request", ""), stats, spec, len(items), header.get("scope", ""), draft.top, focus=focus
    )
    if where and where.sentences:  # a request asking where the models differ reads that first
        narrative = (
            " ".join(where.sentences) + " " + narrative if where.leads else narrative + " " + " ".join(where.sentences)
        )
    narrative += reliability_sentences(reliabilities, spec.name)
    if rechecked:
        narrative += " " + rechecked["sentence"]
    if draft.sgi_missing:
        narrative += " " + " ".join(draft.sgi_missing)
    if agent is not None:
        text, notes = await llm_narrative(
            agent, header.get("request", ""), draft.tables_text, header_facts(header, len(items), models)
        )
        if text:
            narrative = f"{text}\n\n*(Narrative written by the agent model {agent.name}; every number checked against the tables.)*"
        else:
            draft.limitations.append(
                "The agent's narrative failed the number check twice; the template narrative is shown. "
                + "; ".join(notes)
            )
    facts = answer_facts(
        scores,
        specs,
        spec,
        stats,
        judges=list(judges or []),
        allow_self_judge=allow_self_judge,
        stand_in=stand_in,
        focus=focus,
    )
    facts += variant_disagreements(scores, spec, specs, [s.model for s in ranked], n_resamples=n_resamples, seed=seed)
    if facts:
        narrative += "\n\n" + " ".join(facts)
    return write_report(run_dir, draft, narrative)
