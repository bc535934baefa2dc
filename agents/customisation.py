"""Metric customisation agent (SGI-Bench paper, arXiv 2512.16969, section 3, agent 2).

request + selected items + metric pool -> a :class:`MetricPlan`: the
benchmark's predefined metrics (always kept), custom rubric metrics for
qualities the request names that the pool lacks (reported beside the
predefined ones, never instead), and the metric the ranking uses.

Offline path: qualities are found with the vocabulary; a quality with a
predefined metric picks it as the ranking metric (creativity -> accepted
answers on open creativity); others are looked up in the starter rubric
library (``metric_pool/rubrics/``) when it is present.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from ..core import Item, MetricSpec, Rubric
from ..metric_pool.base import Metric
from ..metric_pool.judge import ask_judge as ask_structured
from ..metric_pool.registry import predefined_metrics
from ..models.base import NamedModel
from .vocabulary import QUALITY_WORDS

# quality -> predefined metric names that measure it (first applicable wins)
QUALITY_METRICS: dict[str, list[str]] = {
    "creativity": ["aidan_accepted_answers", "idea_novelty", "idea_final_score"],
    "novelty": ["idea_novelty", "aidan_mean_novelty", "aidan_accepted_answers"],
    "feasibility": ["idea_feasibility", "sfbench_qwk"],
    "accuracy": ["em", "mca", "sfbench_qwk", "dry_passall_5", "wet_final_score"],
}


class MetricPlan(BaseModel):
    """The metrics of a run.

    ``predefined``: names of the benchmark metrics applied (all that apply to
    the selected tasks).  ``custom``: rubric metrics formalised from the
    request.  ``primary``: the metric the ranking uses.  ``qualities``: what
    the request asks about.  ``reason``: why.  ``notes``: qualities that
    could not be measured, and why.
    """

    predefined: list[str] = Field(default_factory=list)
    custom: list[Rubric] = Field(default_factory=list)
    primary: str = ""
    qualities: list[str] = Field(default_factory=list)
    reason: str = ""
    notes: list[str] = Field(default_factory=list)
    planner: str = "offline"


def detect_qualities(request: str) -> list[str]:
    """Qualities named in ``request`` (vocabulary order)."""
    out = []
    for q, pats in QUALITY_WORDS.items():
        if any(re.search(rf"\b{p}\b", request or "", flags=re.I) for p in pats):
            out.append(q)
    return out


def starter_rubric(quality: str) -> Rubric | None:
    """The starter rubric for ``quality`` from ``metric_pool/rubrics`` (None when absent)."""
    try:
        from ..metric_pool.rubrics import find_rubric
    except ImportError:
        return None
    return find_rubric(quality)


def offline_metric_plan(request: str, items: list[Item], metrics: list[Metric]) -> MetricPlan:
    """Deterministic plan: all applicable predefined metrics; ranking metric
    from the first quality that maps to one, else the first primary metric."""
    specs = [s for m in metrics for s in m.all_specs]
    names = [s.name for s in specs]
    qualities = detect_qualities(request)
    primary = ""
    notes: list[str] = []
    custom: list[Rubric] = []
    reason: list[str] = []
    for q in qualities:
        hit = next((n for n in QUALITY_METRICS.get(q, []) if n in names), None)
        if hit:
            primary = primary or hit
            reason.append(f"'{q}' is measured by the predefined metric {hit}")
            continue
        rub = starter_rubric(q)
        if rub is not None:
            custom.append(rub)
            primary = primary or rub.name
            reason.append(f"'{q}' has no predefined metric: custom rubric {rub.name} ({len(rub.criteria)} criteria)")
        else:
            notes.append(f"'{q}' has no predefined metric for the selected tasks and no starter rubric")
    if not primary:
        prim = [s.name for s in specs if s.primary]
        primary = prim[0] if prim else (names[0] if names else "")
        reason.append(f"ranking by the benchmark's primary metric {primary}")
    return MetricPlan(predefined=names, custom=custom, primary=primary, qualities=qualities,
                      reason="; ".join(reason), notes=notes)


CUSTOM_SYSTEM = """You are the metric customisation agent of sgieval. The benchmark's predefined metrics are always applied.
Pick the metric that best answers the request as `primary` (a name from the list, or the name of a custom rubric you define).
Only when the request names a quality that no listed metric measures, define a custom rubric for it: 4-6 criteria,
each scored 0-10 with anchors for 0, 5 and 10, equal weights unless the request says otherwise."""


async def run_customisation(request: str, items: list[Item], *, agent: NamedModel | None = None,
                            options: dict | None = None) -> tuple[MetricPlan, list[Metric], dict[str, Any]]:
    """(plan, predefined Metric objects, trace).  With ``agent``, the model
    proposes the ranking metric and any custom rubrics; the predefined list
    is enforced in code, so the agent can add metrics but never drop one."""
    benchmarks = list(dict.fromkeys(i.benchmark for i in items))
    metrics = predefined_metrics(benchmarks, items, options)
    base = offline_metric_plan(request, items, metrics)
    trace: dict[str, Any] = {}
    if agent is None:
        return base, metrics, trace
    listing = "\n".join(f"- {s.name} ({s.kind}, {s.scale_label}): {s.description}" for m in metrics for s in m.all_specs)
    msgs = [SystemMessage(content=CUSTOM_SYSTEM),
            HumanMessage(content=f"Request: {request}\nTasks: {sorted({i.task for i in items})}\nMetrics:\n{listing}")]
    reply = await ask_structured(agent, msgs, MetricPlan)
    trace["agent_raw"] = reply.raw
    if reply.parsed is None:
        base.notes.append(f"agent {agent.name} gave no usable metric plan ({reply.error}); offline plan used")
        return base, metrics, trace
    p = reply.parsed
    names = {r.name for r in p.custom} | set(base.predefined)
    plan = MetricPlan(predefined=base.predefined, custom=p.custom or base.custom,
                      primary=p.primary if p.primary in names else base.primary,
                      qualities=p.qualities or base.qualities, reason=p.reason or base.reason,
                      notes=base.notes + p.notes, planner=agent.name)
    return plan, metrics, trace


def plan_specs(plan: MetricPlan, metrics: list[Metric]) -> list[MetricSpec]:
    """Every MetricSpec of the plan, predefined first, then custom."""
    return [s for m in metrics for s in m.all_specs] + list(plan.custom)
