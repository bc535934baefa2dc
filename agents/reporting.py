"""Reporting agent (SGI-Bench paper, arXiv 2512.16969, section 3, agent 4): sets on the report context the statistics
that need the metric pool, and checks an agent model's summary against the report (:func:`build_report`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

from langchain_core.messages import HumanMessage, SystemMessage

from ..core import CORPUS, Item, MetricSpec, Response, Score, call_in_worker
from ..metric_pool import FACETS, METHOD, Summary, facet_winners, get_embedder, items_to_separate, lead_sources
from ..metric_pool import order_departures, holm, paired_test, sgi_score, summarize, with_added_judges
from ..metric_pool.recheck import ranking_changes, recheck
from ..metric_pool.reliability import reliability, reliability_rows
from ..models import NamedModel, ainvoke, message_text, prompt_scope
from ..reports import CHECKED, NARRATIVE_SYSTEM, ModelStat, RecheckResult, ReportContext, SgiRow, assemble
from ..reports import by_metric, compose_answer, count_phrase, coverage, header_facts, item_values, names_supported
from ..reports import not_applicable, numbers_supported, order_claims_supported, order_stats, pair_entry
from ..reports import separated_winner, unscored_reason, write_report_files
from .estimate import estimate_blocks
from .metric_choice import variant_disagreements


def ranking_stats(scores: list[Score], metric: str, models: list[str], n_resamples: int, seed: int) -> list[ModelStat]:
    """One :class:`ModelStat` per model: the summary (metric_pool.stats.summarize: mean, total, 95% BCa bootstrap CI)
    of its ok item-level ``metric`` scores, else its corpus-level value, else None with the reason."""
    mine: dict[str, list[Score]] = {m: [] for m in models}
    for s in scores:  # one pass (scores may hold other metrics' too)
        if s.metric == metric and s.model in mine:
            mine[s.model].append(s)
    out = []
    for m in models:
        vals = [s.value for s in mine[m] if s.ok and s.value is not None and s.item_id != CORPUS]
        failed = sum(1 for s in mine[m] if not s.ok and not not_applicable(s))
        corpus = [s for s in mine[m] if s.ok and s.value is not None and s.item_id == CORPUS]
        if vals:
            out.append(ModelStat(m, call_in_worker(summarize, vals, n_resamples=n_resamples, seed=seed), failed))
        elif corpus:  # a corpus-level metric (e.g. kappa): one value, no per-item CI
            v, d = float(corpus[0].value or 0.0), corpus[0].details
            # a CI the metric computed itself (a pooled mean's bootstrap over questions), else none
            lo, hi = float(d.get("ci_low", math.nan)), float(d.get("ci_high", math.nan))
            summary = Summary(n=int(d.get("n", 0) or 0), mean=v, total=v, std=math.nan, ci_low=lo, ci_high=hi)
            out.append(ModelStat(m, summary, failed, corpus=True))
        else:
            out.append(ModelStat(m, None, failed, reason=unscored_reason(mine[m])))
    return out


def _pair_test(scores: list[Score], metric: str, hi: ModelStat, lo: ModelStat, n_resamples: int, seed: int) -> Any:
    """The ``pair_entry`` of ``hi`` against ``lo`` over the items both scored (``p`` None under 2 shared items)."""
    a, b = item_values(scores, hi.model, metric), item_values(scores, lo.model, metric)
    shared = len(set(a) & set(b))
    pr = call_in_worker(paired_test, a, b, n_resamples=n_resamples, seed=seed) if shared >= 2 else None
    return pair_entry(hi, lo, shared, pr)


def adjacent_pair_tests(
    scores: list[Score], metric: str, ranked: list[ModelStat], *, n_resamples: int, seed: int
) -> list[dict[str, Any]]:
    """Paired test (metric_pool.stats.paired_test, permutation, two-sided, p not adjusted) of each adjacent pair of
    ``ranked`` over the items both scored: one ``pair_entry`` dict per pair."""
    return [_pair_test(scores, metric, hi, lo, n_resamples, seed) for hi, lo in zip(ranked, ranked[1:])]


def _sgi_rows(scores: list[Score], items: list[Item], models: list[str]) -> list[SgiRow] | None:
    """One SGI-Score row per target model (METRICS.md A.6), ``missing`` naming each missing term and why; None without
    SGI-Bench items."""
    if not any(i.benchmark == "sgi-bench" for i in items):
        return None
    by_id = {i.id: i for i in items}
    rows = []
    for m in models:
        res = sgi_score([s for s in scores if s.model == m], by_id, model=m)
        missing = [f"{t.label} ({t.reason})" for t in res.terms.values() if t.missing]
        rows.append(SgiRow(m, res.sgi_score, res.summary(), "" if res.sgi_score is not None else ", ".join(missing)))
    return rows


class PoolStatistics:
    """The metric pool's computations the report's sections and Answer call (:class:`~sgieval.reports.Statistics`)."""

    facets = FACETS
    power_method = METHOD
    facet_winners = staticmethod(facet_winners)
    lead_sources = staticmethod(lead_sources)
    order_departures = staticmethod(order_departures)
    items_to_separate = staticmethod(items_to_separate)
    paired_test = staticmethod(paired_test)
    holm = staticmethod(holm)

    @staticmethod
    def label_estimates(scores: list[Score], labels: list[Any], spec: MetricSpec) -> Any:
        """``metric_pool.labels.label_estimates`` (scipy loads only for a run with labels)."""
        from ..metric_pool import label_estimates  # loads scipy.stats: only for a run with labels

        return label_estimates(scores, labels, spec)

    @staticmethod
    def recheck(responses: list[Response], embedding_model: str) -> RecheckResult | None:
        """The stored judgements re-decided with ``embedding_model`` (``--recheck``), or None."""
        embedder = get_embedder(embedding_model)
        rows = recheck(responses, embedder)
        if not rows:
            return None
        stored, ours, changed = ranking_changes(rows)
        return RecheckResult(getattr(embedder, "name", embedding_model), rows, stored, ours, changed)


POOL = PoolStatistics()
"""The metric pool's computations, for :attr:`ReportContext.pool`."""


def add_statistics(ctx: ReportContext) -> ReportContext:
    """Set on ``ctx`` the statistics its sections and Answer read: the ranking (compared on the items every scored
    model has when coverage differs, METRICS.md D.16), its adjacent-pair tests, the leader against each model tied
    for second, SGI-Score rows, judge reliability (with the added judges), the usage estimate and :data:`POOL`.

    Args:
        ctx: the report context with the run's records and settings.

    Returns:
        ``ctx``.
    """
    spec, models = ctx.spec, ctx.models
    of_spec = [s for s in ctx.scores if s.metric == spec.name]
    ctx.coverage = cov = coverage(of_spec, spec, models, len(ctx.items))
    if cov is not None and cov.differs and cov.shared:  # compare on the items every scored model has (D.16)
        of_spec = [s for s in of_spec if not s.ok or s.item_id in cov.shared or s.item_id == CORPUS]
    ctx.ranking_scores = of_spec
    n, seed = ctx.n_resamples, ctx.seed
    ctx.stats = order_stats(ranking_stats(of_spec, spec.name, models, n, seed), spec.higher_is_better)
    ctx.pairs = adjacent_pair_tests(of_spec, spec.name, ctx.ranked, n_resamples=n, seed=seed)
    groups, ctx.leader_tests = ctx.groups, {}
    if len(groups) > 1 and len(groups[0]) == 1 and len(groups[1]) > 1:  # the leader alone vs each tied for second
        ctx.leader_tests = {o.model: _pair_test(of_spec, spec.name, groups[0][0], o, n, seed) for o in groups[1]}
    # judge reliability of each judge or rubric metric that a panel of two or more judges scored
    judged = by_metric(with_added_judges(ctx.scores, ctx.added_scores))
    found = (
        reliability([s for s in judged.get(sp.name, []) if s.item_id != CORPUS], sp, n_resamples=1000, seed=seed)
        for sp in ctx.specs
        if sp.kind in ("judge", "rubric")
    )
    ctx.reliability = [reliability_rows(rel) for rel in found if rel is not None]
    ctx.sgi = _sgi_rows(ctx.scores, ctx.items, models)
    usage = ctx.usage or {}  # the estimate made before any call, beside the ledger's figures
    ctx.usage_estimate = estimate_blocks(usage.get("estimate"), usage.get("rows") or []) if usage else []
    ctx.pool = POOL
    return ctx


async def _llm_narrative(
    agent: NamedModel, request: str, tables_text: str, header_text: str = "", *, verdict: str = "",
    known: Iterable[str] = (), models: Iterable[str] = (), winner: str | None = None,
) -> tuple[str | None, list[str]]:  # fmt: skip
    """(summary or None, notes): ``agent``'s text once every number and name it cites is in ``tables_text``,
    ``header_text``, ``request`` or ``known`` and its order claims match the paired tests (``winner``); a failing
    text is regenerated once with what failed."""
    notes = []
    known = list(known)
    facts = f"\n\nRun facts:\n{header_text}" if header_text else ""
    fixed = f"\n\nFixed verdict (shown before your text):\n{verdict}" if verdict else ""
    question = f"Question: {request or 'Which model is best overall?'}{fixed}\n\nTables:\n{tables_text}{facts}"
    msgs = [SystemMessage(content=NARRATIVE_SYSTEM), HumanMessage(content=question)]
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
        n_claims = count_phrase(len(claims), "sentence")
        failed = [  # (found, said in the note, told the agent)
            (not text, "was empty", ""),
            (bad, f"cited numbers not in the tables: {bad[:5]}", f"These numbers are not in the tables: {bad[:10]}."),
            (
                unknown,
                f"named models, metrics or facet values not in the report: {unknown[:5]}",
                f"These names are not in the report: {unknown[:10]}.",
            ),
            (
                claims,
                f"claimed an order of models the paired tests do not establish ({n_claims})",
                (
                    "These sentences claim an order of models the paired tests do not establish (see the fixed "
                    f"verdict): {claims[:5]}."
                ),
            ),
        ]
        notes.append(f"narrative attempt {attempt} " + " and ".join(said for found, said, _ in failed if found))
        fix = [told for found, _, told in failed if found and told]
        again = " ".join(fix or ["The text was empty."]) + " Rewrite using only the tables' numbers and names."
        msgs = [*msgs, HumanMessage(content=again)]
    return None, notes


async def build_report(ctx: ReportContext, agent: NamedModel | None = None) -> Path:
    """Write ``ctx.run_dir/report.md`` and ``report.json`` with their figures (``figures/ranking.png``, one
    ``figures/criteria_<rubric>.png`` heatmap per rubric metric with criterion scores).

    Args:
        ctx: the run's records and report settings (:class:`~sgieval.reports.ReportContext`); its statistics are
            computed here (:func:`add_statistics`).
        agent: the agent model that writes the Answer's summary; None: the Answer is computed from the tables only.

    Returns:
        The path of ``report.md``.
    """
    add_statistics(ctx)
    draft = assemble(ctx)
    names = [s.model for s in ctx.ranked]
    variants = variant_disagreements(ctx.scores, ctx.spec, ctx.specs, names, n_resamples=ctx.n_resamples, seed=ctx.seed)
    answer = compose_answer(ctx, draft.sections, variants, draft.sgi_missing)
    if agent is not None:
        models, items = ctx.models, ctx.items
        known = [*models, *(sp.name for sp in ctx.specs)] + [
            str(v) for i in items for v in (i.discipline, i.direction, i.task, i.type, i.benchmark) if v
        ]
        text, notes = await _llm_narrative(
            agent,
            ctx.request,
            draft.tables_text + (f"\n{answer.lead}" if answer.lead else ""),  # the kind's answer may be restated
            header_facts(ctx.header, len(items), models),
            verdict=answer.verdict,
            known=dict.fromkeys(known),
            models=models,
            winner=separated_winner(ctx.groups, ctx.pairs, ctx.leader_tests),
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
    return write_report_files(ctx.run_dir, draft, answer.markdown())
