"""Reporting agent (SGI-Bench paper, arXiv 2512.16969, section 3, agent 4).

scores + rationales + metrics -> ``report.md``: run header, ranking with
mean, total and 95% bootstrap CI per target model, breakdowns by discipline
and task, a bar chart, a paired comparison of the top two, custom metrics
beside the predefined ones (marked *custom*), a per-criterion breakdown of
every rubric metric (table + heatmap PNG of model x criterion means, 0-10,
from ``Score.details["criteria"]``), a paired permutation test of every
adjacent pair of the ranking (metric_pool.aggregate.paired_test over the
items both models scored), limitations (sample size, judge identity,
self-judging, adjacent pairs the paired test does not separate -- CI overlap
is reported as overlap, never as a test --, why an SGI-Score is unavailable),
a narrative that answers the request, and the failures (not-applicable
scores, e.g. means over 0 accepted answers, kept apart).  Figures are
embedded only when their file was written.

The template narrative is built from the same formatted numbers as the
tables.  With an agent model the narrative is written by the model and every
number in it must appear in the report's tables (checked in code); a
narrative that fails the check is regenerated once, then replaced by the
template narrative (issue 5).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from ..core import Item, MetricSpec, Response, Score
from ..metric_pool.aggregate import Summary, paired_test, summarize
from ..metric_pool.base import CORPUS
from ..models.base import NamedModel
from ..models.calls import ainvoke, message_text
from ..reports.charts import heatmap, ranking_chart
from ..reports.render import markdown_table, render_report


def fmt(x: float | None, digits: int = 2) -> str:
    """Numbers as the report prints them: integers without decimals, others
    with ``digits`` decimals; None/NaN as "n/a"."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if float(x).is_integer():
        return str(int(x))
    return f"{x:.{digits}f}"


@dataclass
class ModelStat:
    """One target model's row of the ranking: ``summary`` None when it has no
    ok score; ``corpus`` True for a corpus-level metric (one value over
    ``summary.n`` items, e.g. quadratic weighted kappa: no per-item CI)."""

    model: str
    summary: Summary | None
    failed: int
    corpus: bool = False


def _stats(scores: list[Score], metric: str, models: list[str], n_resamples: int, seed: int) -> list[ModelStat]:
    out = []
    for m in models:
        vals = [s.value for s in scores if s.model == m and s.metric == metric and s.ok and s.item_id != CORPUS]
        failed = sum(1 for s in scores if s.model == m and s.metric == metric and not s.ok and not not_applicable(s))
        corpus = [s for s in scores if s.model == m and s.metric == metric and s.ok and s.item_id == CORPUS]
        if not vals and corpus:  # a corpus-level metric (e.g. kappa): one value, no per-item CI
            v = float(corpus[0].value)
            n = int(corpus[0].details.get("n", 0) or 0)
            out.append(ModelStat(m, Summary(n=n, mean=v, total=v, std=math.nan, ci_low=math.nan, ci_high=math.nan),
                                 failed, corpus=True))
            continue
        out.append(ModelStat(m, summarize(vals, n_resamples=n_resamples, seed=seed) if vals else None, failed))
    return out


def _order(stats: list[ModelStat], higher_is_better: bool) -> list[ModelStat]:
    have = [s for s in stats if s.summary is not None]
    none = [s for s in stats if s.summary is None]
    have.sort(key=lambda s: (-(s.summary.mean) if higher_is_better else s.summary.mean, s.model))
    return have + none


def _breakdown(items: dict[str, Item], scores: list[Score], metric: str, models: list[str], facet: str,
               show_total: bool) -> str | None:
    groups = sorted({getattr(items[s.item_id], facet) for s in scores if s.item_id in items})
    if len(groups) < 2 and facet != "discipline":
        return None
    rows = []
    for g in groups:
        row: list[Any] = [g or "(none)"]
        n_items = len({iid for iid, it in items.items() if getattr(it, facet) == g})
        row.append(n_items)
        for m in models:
            vals = [s.value for s in scores if s.model == m and s.metric == metric and s.ok and s.item_id in items
                    and getattr(items[s.item_id], facet) == g]
            if not vals:
                row.append("n/a")
            elif show_total:
                row.append(f"{fmt(sum(vals))} ({fmt(sum(vals) / len(vals))})")
            else:
                row.append(fmt(sum(vals) / len(vals)))
        rows.append(row)
    label = "total (mean)" if show_total else "mean"
    return markdown_table([facet, "items"] + [f"{m}: {label}" for m in models], rows)


def _cell_without_value(mine: list[Score]) -> str:
    """The "All metrics" cell of one (metric, model) without an ok value:
    "n/a" (no score), "not run", "not applicable (N)" or "all N failed (status[ k, status k])" with
    "; M not applicable" when some of the scores were not applicable."""
    if not mine:
        return "n/a"
    if all(s.status == "not_run" and not not_applicable(s) for s in mine):
        return "not run"
    if all(not_applicable(s) for s in mine):
        return f"not applicable ({len(mine)})"
    failed = [s for s in mine if not not_applicable(s)]
    by = Counter(s.status for s in failed)
    what = (next(iter(by)) if len(by) == 1
            else ", ".join(f"{k} {v}" for k, v in sorted(by.items())))
    na = len(mine) - len(failed)
    return f"all {len(failed)} failed ({what})" + (f"; {na} not applicable" if na else "")


def _metrics_table(scores: list[Score], specs: list[MetricSpec], models: list[str], custom: set[str]) -> str:
    """One row per metric of the run's metric list (``specs``), never dropped:
    the mean per item of the ok scores per target model, "x (corpus)" for a
    corpus-level value, else :func:`_cell_without_value` (e.g. "all 3 failed
    (judge_error)", "not run")."""
    rows = []
    for spec in specs:
        row: list[Any] = [spec.name + (" *custom*" if spec.name in custom else ""), spec.kind, spec.scale_label]
        for m in models:
            mine = [s for s in scores if s.model == m and s.metric == spec.name]
            item_vals = [s.value for s in mine if s.ok and s.item_id != CORPUS]
            corpus = [s for s in mine if s.ok and s.item_id == CORPUS]
            if item_vals:
                row.append(fmt(sum(item_vals) / len(item_vals)))
            elif corpus:
                row.append(fmt(corpus[0].value) + " (corpus)")
            else:
                row.append(_cell_without_value(mine))
        rows.append(row)
    return markdown_table(["metric", "kind", "scale"] + models, rows)


NOT_APPLICABLE_REASONS = (re.compile(r"^no accepted answers\b"),)
"""``not_run`` reasons that mean "nothing to score", not a failure: SciAidanBench
coherence / novelty means over a question with 0 accepted answers
(metric_pool/aidanbench.py: "no accepted answers with a <field>")."""


def not_applicable(s: Score) -> bool:
    """True for a Score that is not applicable rather than failed: status
    ``not_run`` with ``details["not_applicable"]`` true or a reason matching
    :data:`NOT_APPLICABLE_REASONS`."""
    if s.status != "not_run":
        return False
    if (s.details or {}).get("not_applicable"):
        return True
    return any(p.search(s.error or "") for p in NOT_APPLICABLE_REASONS)


def _failures(responses: list[Response], scores: list[Score], limit: int = 30) -> dict[str, Any]:
    """Failed responses and scores (status != ok) for the Failures section;
    not-applicable scores (:func:`not_applicable`) are kept apart in
    ``not_applicable`` ({total, by_metric, rows, more}) and not counted as failures."""
    rows, na = [], []
    for r in responses:
        if not r.ok:
            rows.append({"kind": "response", "item": r.item_id, "model": r.model, "metric": "",
                         "status": r.status, "reason": (r.error or "")[:200]})
    for s in scores:
        if not s.ok:
            row = {"kind": "score", "item": s.item_id, "model": s.model, "metric": s.metric,
                   "status": s.status, "reason": (s.error or "")[:200]}
            (na if not_applicable(s) else rows).append(row)
    by_status = Counter(r["status"] for r in rows)
    by_metric = Counter(r["metric"] for r in na)
    return {"total": len(rows), "by_status": ", ".join(f"{k}: {v}" for k, v in sorted(by_status.items())),
            "rows": rows[:limit], "more": max(0, len(rows) - limit),
            "not_applicable": {"total": len(na), "by_metric": ", ".join(f"{k}: {v}" for k, v in sorted(by_metric.items())),
                               "rows": na[:limit], "more": max(0, len(na) - limit)}}


def template_narrative(request: str, ranking: list[ModelStat], spec: MetricSpec, n_items: int, scope: str,
                       comparison: dict[str, Any] | None) -> str:
    """Answer the request from the ranking table's own numbers.

    The item count named is the leader's ``n`` for ``spec`` (items with an ok
    score of that metric), with the number of selected items beside it when
    they differ.  ``comparison``: the paired test of the top two
    (:func:`adjacent_pair_tests` entry; ``p`` None when it could not be run).
    Significance wording comes only from that paired test; without one the
    text says so and mentions CI overlap only when both CIs exist.
    """
    ranked = [s for s in ranking if s.summary is not None]
    if not ranked:
        return f"No target model has a valid {spec.name} score on the {n_items} selected items; see Failures."
    best = ranked[0]
    q = f'To "{request}": ' if request else ""
    total = f"total {fmt(best.summary.total)}, " if math.isinf(spec.range[1]) else ""
    where = [scope] if scope else []
    if best.summary.n != n_items:
        where.append(f"{n_items} items selected")
    where_text = f" ({'; '.join(where)})" if where else ""
    ci = (f" (95% CI {fmt(best.summary.ci_low)} to {fmt(best.summary.ci_high)})" if _has_ci(best.summary)
          else " (a corpus-level value: no per-item CI)" if best.corpus else " (no CI: fewer than 2 items)")
    text = (f"{q}**{best.model}** ranks first by {spec.name} on {_items(best.summary.n)}{where_text}: "
            f"{total}mean {fmt(best.summary.mean)} per item{ci}.")
    if len(ranked) > 1:
        order = " > ".join(s.model for s in ranked) if spec.higher_is_better else " < ".join(s.model for s in ranked)
        text += f" Full order ({'best first' if spec.higher_is_better else 'lowest first'}): {order}."
        second = ranked[1]
        if not best.corpus and best.summary.n != second.summary.n:
            text += (f" Coverage differs: {best.model} has {_items(best.summary.n, 'scored item')} and "
                     f"{second.model} {second.summary.n}; the paired test below uses only the items both have.")
        if comparison and comparison.get("p") is not None:
            sig = "a significant" if comparison["p"] < 0.05 else "no significant"
            text += (f" Against the runner-up {second.model} (mean {fmt(second.summary.mean)}), the paired test on "
                     f"{comparison['n']} items gives p = {comparison['p_value']}: {sig} difference at the 5% level.")
        else:
            shared = comparison["n"] if comparison else 0
            text += (f" No paired test against the runner-up {second.model} (mean {fmt(second.summary.mean)}): "
                     f"they share {_items(shared, 'scored item')} and the test needs at least 2, so the order is not "
                     "evidence of a difference.")
            if _overlap(best.summary, second.summary):
                text += " Their 95% CIs overlap."
    return text


def _items(n: int, noun: str = "item") -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _has_ci(a: Summary) -> bool:
    return not any(math.isnan(x) for x in (a.ci_low, a.ci_high))


def _overlap(a: Summary, b: Summary) -> bool | None:
    """Whether the two 95% CIs overlap; None when either CI is unavailable (NaN).
    Overlap is only overlap: it is not a significance test."""
    if not (_has_ci(a) and _has_ci(b)):
        return None
    return not (a.ci_low > b.ci_high or b.ci_low > a.ci_high)


def adjacent_pair_tests(scores: list[Score], metric: str, ranked: list[ModelStat], *, n_resamples: int,
                        seed: int) -> list[dict[str, Any]]:
    """Paired test (metric_pool.aggregate.paired_test, permutation, two-sided)
    of each adjacent pair of ``ranked`` (rank i vs rank i+1) over the items
    both have an ok item-level ``metric`` score for.

    One dict per pair: ``a``, ``b`` (model names, a ranked higher), ``n``
    shared items, and when n >= 2: ``method``, ``mean_diff`` (a minus b,
    formatted), ``ci`` (95% paired bootstrap CI of the difference), ``p_value``
    (formatted, 4 significant digits), ``p`` (float 0-1), ``significant``
    (p < 0.05); otherwise ``p`` is None.  ``overlap``: whether the marginal
    95% CIs overlap (None when a CI is unavailable) -- reported as overlap
    only, never as a test.  p-values are not adjusted for multiple comparisons.
    """
    def vals(model: str) -> dict[str, float]:
        return {s.item_id: float(s.value) for s in scores
                if s.model == model and s.metric == metric and s.ok and s.item_id != CORPUS}

    out = []
    for hi, lo in zip(ranked, ranked[1:]):
        a, b = vals(hi.model), vals(lo.model)
        shared = len(set(a) & set(b))
        d: dict[str, Any] = {"a": hi.model, "b": lo.model, "n": shared, "p": None,
                             "overlap": _overlap(hi.summary, lo.summary)}
        if shared >= 2:
            pr = paired_test(a, b, n_resamples=n_resamples, seed=seed)
            d.update(n=pr.n, method=f"{pr.method}, {hi.model} minus {lo.model}", mean_diff=fmt(pr.mean_diff),
                     ci=f"{fmt(pr.ci_low)} to {fmt(pr.ci_high)}", p_value=f"{pr.p_value:.4g}", p=pr.p_value,
                     significant=pr.p_value < 0.05)
        out.append(d)
    return out


def _pairs_table(pairs: list[dict[str, Any]]) -> str | None:
    if not pairs:
        return None
    rows = []
    for d in pairs:
        if d["p"] is None:
            rows.append([f"{d['a']} vs {d['b']}", d["n"], "n/a", "n/a", "n/a", "not tested (needs 2 shared items)"])
        else:
            rows.append([f"{d['a']} vs {d['b']}", d["n"], d["mean_diff"], d["ci"], d["p_value"],
                         "significant" if d["significant"] else "not significant"])
    return markdown_table(["adjacent ranks (paired permutation test)", "shared items", "mean difference (upper minus lower)",
                           "95% CI of difference", "p", "at the 5% level"], rows)


def _pair_limitations(pairs: list[dict[str, Any]], metric: str) -> list[str]:
    """Limitation lines from the adjacent-pair paired tests: every pair the test
    does not separate, every pair it cannot test, and every pair whose marginal
    CIs overlap although the paired test separates them."""
    out = []
    for d in pairs:
        ab = f"{d['a']} and {d['b']}"
        overlap = "; their 95% CIs overlap" if d["overlap"] else ""
        if d["p"] is None:
            out.append(f"{ab}: not compared by a paired test on {metric} ({_items(d['n'], 'shared scored item')}; "
                       f"at least 2 needed){overlap}.")
        elif not d["significant"]:
            out.append(f"{ab}: no significant difference on {metric} (paired permutation test over {d['n']} shared "
                       f"items, p = {d['p_value']}){overlap}.")
        elif d["overlap"]:
            out.append(f"{ab}: their 95% CIs on {metric} overlap, but the paired permutation test over {d['n']} "
                       f"shared items finds a significant difference (p = {d['p_value']}).")
    if sum(d["p"] is not None for d in pairs) > 1:
        out.append("Adjacent-pair p-values are not adjusted for multiple comparisons.")
    return out


def sgi_section(scores: list[Score], items: list[Item], models: list[str]) -> tuple[str | None, list[str]]:
    """The SGI-Score table and why it is unavailable, from one SGI-Score
    computation per target model (METRICS.md A.6, metric_pool/sgi/sgi_score.py).

    Returns ``(table, unavailable)``: ``table`` is the Markdown table of
    SGI-Score (0-100) and per-task terms per target model (None when no item is
    from SGI-Bench); ``unavailable`` has one line per group of target models with
    the same missing terms, e.g. "SGI-Score not available for m-a: missing DE (no
    dry_passall_5 scores), WE (all 2 wet_final_score scores failed)." (empty when
    every model has an SGI-Score)."""
    if not any(i.benchmark == "sgi-bench" for i in items):
        return None, []
    from ..metric_pool.sgi.sgi_score import sgi_score

    by_id = {i.id: i for i in items}
    rows = []
    why: dict[str, list[str]] = {}
    for m in models:
        res = sgi_score([s for s in scores if s.model == m], by_id, model=m)
        rows.append([m, fmt(res.sgi_score) if res.sgi_score is not None else "missing tasks", res.summary()])
        if res.sgi_score is None:
            reason = ", ".join(f"{t.label} ({t.reason})" for t in res.terms.values() if t.missing)
            why.setdefault(reason, []).append(m)
    table = markdown_table(["target model", "SGI-Score (0-100)", "per task (0-100)"], rows)
    return table, [f"SGI-Score not available for {', '.join(ms)}: missing {reason}; an SGI-Score needs an ok "
                   "score on all five SGI-Bench tasks." for reason, ms in why.items()]


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
    return (f"items selected: {n_items}; K: {header.get('k', 'all matches')}; seed: {header.get('seed', 0)}; "
            f"target models ({len(models)}): {', '.join(models)}; judge: {header.get('judges', 'none')}; "
            f"filters: {header.get('filters', 'none')}; {FIXED_NUMBERS_TEXT}")


NARRATIVE_SYSTEM = """You write the answer paragraph of an evaluation report for a researcher.
Answer their question in 3-6 sentences using ONLY numbers that appear verbatim in the tables given.
Name the target models exactly as in the tables. Call a difference significant or not significant only from the
paired-test table (state its p); overlapping confidence intervals alone are not a test."""


async def llm_narrative(agent: NamedModel, request: str, tables_text: str,
                        header_text: str = "") -> tuple[str | None, list[str]]:
    """A narrative from ``agent`` that passes the number check against
    ``tables_text`` and ``header_text`` (:func:`numbers_supported`), or None
    after two attempts; returns (narrative, notes)."""
    notes = []
    facts = f"\n\nRun facts:\n{header_text}" if header_text else ""
    msgs = [SystemMessage(content=NARRATIVE_SYSTEM),
            HumanMessage(content=f"Question: {request or 'Which model is best overall?'}\n\nTables:\n{tables_text}{facts}")]
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
        msgs = msgs + [HumanMessage(content=f"These numbers are not in the tables: {bad[:10]}. Rewrite using only table numbers.")]
    return None, notes


# --------------------------------------------------------------- rubric criteria
def criterion_scores(score: Score) -> dict[str, float]:
    """Per-criterion values (0-10) of a rubric Score from ``details["criteria"]``.

    Accepted shapes: ``{name: value}``, ``{name: {"score"|"value": v, ...}}``
    or ``[{"criterion"|"name": name, "score"|"value": v, ...}, ...]``.
    Entries without a numeric value (a failed criterion) are left out.
    """
    raw = (score.details or {}).get("criteria")
    out: dict[str, float] = {}
    if isinstance(raw, dict):
        pairs = list(raw.items())
    elif isinstance(raw, list):
        pairs = [(e.get("criterion", e.get("name")), e) for e in raw if isinstance(e, dict)]
    else:
        return out
    for name, v in pairs:
        if isinstance(v, dict):
            v = v.get("score", v.get("value"))
        if name is None or isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(float(v)):
            continue
        out[str(name)] = float(v)
    return out


def rubric_breakdown(scores: list[Score], rubric: Any, models: list[str]) -> dict[str, Any] | None:
    """Mean per-criterion score (0-10) per target model for one rubric metric.

    ``rubric``: a spec with ``name``, ``criteria`` (each with ``name``) and
    optional ``weights``.  Returns ``{"rubric", "criteria": [names],
    "weights": [w], "means": {model: [mean or NaN per criterion]},
    "n": {model: [count per criterion]}}`` over the ok item-level scores of
    that metric, or None when no score carries criterion values.
    """
    names = [c.name for c in rubric.criteria]
    weights = [float((getattr(rubric, "weights", None) or {}).get(n, 1.0)) for n in names]
    means: dict[str, list[float]] = {}
    counts: dict[str, list[int]] = {}
    found = False
    for m in models:
        per: dict[str, list[float]] = defaultdict(list)
        for s in scores:
            if s.model == m and s.metric == rubric.name and s.item_id != CORPUS:
                for c, v in criterion_scores(s).items():
                    per[c].append(v)
        found = found or any(per.values())
        means[m] = [sum(per[n]) / len(per[n]) if per[n] else float("nan") for n in names]
        counts[m] = [len(per[n]) for n in names]
    if not found:
        return None
    return {"rubric": rubric.name, "criteria": names, "weights": weights, "means": means, "n": counts}


def _figure(run_dir: Path, rel: str, notes: list[str], draw: Any, *args: Any, **kw: Any) -> str | None:
    """Draw a figure with ``draw(run_dir / rel, *args, **kw)``; returns ``rel``
    when the file was written, else None (the report then embeds no image) and
    a note in ``notes`` when drawing raised."""
    try:
        path = draw(run_dir / rel, *args, **kw)
    except Exception as e:  # noqa: BLE001 - a failed chart must not lose the report
        notes.append(f"Figure {rel} could not be drawn: {type(e).__name__}: {e}")
        return None
    return rel if path is not None and Path(path).is_file() else None


def _criteria_section(run_dir: Path, bd: dict[str, Any], notes: list[str] | None = None) -> dict[str, Any]:
    models = list(bd["means"])
    rows = []
    for j, c in enumerate(bd["criteria"]):
        rows.append([c, fmt(bd["weights"][j])] + [fmt(bd["means"][m][j]) if bd["n"][m][j] else "n/a" for m in models])
    table = markdown_table(["criterion", "weight"] + [f"{m}: mean (0-10)" for m in models], rows)
    fig = f"figures/criteria_{re.sub(r'[^A-Za-z0-9_.-]+', '_', bd['rubric'])}.png"
    fig_out = _figure(run_dir, fig, notes if notes is not None else [], heatmap, models, bd["criteria"],
                      [bd["means"][m] for m in models], title=f"{bd['rubric']}: mean score per criterion (0-10)")
    return {"rubric": bd["rubric"], "table": table, "figure": fig_out}


def _self_judged(judges: list[str], models: list[str]) -> list[str]:
    bare = lambda n: n.split(":", 1)[1] if ":" in n else n  # noqa: E731 - same rule as ScoringContext.judges_for
    targets = {bare(m) for m in models}
    return [j for j in judges if bare(j) in targets]


async def build_report(run_dir: Path, *, header: dict[str, Any], items: list[Item], responses: list[Response],
                       scores: list[Score], specs: list[MetricSpec], primary: str, models: list[str],
                       custom: set[str] | None = None, agent: NamedModel | None = None, n_resamples: int = 10000,
                       seed: int = 0, warnings: list[str] | None = None,
                       extra_sections: list[dict[str, str]] | None = None, judges: list[str] | None = None,
                       allow_self_judge: bool = False) -> Path:
    """Write ``run_dir/report.md`` (and ``figures/ranking.png``, one
    ``figures/criteria_<rubric>.png`` heatmap per rubric metric with criterion
    scores); returns its path.

    ``judges``: judge model names (for the self-judging limitation; default
    none); ``allow_self_judge``: whether ``--allow-self-judge`` was set.
    """
    custom = custom or set()
    by_id = {i.id: i for i in items}
    spec = next((s for s in specs if s.name == primary), None) or specs[0]
    stats = _order(_stats(scores, spec.name, models, n_resamples, seed), spec.higher_is_better)
    ranked = [s for s in stats if s.summary is not None]
    rows = []
    for rank, s in enumerate(stats, 1):
        sm = s.summary
        rows.append({"rank": rank if sm else "-", "model": s.model, "mean": fmt(sm.mean) if sm else "n/a",
                     "ci": ("corpus-level, no CI" if s.corpus and not _has_ci(sm) else
                            f"{fmt(sm.ci_low)} to {fmt(sm.ci_high)}") if sm else "n/a",
                     "total": fmt(sm.total) if sm else "n/a", "n": sm.n if sm else 0, "failed": s.failed})
    chart: str | None = None
    chart_notes: list[str] = []
    if ranked:
        chart = _figure(run_dir, "figures/ranking.png", chart_notes, ranking_chart, [s.model for s in ranked],
                        [s.summary.mean for s in ranked], [s.summary.ci_low for s in ranked],
                        [s.summary.ci_high for s in ranked], metric=spec.name, scale=spec.scale_label)
    pairs = adjacent_pair_tests(scores, spec.name, ranked, n_resamples=n_resamples, seed=seed)
    top = pairs[0] if pairs else None
    comparison = top if top and top["p"] is not None else None
    show_total = math.isinf(spec.range[1])
    model_order = [s.model for s in stats]
    tables = {
        "metrics": _metrics_table(scores, specs, model_order, custom),
        "discipline": _breakdown(by_id, scores, spec.name, model_order, "discipline", show_total),
        "task": _breakdown(by_id, scores, spec.name, model_order, "task", show_total),
        "pairs": _pairs_table(pairs),
    }
    limitations = [f"{len(items)} items selected; "
                   + ("CIs are wide at this sample size." if len(items) < 30 else "CIs are 95% BCa bootstrap intervals over items.")]
    judges = list(judges or [])
    if judges:
        limitations.append(f"Judge: {', '.join(judges)}. Judge and rubric scores are {'this one model' if len(judges) == 1 else 'these models'}'s "
                           "judgement: another judge may score differently, and a judge may favour models of its own family.")
    else:
        limitations.append(f"Judge: {header.get('judges', 'none')}. Judge metrics without a judge are reported as not run.")
    selfj = _self_judged(judges, models)
    if selfj and allow_self_judge:
        limitations.append(f"--allow-self-judge was set: {', '.join(selfj)} scored its own responses.")
    elif selfj:
        limitations.append(f"{', '.join(selfj)} is both judge and target: it did not score its own responses "
                           "(those judge metrics are not run; pass --allow-self-judge to allow it).")
    limitations += _pair_limitations(pairs, spec.name)
    sgi_table, sgi_missing = sgi_section(scores, items, models)
    limitations += sgi_missing
    criteria = []
    for r in specs:
        if getattr(r, "criteria", None):
            bd = rubric_breakdown(scores, r, model_order)
            if bd is not None:
                criteria.append(_criteria_section(run_dir, bd, chart_notes))
    limitations += chart_notes
    scope = header.get("scope", "")
    narrative = template_narrative(header.get("request", ""), stats, spec, len(items), scope, top)
    if sgi_missing:
        narrative += " " + " ".join(sgi_missing)
    tables_text = "\n".join([markdown_table(["rank", "model", "mean", "ci", "total", "n", "failed"],
                                            [list(r.values()) for r in rows])] + [t for t in tables.values() if t]
                            + [c["table"] for c in criteria]
                            + ([sgi_table] if sgi_table else [])
                            + ([f"n = {comparison['n']}, mean difference {comparison['mean_diff']}, "
                                f"p = {comparison['p_value']}"] if comparison else []))
    if agent is not None:
        text, notes = await llm_narrative(agent, header.get("request", ""), tables_text,
                                          header_facts(header, len(items), models))
        if text:
            narrative = f"{text}\n\n*(Narrative written by the agent model {agent.name}; every number checked against the tables.)*"
        else:
            limitations.append("The agent's narrative failed the number check twice; the template narrative is shown. "
                               + "; ".join(notes))
    data = {"header": header, "narrative": narrative,
            "ranking": {"metric": spec.name, "scale": spec.scale_label, "higher_is_better": spec.higher_is_better,
                        "rows": rows, "chart": chart},
            "comparison": comparison, "sgi": sgi_table, "tables": tables, "criteria": criteria,
            "extra_sections": extra_sections or [], "limitations": limitations,
            "failures": _failures(responses, scores), "warnings": warnings or []}
    out = run_dir / "report.md"
    out.write_text(render_report(data), encoding="utf-8")
    return out
