"""Questioning agent (SGI-Bench paper, arXiv 2512.16969, section 3, agent 1): request + catalog + K -> a
:class:`SelectionPlan` -> selected item ids: offline through the benchmarks' vocabulary, or by an agent model (with
catalog tools, else as JSON) whose plan is cleaned against the catalog; a failed plan falls back to the offline one."""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Mapping

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from ..benchmarks import registry as benchmark_registry
from ..benchmarks import FACETS, Catalog, how_to_get
from ..core import InputError, Item, ModelCallError
from .asking import ask_agent
from .customisation import detect_qualities, unrecognised_qualities
from .question_kind import KINDS, agent_kind, classify
from .request_reading import UnclearRequest as UnclearRequest, request_unclear, understand_request
from ..metric_pool import parse_json_object
from ..models import NamedModel, bind_tools, message_text, prompt_scope, run_tool_loop
from ..core import DEEP_RESEARCH, DRY_EXPERIMENT, EXPERIMENTAL_REASONING, FEASIBILITY, IDEA_GENERATION, OPEN_CREATIVITY
from ..core import WET_EXPERIMENT


class SelectionPlan(BaseModel):
    """Which items to evaluate.

    ``filters``: facet -> accepted values (facets: benchmark, task,
    discipline, direction, type; empty = no constraint).  ``k``: number of
    items (None = all matches).  ``sampling``: "all" or "stratified" (by
    discipline and task, with ``seed``).  ``reason``: why these filters.
    ``question_kind``: the kind of question (:data:`~sgieval.agents.question_kind.KINDS`), ``kind_note`` why it
    fell back to a ranking ("" otherwise), ``kind_by`` who classified it.
    """

    filters: dict[str, list[str]] = Field(default_factory=dict)
    k: int | None = None
    seed: int = 0
    sampling: str = "all"
    reason: str = ""
    matched_terms: dict[str, str] = Field(default_factory=dict)
    planner: str = "offline"
    question_kind: str = Field(default="", description=f"the kind of question asked, one of: {', '.join(KINDS)}")
    kind_note: str = ""
    kind_by: str = "offline rules"


def _find(patterns: list[str], text: str) -> str | None:
    return next((m.group(0) for p in patterns if (m := re.search(rf"\b{p}\b", text, flags=re.I))), None)


def offline_plan(request: str, catalog: Catalog, k: int | None = None, seed: int = 0) -> SelectionPlan:
    """Map ``request`` onto catalog facets with the vocabulary; K from ``k``, else the request, else all matches."""
    text = request or ""
    filters: dict[str, list[str]] = {}
    matched: dict[str, str] = {}
    cat_disc = {v.lower(): v for v in catalog.values("discipline")}
    cat_dir = {v.lower(): v for v in catalog.values("direction")}
    vocab = benchmark_registry.vocabulary()
    for concept, (patterns, values) in vocab.disciplines.items():
        hit = _find(patterns, text)
        if not hit:
            continue
        in_disc = [cat_disc[v] for v in values if v in cat_disc]
        in_dir = [cat_dir[v] for v in values if v in cat_dir and v not in cat_disc]
        facet, vals = ("direction", in_dir) if in_dir and not in_disc else ("discipline", in_disc or [concept])
        filters.setdefault(facet, []).extend(vals)
        matched[hit] = f"{facet}={'/'.join(vals)}" + ("" if in_disc or in_dir else " (not in the loaded catalog)")
    for facet, terms in (("task", vocab.tasks), ("benchmark", vocab.benchmarks.items())):
        for value, patterns in terms:
            if hit := _find(patterns, text):
                filters.setdefault(facet, []).append(value)
                matched[hit] = f"{facet}={value}"
    if k is None:
        m = re.search(r"\b(?:k\s*=\s*(\d+)|(\d+)\s+(?:questions|items|samples|problems|tasks))\b", text, flags=re.I)
        if m:
            k = int(m.group(1) or m.group(2))
            matched[m.group(0)] = f"k={k}"
    mapped = "; ".join(f"'{t}' -> {f}" for t, f in matched.items())
    nothing = "no facet named in the request" if text.strip() else "no request"
    reason = f"request terms mapped to facets: {mapped}" if matched else f"{nothing}: every item of the loaded catalog"
    filters = {f: list(dict.fromkeys(v)) for f, v in filters.items()}
    return SelectionPlan(filters=filters, k=k, seed=seed, reason=reason, matched_terms=matched)


TASK_BENCHMARK = {
    **dict.fromkeys(
        (IDEA_GENERATION, DEEP_RESEARCH, DRY_EXPERIMENT, WET_EXPERIMENT, EXPERIMENTAL_REASONING), "sgi-bench"
    ),
    FEASIBILITY: "sfbench",
    OPEN_CREATIVITY: "sciaidanbench",
}
BENCHMARK_TITLES = {"sgi-bench": "SGI-Bench", "sfbench": "SFBench", "sciaidanbench": "SciAidanBench"}


def _instead_request(request: str, plan: SelectionPlan) -> str:
    """``request`` without the words that chose the task, for the SciAidanBench alternative the error suggests."""
    text = request or ""
    for term, facet in plan.matched_terms.items():
        if facet.startswith("task="):
            text = re.sub(rf"\s*\b{re.escape(term)}\b", "", text, flags=re.I)
    return re.sub(r"\s+([?.!,])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()


def missing_task_data(plan: SelectionPlan, catalog: Catalog, request: str = "") -> InputError | None:
    """The error for a plan whose tasks' benchmark is not loaded (how to get it, an alternative), or None."""
    tasks = plan.filters.get("task") or []
    loaded = set(catalog.values("task"))
    absent = [t for t in tasks if t not in loaded and TASK_BENCHMARK.get(t) in catalog.unavailable]
    if not absent:
        return None
    bench = TASK_BENCHMARK[absent[0]]
    title = BENCHMARK_TITLES.get(bench, bench)
    what = " and ".join(t.replace("_", "-") for t in absent)
    fix = how_to_get(bench)
    if "sciaidanbench" in {i.benchmark for i in catalog.items}:
        qualities = detect_qualities(request) + unrecognised_qualities(request)
        if qualities:
            alt = _instead_request(request, plan)
            fix += (
                f"; or judge the stored SciAidanBench answers for {qualities[0]} instead: "
                f"`sgieval ask \"{alt}\" -b sciaidanbench --judge openai:gpt-4.1`"
            )
    return InputError(
        f"{what} items come from {title}, which is not loaded (no local {bench} data)", what="request", fix=fix
    )


def apply_plan(plan: SelectionPlan, catalog: Catalog, request: str = "") -> list[Item]:
    """Items selected by ``plan`` (its ``sampling`` set); InputError when none (:func:`missing_task_data`, else the
    values there are)."""
    matches = catalog.filter(plan.filters)
    plan.sampling = "stratified" if plan.k is not None and plan.k < len(matches) else "all"
    if not matches:
        missing = missing_task_data(plan, catalog, request)
        if missing is not None:
            raise missing
        facets = [f for f in ("benchmark", "task", "discipline") if f in plan.filters or f == "task"]
        avail = "; ".join(f"{f}: {', '.join(catalog.values(f))}" for f in facets)
        desc = ", ".join(f"{f} in {v}" for f, v in plan.filters.items())
        unavailable = "; ".join(f"{b}: {why}" for b, why in catalog.unavailable.items())
        raise InputError(
            f"the request selects no items ({desc})",
            what="request",
            fix=f"ask about what the catalog holds ({avail})" + (f"; not loaded: {unavailable}" if unavailable else ""),
        )
    return catalog.sample(matches, plan.k, plan.seed)


PLAN_SYSTEM = (
    """You are the questioning agent of sgieval, an evaluation orchestrator for scientific LLMs.
Choose the benchmark items that answer the researcher's request. Use only facet values listed in the catalog.
Leave a facet out when the request does not constrain it. Set k only if the request asks for a number of items.
Set question_kind to the kind of question: """
    + "; ".join(f"{k} ({v})" for k, v in KINDS.items())
    + "."
)


def _clean_plan(plan: SelectionPlan, catalog: Catalog, agent: NamedModel, k: int | None, seed: int) -> SelectionPlan:
    """Drop facets/values absent from the catalog (noted), apply the run's ``k`` and ``seed``, name the planner."""
    notes: list[str] = []
    clean: dict[str, list[str]] = {}
    for facet, vals in plan.filters.items():
        if facet not in FACETS:
            notes.append(f"dropped unknown facet {facet!r}")
            continue
        known = {v.lower(): v for v in catalog.values(facet)}
        kept = list(dict.fromkeys(known[v.lower()] for v in vals if v.lower() in known))
        dropped = [v for v in vals if v.lower() not in known]
        if dropped:
            notes.append(f"dropped {facet} values not in the catalog: {dropped}")
        if kept:
            clean[facet] = kept
    plan.filters = clean
    plan.k = k if k is not None else plan.k
    plan.seed = seed
    plan.planner = agent.name
    if notes:
        plan.reason = f"{plan.reason} ({'; '.join(notes)})"
    return plan


def _request_message(request: str, catalog: Catalog) -> HumanMessage:
    summary = "\n".join(
        f"{f}: " + ", ".join(f"{v} ({n})" for v, n in sorted(catalog.counts(f).items()) if v) for f in FACETS
    )
    return HumanMessage(
        content=f"Catalog facets (value (count)):\n{summary}\n\nRequest: {request or '(none: evaluate everything)'}"
    )


class PlanArgs(BaseModel):
    """Arguments of the ``submit_selection_plan`` tool: the agent's final plan.

    ``filters``: facet -> accepted values (facets benchmark, task, discipline,
    direction, type; leave a facet out when the request does not constrain
    it).  ``k``: number of items, only when the request asks for a number
    (None = all matches).  ``reason``: one sentence on why.
    """

    filters: dict[str, list[str]] = Field(
        default_factory=dict, description="facet -> accepted values, e.g. {\"task\": [\"idea_generation\"]}"
    )
    k: int | None = Field(default=None, description="number of items; null = all matches")
    reason: str = Field(default="", description="why these filters answer the request")
    question_kind: str = Field(default="", description=f"the kind of question asked, one of: {', '.join(KINDS)}")


SUBMIT_TOOL = "submit_selection_plan"


def _filters_arg(filters: Any) -> dict[str, list[str]]:
    if not filters:
        return {}
    if isinstance(filters, str):
        filters = json.loads(filters)
    if not isinstance(filters, dict):
        got = type(filters).__name__
        fix = 'pass e.g. {"task": ["idea_generation"]}'
        raise InputError(f"filters must be an object facet -> list of values, got {got}", what="filters", fix=fix)
    return {str(f): [v] if isinstance(v, str) else [str(x) for x in v] for f, v in filters.items() if v}


def catalog_tools(catalog: Catalog, seed: int = 0) -> list[BaseTool]:
    """The questioning agent's tools over ``catalog``; JSON out, bad arguments give an ``"error: ..."`` string."""

    def _safe(fn):
        @functools.wraps(fn)
        def run(*a: Any, **kw: Any) -> str:
            try:
                return fn(*a, **kw)
            except (InputError, ValueError, TypeError) as e:
                return f"error: {e}"

        return run

    def facet_counts(facet: str, filters: dict[str, list[str]] | None = None) -> str:
        """Count catalog items per value of one facet (benchmark, task, discipline, direction, type), among the items matching the optional filters (facet -> accepted values)."""
        counts = catalog.counts(facet, catalog.filter(_filters_arg(filters)))
        return json.dumps({v: n for v, n in sorted(counts.items()) if v}, ensure_ascii=False)

    def search_items(text: str, filters: dict[str, list[str]] | None = None, limit: int = 10) -> str:
        """Find catalog items whose prompt contains every word of `text` (optionally within filters: facet -> accepted values); returns id, benchmark, task, discipline and a snippet, best match first."""
        hits = catalog.search(text, catalog.filter(_filters_arg(filters)), limit=max(1, min(int(limit), 50)))
        keys = ("id", "benchmark", "task", "discipline")
        rows = [{**{k: getattr(i, k) for k in keys}, "snippet": i.prompt[:160]} for i in hits]
        return json.dumps(rows, ensure_ascii=False)

    def sample_items(filters: dict[str, list[str]] | None = None, k: int | None = None) -> str:
        """Preview the item ids a plan would select: items matching the filters (facet -> accepted values), k of them stratified by discipline and task with the run's seed (k null = all matches)."""
        matches = catalog.filter(_filters_arg(filters))
        chosen = catalog.sample(matches, k, seed)
        sampling = "stratified" if k is not None and k < len(matches) else "all"
        out = {"matches": len(matches), "k": k, "sampling": sampling, "item_ids": [i.id for i in chosen]}
        return json.dumps(out, ensure_ascii=False)

    return [
        StructuredTool.from_function(_safe(f), name=f.__name__, description=f.__doc__)
        for f in (facet_counts, search_items, sample_items)
    ]


def submit_tool() -> BaseTool:
    """The ``submit_selection_plan`` tool (schema :class:`PlanArgs`); calling it ends the agent's turn."""
    return StructuredTool.from_function(
        lambda **plan: "plan received",
        name=SUBMIT_TOOL,
        args_schema=PlanArgs,
        description="Submit the final selection plan (filters, k, reason). Call exactly once, at the end.",
    )


TOOL_SYSTEM = """You are the questioning agent of sgieval, an evaluation orchestrator for scientific LLMs.
Choose the benchmark items that answer the researcher's request.
Use the tools facet_counts, search_items and sample_items to inspect the catalog, then call submit_selection_plan once
with the filters (facet -> values, only values that exist in the catalog), k (only if the request asks for a number of
items), a one-sentence reason and the question_kind. Leave a facet out when the request does not constrain it."""


async def tool_plan(
    request: str, catalog: Catalog, agent: NamedModel, bound: Any, k: int | None, seed: int, *, max_steps: int = 8
) -> tuple[SelectionPlan, list[dict[str, Any]]]:
    """(cleaned plan, trace) once the model calls ``submit_selection_plan`` or replies a JSON plan; ValueError after
    ``max_steps`` turns."""
    tools = {t.name: t for t in catalog_tools(catalog, seed)}
    msgs: list[Any] = [SystemMessage(content=TOOL_SYSTEM), _request_message(request, catalog)]
    trace: list[dict[str, Any]] = []
    plan: list[PlanArgs] = []

    async def execute(name: str, args: dict[str, Any]) -> str:
        if name == SUBMIT_TOOL:
            try:
                plan.append(PlanArgs.model_validate({**args, "filters": _filters_arg(args.get("filters"))}))
                result = "plan received"
            except (ValueError, TypeError, InputError) as e:
                result = f"error: invalid plan ({str(e)[:300]}); call {SUBMIT_TOOL} again"
        else:
            result = str(tools[name].invoke(args))
        trace.append({"tool": name, "args": args, "result": result[:2000]})
        return result

    def unknown(name: str, args: dict[str, Any]) -> str:
        result = f"error: unknown tool {name!r}; use one of {sorted(tools) + [SUBMIT_TOOL]}"
        trace.append({"tool": name, "args": args, "result": result})
        return result

    def on_text(msg: AIMessage) -> str | None:
        text = message_text(msg)
        trace.append({"tool": None, "args": {}, "result": text[:500]})
        try:
            plan.append(PlanArgs.model_validate(parse_json_object(text)))
            return None
        except (ValueError, TypeError) as e:
            return f"No plan received ({str(e)[:200]}). Call {SUBMIT_TOOL} with the filters, k and reason."

    with prompt_scope("sgieval:agent/questioning"):
        offered = [*tools, SUBMIT_TOOL]
        loop = await run_tool_loop(
            agent, msgs, bound, execute, offered=offered, max_turns=max_steps, on_text=on_text, done=lambda: bool(plan),
            unknown_tool=unknown
        )  # fmt: skip
    if loop.stopped in ("answered", "finished") and plan:
        return _clean_plan(SelectionPlan(**plan[-1].model_dump()), catalog, agent, k, seed), trace
    raise ValueError(f"no {SUBMIT_TOOL} call within {max_steps} model turns")


async def run_questioning(
    request: str, catalog: Catalog, *, k: int | None = None, seed: int = 0, agent: NamedModel | None = None,
    metrics: list[str] | None = None, models: list[str] | None = None, rank_all: bool = False,
    names: Mapping[str, str] | None = None,
) -> tuple[SelectionPlan, list[Item], dict[str, Any]]:  # fmt: skip
    """The questioning step: (plan, selected items, trace of the path taken).

    Raises:
        UnclearRequest: offline, a word is a near miss or names nothing (with ``rank_all`` the rest selects instead).
    """
    trace: dict[str, Any] = {}
    if agent is not None:
        try:
            bound = bind_tools(agent, [*catalog_tools(catalog, seed), submit_tool()])
            if bound is not None:
                trace["path"] = "tools"
                plan, calls = await tool_plan(request, catalog, agent, bound, k, seed)
                trace["tool_calls"] = calls
            else:
                trace["path"] = "structured"  # the plan as structured output
                msgs = [SystemMessage(content=PLAN_SYSTEM), _request_message(request, catalog)]
                reply = await ask_agent(agent, msgs, SelectionPlan)
                if reply.parsed is None:
                    raise ValueError(reply.error or "no plan")
                plan, trace["agent_raw"] = _clean_plan(reply.parsed, catalog, agent, k, seed), list(reply.raw)
            items = apply_plan(plan, catalog)
            plan.kind_by = f"agent model {agent.name}" if plan.question_kind else "offline rules"
            plan.question_kind, plan.kind_note = agent_kind(plan.question_kind, request, models)
            return plan, items, trace
        except (ValueError, InputError, ModelCallError) as e:
            trace["fallback"] = f"agent {agent.name} gave no usable plan ({e}); offline plan used"
    trace["path"] = "offline"
    reading = understand_request(request, catalog, metrics=metrics, models=models)
    trace["reading"] = reading.model_dump()
    unclear = request_unclear(reading, request, catalog, names)
    if unclear is not None and not rank_all:
        raise unclear
    plan = offline_plan(request, catalog, k, seed)
    if unclear is not None:
        left = ", ".join(f"'{w}'" for w in [*reading.near_misses, *reading.unknown])
        plan.reason += f". {(names or {}).get('rank_all', '--all')}: {left} matched nothing and {'was' if len(left.split(', ')) == 1 else 'were'} left out"
    if "fallback" in trace:
        plan.reason = f"{trace['fallback']}. {plan.reason}"
    items = apply_plan(plan, catalog, request)
    plan.question_kind, plan.kind_note = classify(request, models)
    return plan, items, trace
