"""The report of a run: :func:`report_run` gathers what the report states about the run itself (header, warnings,
sampling and model-server lines, metric specs, cost and usage) and hands it with the records to :func:`build_report`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from ..core import BUDGET_STOP_NOTE, MetricSpec, ModelRef, RunConfig, redact_url
from ..models import BATCH_DISCOUNT, price_source
from ..reports import ReportContext
from .customisation import MetricPlan, plan_specs, planned_metrics
from .estimate import run_estimate
from .question_kind import classify, kind_line
from .questioning import SelectionPlan
from .runtime import RunContext, State, load_ledger, plan_items, run_prices
from .targets import models_named_in, replay_notes


def _model_servers(rt: RunContext) -> str:
    """The report's "model servers" line: each OpenAI-compatible model with its server (credentials removed), or ""."""
    parts = []
    for m in rt.models():
        ref = m.ref
        if ref is not None and ref.base_url:
            src = f" ({ref.base_url_var})" if ref.base_url_var and ref.provider != "openai" else ""
            parts.append(f"{m.name}: {redact_url(ref.base_url)}{src}")
    return "; ".join(dict.fromkeys(parts))


def _sampling_line(config: RunConfig) -> str:
    """The report's "sampling parameters" line: per model what was sent and what was not, with why; "" when none."""
    parts = []
    for name in dict.fromkeys([*config.sent_params, *config.dropped_params]):
        sent = ", ".join(f"{k}={v}" for k, v in config.sent_params.get(name, {}).items()) or "provider defaults"
        not_sent = "; ".join(f"{k} not sent: {why}" for k, why in config.dropped_params.get(name, {}).items())
        parts.append(f"{name}: {sent}" + (f" ({not_sent})" if not_sent else ""))
    return "; ".join(parts)


def _judges_line(run_judges: list[str], added: list[str], repeats: int = 1) -> str:
    """The header's judge line: the run's judges (asked ``repeats`` times), then any added by ``ask --into``."""
    own = ", ".join(run_judges)
    if repeats > 1 and (own or added):
        own += f" (each asked {repeats} times per judged item)"
    if not added:
        return own or "none (judge metrics not run)"
    one = len(run_judges) == 1
    base = (
        f"{', '.join(run_judges)} (the run's judge{'' if one else 's'}: the ranking uses {'its' if one else 'their'} "
        "scores)"
        if run_judges
        else "none of the run's own (its judge metrics were not run)"
    )
    return f"{base}; added by ask --into: {', '.join(added)} (scored beside them, see Added judges)"


def metric_specs(rt: RunContext, state: State) -> list[MetricSpec]:
    """The specs of every metric the run's plan applies (predefined first, then custom rubrics).

    Args:
        rt: the run context (its catalog holds the run's items).
        state: the graph state of the run's last checkpoint (``selection`` and ``metric_plan``).

    Returns:
        The metric specs, or [] when the run has not chosen its metrics.
    """
    if not state.get("metric_plan") or not state.get("selection"):
        return []
    plan = MetricPlan.model_validate(state["metric_plan"])
    items = plan_items(rt, state["selection"]["item_ids"])
    metrics = planned_metrics(plan, items, rt.metric_options)
    return plan_specs(plan, [m for m in metrics if not hasattr(m, "rubric")])


async def report_run(rt: RunContext, state: State) -> Path:
    """(Re)write the run's ``report.md`` (and ``report.json``, figures, viewer) from its records and plans.

    Args:
        rt: the run context (config, run folder, catalog, models by role, ledger).
        state: the graph state of the run (``selection``, ``metric_plan``, ``targets``, ``evaluated``).

    Returns:
        The path of ``report.md`` in the run folder.
    """
    from .reporting import build_report

    sel = SelectionPlan.model_validate({k: v for k, v in state["selection"].items() if k in SelectionPlan.model_fields})
    plan = MetricPlan.model_validate(state["metric_plan"])
    items = plan_items(rt, state["selection"]["item_ids"])
    n_selected = len(items)
    settled = (state.get("evaluated") or {}).get("settled")
    if settled:  # --until-settled: the report covers the items the run used
        used = set(settled.get("item_ids") or [])
        items = [i for i in items if i.id in used]
    metrics = planned_metrics(plan, items, rt.metric_options)
    specs = plan_specs(plan, [m for m in metrics if not hasattr(m, "rubric")])
    targets = state.get("targets") or [t.name for t in rt.targets]
    ids = {i.id for i in items}
    responses = [r for r in rt.store.read("responses") if r.model in targets and r.item_id in ids]
    ids.add("*")  # and the corpus-level scores
    scores = [s for s in rt.store.read("scores") if s.model in targets and s.item_id in ids]
    added_judges = list(dict.fromkeys([*rt.config.added_judges, *(j.name for j in rt.added_judges)]))
    added = rt.store.read("added_judge_scores") if added_judges else []
    added_scores = [s for s in added if s.judge in added_judges and s.model in targets and s.item_id in ids]
    warnings, focus = _run_warnings(rt, state)
    replay_line, replay_warnings = replay_notes(rt.targets)
    warnings += replay_warnings
    extra = {
        "replay item ids": replay_line,
        "added to the run": _additions_line(rt, responses, scores, added_scores),
        "until settled": f"{len(items)} of the {n_selected} selected items used "
        + ("(the ranking settled)" if settled["settled"] else "(the ranking did not settle)")
        if settled
        else "",
    }
    header = _header(rt, state, sel, plan, items, n_selected, targets, added_judges, extra)
    cfg = rt.config
    ctx = ReportContext(
        rt.store.root, header=header, items=items, responses=responses, scores=scores, specs=specs,
        primary=plan.primary, models=targets, custom={r.name for r in plan.custom}, n_resamples=cfg.bootstrap_resamples,
        seed=cfg.seed, warnings=warnings, judges=[j.name for j in rt.judges], allow_self_judge=cfg.allow_self_judge,
        usage=_usage_summary(rt), settled=settled, focus=focus, stand_in=plan.stand_in, recheck=cfg.recheck,
        embedding_model=rt.metric_options.get("embedding_model", "minilm"), added_scores=added_scores,
        added_judges=added_judges,
    )  # fmt: skip
    return await build_report(ctx, agent=rt.agent)


def _header(
    rt: RunContext, state: State, sel: SelectionPlan, plan: MetricPlan, items: list[Any], n_selected: int,
    targets: list[str], added_judges: list[str], extra: dict[str, str],
) -> dict[str, Any]:  # fmt: skip
    """The report's Run table (``ReportContext.header``); ``extra``: its replay, additions and until-settled lines."""
    scope = ", ".join(f"{f} {'/'.join(v)}" for f, v in sel.filters.items()) or "whole catalog"
    used = {i.benchmark for i in items}
    sources = "; ".join(f"{b}: {p}" for b, p in rt.catalog.sources.items() if b in used) or "n/a"
    skipped = [f"{b}: {f}" for b, files in rt.catalog.skipped.items() if b in used for f in files]
    kind, note = (sel.question_kind, sel.kind_note) if sel.question_kind else classify(rt.config.request, targets)
    return {
        "run_id": rt.config.run_id,
        "request": rt.config.request,
        "selection_reason": sel.reason,
        "filters": ", ".join(f"{f} = {', '.join(v)}" for f, v in sel.filters.items()) or "none",
        "k": sel.k if sel.k is not None else "all matches",
        "n_items": n_selected,
        "sampling": sel.sampling,
        "seed": sel.seed,
        "models": ", ".join(targets) + " (target)",
        "judges": _judges_line([j.name for j in rt.judges], added_judges, rt.config.judge_repeats),
        "agent": rt.agent.name if rt.agent else "none (offline agent paths)",
        "metrics": ", ".join(plan.predefined)
        + (f"; custom: {', '.join(r.name for r in plan.custom)}" if plan.custom else ""),
        "primary": plan.primary,
        "primary_reason": plan.reason,
        "data_source": sources,
        "tools": f"{', '.join(rt.config.tools)}; sandbox {rt.config.sandbox}",
        "scope": scope,
        "n_matching": state["selection"].get("n_matching"),
        "question_kind": kind,
        "extra": {
            "question kind": kind_line(kind, note, sel.kind_by),
            **({"files not read": "; ".join(skipped)} if skipped else {}),
            **({"notes": "; ".join(plan.notes)} if plan.notes else {}),
            **({"replay item ids": extra["replay item ids"]} if extra["replay item ids"] else {}),
            **({"sampling parameters": _sampling_line(rt.config)} if _sampling_line(rt.config) else {}),
            **({"model servers": _model_servers(rt)} if _model_servers(rt) else {}),
            **({"settings": rt.settings.header_line()} if rt.settings is not None else {}),
            **({"added to the run": extra["added to the run"]} if extra["added to the run"] else {}),
            **({"until settled": extra["until settled"]} if extra["until settled"] else {}),
        },
    }


def _run_warnings(rt: RunContext, state: State) -> tuple[list[str], str | None]:
    """(the report's warnings about the run itself, ``replay:<model>`` when the request names exactly one stored
    model, else None)."""
    warnings = []
    smoke = [
        m.name for m in [*rt.judges, *rt.added_judges, *rt.targets, *([rt.agent] if rt.agent else [])] if m.smoke_test
    ]
    if smoke:
        warnings.append(
            f"{', '.join(dict.fromkeys(smoke))} is an embedded 135M-parameter model: its outputs and "
            "scores are smoke-test quality, not evidence about the target models."
        )
    if rt.config.allow_self_judge:
        warnings.append("--allow-self-judge was set: a judge may have scored its own responses.")
    if rt.config.unsafe_local_exec:
        warnings.append("--unsafe-local-exec was set: model-written code ran without a sandbox.")
    focus = None
    if not rt.config.models and state.get("targets"):
        refs = [ModelRef.parse(m) for m in state["targets"]]
        stored = [r.name for r in refs if r.provider == "replay"]
        named = models_named_in(rt.config.request, stored) if stored else []
        if stored and named == stored:
            warnings.append(
                f"Target models are the stored models the request names ({', '.join(state['targets'])}); "
                "pass --models to evaluate others."
            )
        elif len(named) == 1:
            focus = f"replay:{named[0]}"
            warnings.append(
                f"The request asks about one model ({focus}): the Answer gives its scores; the other "
                "stored models are evaluated only to show where it stands."
            )
    long_texts = (state.get("evaluated") or {}).get("long_texts_embedded") or 0
    if long_texts:
        n = (state.get("evaluated") or {}).get("texts_embedded") or 0
        warnings.append(
            f"{long_texts} of the {n} texts embedded with MiniLM were longer than its 256-token window; "
            "each was embedded whole, in pieces of at most 250 word pieces whose vectors were averaged."
        )
    stopped = (state.get("evaluated") or {}).get("budget_stopped")
    if stopped:
        warnings.append(
            f"{BUDGET_STOP_NOTE} before every item was evaluated ({stopped}); "
            "the tables cover what was evaluated, corpus-level metrics were not computed."
        )
    return warnings, focus


def _additions_line(
    rt: RunContext, responses: Sequence[Any], scores: Sequence[Any] = (), added_scores: Sequence[Any] = ()
) -> str:
    """The Run table's "added to the run" line: per ``ask --into`` invocation its time and the targets, judges and
    metrics it added; "" when none."""
    made: dict[str, dict[str, None]] = {}  # invocation -> its target models, in order
    for r in responses:
        if r.invocation:
            made.setdefault(r.invocation, {})[r.model] = None
    judged: dict[str, Counter[str]] = {}
    for s in added_scores:
        if s.invocation:
            judged.setdefault(s.invocation, Counter())[s.judge] += 1
    metrics: dict[str, Counter[str]] = {}
    for s in scores:
        if s.invocation and s.model not in made.get(s.invocation, ()):
            metrics.setdefault(s.invocation, Counter())[s.metric] += 1
    parts = []
    for row in rt.store.read_rows("invocations"):
        if row.get("kind") != "into" or not isinstance(row.get("id"), str):
            continue
        inv = row["id"]
        what = list(made.get(inv) or [])
        what += [f"judge {j} ({n} scores)" for j, n in (judged.get(inv) or {}).items()]
        what += [f"metric {m} ({n} scores)" for m, n in (metrics.get(inv) or {}).items()]
        text = ", ".join(what) if what else "no new records (the ranking metric only)"
        parts.append(f"{row.get('time', '?')} (ask --into, invocation {inv}): {text}")
    return "; ".join(parts)


def _usage_summary(rt: RunContext) -> dict[str, Any]:
    """What the "Cost and usage" section reads: the ledger's summary with ``prices`` (where each comes from),
    ``interrupted`` calls and any ``estimate``."""
    ledger = rt.ledger or load_ledger(rt)
    summ = dict(ledger.summary())
    if summ.get("rows"):
        summ["prices"] = _price_sources(rt, [t["model"] for t in summ["rows"]])
        batched = sum(1 for r in ledger.records if r.batch and not r.cached)
        if batched:
            summ["prices"] += (
                f" {batched} calls went through the providers' batch APIs (--batch) and are priced at the batch "
                f"rate: genai-prices' batch price where it lists one, else {BATCH_DISCOUNT:.0%} of the list price."
            )
    summ["interrupted"] = sum(1 for r in ledger.records if r.interrupted)
    estimate = run_estimate(rt.store.read_rows("estimate"))
    if estimate is not None:
        summ["estimate"] = estimate
    return summ


def _price_sources(rt: RunContext, models: list[str]) -> str:
    """One sentence: where each model's price comes from (the library's list prices, the user's, none)."""
    prices = run_prices(rt)
    by: dict[str, list[str]] = {}
    for m in dict.fromkeys(models):
        by.setdefault(price_source(m, prices) or "unknown", []).append(m)
    parts = []
    for src, ms in by.items():
        if src == "user":
            parts.append(f"given by the user (--price) for {', '.join(ms)}")
        elif src == "free":
            parts.append(f"none for {', '.join(ms)} (no paid call)")
        elif src == "unknown":
            parts.append(f"unknown for {', '.join(ms)} (cost n/a)")
        else:
            parts.append(f"list prices of {src} (bundled data, standard tier) for {', '.join(ms)}")
    return "Prices: " + "; ".join(parts) + "."
