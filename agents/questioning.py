"""Questioning agent (SGI-Bench paper, arXiv 2512.16969, section 3, agent 1).

request + catalog + K -> a :class:`SelectionPlan` (facet filters, K, seed,
sampling, reason) -> selected item ids.  No request means everything.

Offline path (no agent model): the request is mapped onto catalog facets with
the vocabulary of :mod:`.vocabulary`.  With an agent model: the model proposes
the plan as structured output; values absent from the catalog are dropped
with a note, and a plan that fails or selects nothing falls back to the
offline plan, which the reason says.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from ..benchmarks.catalog import FACETS, Catalog
from ..core import InputError, Item
from ..metric_pool.judge import ask_judge as ask_structured
from ..models.base import NamedModel
from .vocabulary import BENCHMARKS, DISCIPLINES, TASKS


class SelectionPlan(BaseModel):
    """Which items to evaluate.

    ``filters``: facet -> accepted values (facets: benchmark, task,
    discipline, direction, type; empty = no constraint).  ``k``: number of
    items (None = all matches).  ``sampling``: "all" or "stratified" (by
    discipline and task, with ``seed``).  ``reason``: why these filters.
    """

    filters: dict[str, list[str]] = Field(default_factory=dict)
    k: int | None = None
    seed: int = 0
    sampling: str = "all"
    reason: str = ""
    matched_terms: dict[str, str] = Field(default_factory=dict)
    planner: str = "offline"


def _find(patterns: list[str], text: str) -> str | None:
    for p in patterns:
        m = re.search(rf"\b{p}\b", text, flags=re.I)
        if m:
            return m.group(0)
    return None


def offline_plan(request: str, catalog: Catalog, k: int | None = None, seed: int = 0) -> SelectionPlan:
    """Map ``request`` onto catalog facets with the vocabulary (deterministic).

    Disciplines are matched against the catalog's discipline values first,
    then its direction values (e.g. "astrophysics" is a SciAidanBench
    subdomain).  K comes from the ``k`` argument, else from the request
    ("10 questions", "k=10"), else all matches.
    """
    text = request or ""
    filters: dict[str, list[str]] = {}
    matched: dict[str, str] = {}
    reasons: list[str] = []
    cat_disc = {v.lower(): v for v in catalog.values("discipline")}
    cat_dir = {v.lower(): v for v in catalog.values("direction")}
    for concept, (patterns, values) in DISCIPLINES.items():
        hit = _find(patterns, text)
        if not hit:
            continue
        in_disc = [cat_disc[v] for v in values if v in cat_disc]
        in_dir = [cat_dir[v] for v in values if v in cat_dir and v not in cat_disc]
        if in_disc:
            filters.setdefault("discipline", []).extend(in_disc)
            matched[hit] = f"discipline={'/'.join(in_disc)}"
        elif in_dir:
            filters.setdefault("direction", []).extend(in_dir)
            matched[hit] = f"direction={'/'.join(in_dir)}"
        else:
            filters.setdefault("discipline", []).append(concept)
            matched[hit] = f"discipline={concept} (not in the loaded catalog)"
    for task, patterns in TASKS:
        hit = _find(patterns, text)
        if hit:
            filters.setdefault("task", []).append(task)
            matched[hit] = f"task={task}"
    for bench, patterns in BENCHMARKS.items():
        hit = _find(patterns, text)
        if hit:
            filters.setdefault("benchmark", []).append(bench)
            matched[hit] = f"benchmark={bench}"
    if k is None:
        m = re.search(r"\b(?:k\s*=\s*(\d+)|(\d+)\s+(?:questions|items|samples|problems|tasks))\b", text, flags=re.I)
        if m:
            k = int(m.group(1) or m.group(2))
            matched[m.group(0)] = f"k={k}"
    if matched:
        reasons.append("request terms mapped to facets: " + "; ".join(f"'{t}' -> {f}" for t, f in matched.items()))
    else:
        reasons.append("no facet named in the request: every item of the loaded catalog" if text.strip()
                       else "no request: every item of the loaded catalog")
    plan = SelectionPlan(filters={f: list(dict.fromkeys(v)) for f, v in filters.items()}, k=k, seed=seed,
                         sampling="stratified" if k else "all", reason=". ".join(reasons), matched_terms=matched)
    return plan


def apply_plan(plan: SelectionPlan, catalog: Catalog) -> list[Item]:
    """Items selected by ``plan``.  Raises InputError (one line, with the
    available values) when the filters select nothing."""
    matches = catalog.filter(plan.filters)
    if not matches:
        avail = "; ".join(f"{f}: {', '.join(catalog.values(f))}" for f in ("benchmark", "task", "discipline")
                          if f in plan.filters or f == "task")
        desc = ", ".join(f"{f} in {v}" for f, v in plan.filters.items())
        missing = "; ".join(f"{b}: {why}" for b, why in catalog.unavailable.items())
        raise InputError(f"the request selects no items ({desc})", what="request",
                         fix=f"ask about what the catalog holds ({avail})" + (f"; not loaded: {missing}" if missing else ""))
    return catalog.sample(matches, plan.k, plan.seed)


PLAN_SYSTEM = """You are the questioning agent of sgieval, an evaluation orchestrator for scientific LLMs.
Choose the benchmark items that answer the researcher's request. Use only facet values listed in the catalog.
Leave a facet out when the request does not constrain it. Set k only if the request asks for a number of items."""


def _catalog_summary(catalog: Catalog) -> str:
    lines = []
    for f in FACETS:
        counts = catalog.counts(f)
        lines.append(f"{f}: " + ", ".join(f"{v} ({n})" for v, n in sorted(counts.items()) if v))
    return "\n".join(lines)


async def llm_plan(request: str, catalog: Catalog, agent: NamedModel, k: int | None, seed: int) -> tuple[SelectionPlan, list[str]]:
    """Ask ``agent`` for a SelectionPlan; returns (plan, notes).  Values not in
    the catalog are dropped (noted).  Raises ValueError when the model gives
    no usable plan (the caller falls back to the offline plan)."""
    msgs = [SystemMessage(content=PLAN_SYSTEM),
            HumanMessage(content=f"Catalog facets (value (count)):\n{_catalog_summary(catalog)}\n\n"
                                 f"Request: {request or '(none: evaluate everything)'}")]
    reply = await ask_structured(agent, msgs, SelectionPlan)
    if reply.parsed is None:
        raise ValueError(reply.error or "no plan")
    plan = reply.parsed
    notes: list[str] = []
    clean: dict[str, list[str]] = {}
    for facet, vals in plan.filters.items():
        if facet not in FACETS:
            notes.append(f"dropped unknown facet {facet!r}")
            continue
        known = {v.lower(): v for v in catalog.values(facet)}
        kept = [known[v.lower()] for v in vals if v.lower() in known]
        dropped = [v for v in vals if v.lower() not in known]
        if dropped:
            notes.append(f"dropped {facet} values not in the catalog: {dropped}")
        if kept:
            clean[facet] = kept
    plan.filters = clean
    plan.k = k if k is not None else plan.k
    plan.seed = seed
    plan.sampling = "stratified" if plan.k else "all"
    plan.planner = agent.name
    if notes:
        plan.reason = f"{plan.reason} ({'; '.join(notes)})"
    return plan, [r for r in reply.raw]


async def run_questioning(request: str, catalog: Catalog, *, k: int | None = None, seed: int = 0,
                          agent: NamedModel | None = None) -> tuple[SelectionPlan, list[Item], dict[str, Any]]:
    """The questioning step: (plan, selected items, trace).  ``trace`` keeps
    the agent's raw replies and any fallback reason."""
    trace: dict[str, Any] = {}
    if agent is not None:
        try:
            plan, raw = await llm_plan(request, catalog, agent, k, seed)
            trace["agent_raw"] = raw
            items = apply_plan(plan, catalog)
            return plan, items, trace
        except (ValueError, InputError) as e:
            trace["fallback"] = f"agent {agent.name} gave no usable plan ({e}); offline plan used"
    plan = offline_plan(request, catalog, k, seed)
    if "fallback" in trace:
        plan.reason = f"{trace['fallback']}. {plan.reason}"
    return plan, apply_plan(plan, catalog), trace
