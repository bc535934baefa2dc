"""The evaluation graph: questioning -> customisation -> [confirm] -> evaluation -> reporting.

A LangGraph ``StateGraph`` over :class:`EvalState` with an async SQLite checkpointer in ``runs/<run_id>/state.sqlite``
(thread id = run id), so a killed run continues with ``sgieval resume <run_id>``.  Records (items, responses, scores)
live in the run folder's JSONL files, appended as they are produced; the graph state holds only the plans and the report
path.

Wiring only (DESIGN.md "graphs/"): each node calls an agent step of :mod:`sgieval.agents.run` with the graph state and
the run context (:class:`~sgieval.agents.runtime.RunContext`), which travels as LangGraph's ``context``
(``context_schema``); the run's business logic (default targets, judge pre-checks, tools, report header, usage table)
lives there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from ..agents import (
    check_added_judges,
    check_until_settled,
    confirmation,
    customisation_step,
    estimate_step,
    evaluation_step,
    into_config,
    into_update,
    questioning_step,
    reading_scope,
    reporting_step,
    run_scope,
)
from ..agents import (  # noqa: F401 - re-exported: callers of the graph use these names from here
    RunContext,
    check_request_models,
    load_ledger,
    make_runtime,
    models_named_in,
    new_run_id,
    plan_needs,
    record_sampling,
    unique_models,
)
from ..agents import metric_specs, report_run, sampling_line  # noqa: F401 - re-exported
from ..core import InputError, RunConfig, RunStore, SgievalError, check_state_file, get_logger
from .checkpoints import open_saver, read_state

__all__ = [
    "EvalState",
    "RunContext",
    "after_confirm",
    "build_graph",
    "check_request_models",
    "execute",
    "into_run",
    "make_runtime",
    "models_named_in",
    "new_run_id",
    "report_run",
    "unique_models",
]


class EvalState(TypedDict, total=False):
    """Graph state (checkpointed).  ``selection``: SelectionPlan dump plus
    ``item_ids``; ``metric_plan``: MetricPlan dump; ``confirmed``; ``targets``:
    target model names; ``evaluated``: counts; ``report``: report path; ``estimate``: the
    estimate before any call (``--dry-run``); ``dry_run_metrics``: under ``--dry-run``, the metric confirmation's
    payload (the metrics, what each needs and whether it is available)."""

    selection: dict[str, Any]
    metric_plan: dict[str, Any]
    confirmed: bool
    targets: list[str]
    evaluated: dict[str, Any]
    report: str
    estimate: dict[str, Any]
    dry_run_metrics: dict[str, Any]


def after_confirm(state: EvalState) -> str:
    """The router after the metric confirmation: ``evaluation`` when confirmed, else the end."""
    return "evaluation" if state.get("confirmed") else END


async def unattended_estimate(state: EvalState, rt: RunContext) -> dict[str, Any] | None:
    """The estimate of a run confirmed with ``--yes`` (:func:`sgieval.agents.estimate.estimate_step`, kept in
    ``estimate.jsonl`` for the report's cost section; about 0.2 s on 1,000 live items, ``bench/e2e.py``). Nobody reads
    it before the calls, so an estimate that fails does not stop the run: the reason is logged and the report says no
    estimate is stored.

    Args:
        state: the graph state after the customisation.
        rt: the run context.

    Returns:
        The estimate (as :func:`~sgieval.agents.estimate.estimate_step`), or None when it failed.
    """
    try:
        return await estimate_step(state, rt)
    except Exception as e:  # noqa: BLE001 - the estimate informs the report; the run it describes goes on
        get_logger("sgieval").warning("estimate failed; the run goes on without one", reason=f"{type(e).__name__}: {e}")
        return None


def build_graph(rt: RunContext | None = None, checkpointer: Any = None):
    """Compile the four-agent evaluation graph.

    Each invocation brings its run context (``graph.ainvoke(..., context=rt)``).  Each node is an agent step of
    :mod:`sgieval.agents.run`; the router is :func:`after_confirm`.

    Args:
        rt: the run context used when an invocation brings none (state reads, LangGraph Studio).
        checkpointer: a LangGraph checkpointer (the run's SQLite saver, :func:`sgieval.graphs.open_saver`);
            None: no checkpoints.

    Returns:
        The compiled graph (a LangGraph ``CompiledStateGraph`` over :class:`EvalState`).
    """

    def ctx(runtime: Runtime[RunContext] | None) -> RunContext:
        c = getattr(runtime, "context", None)
        c = c if isinstance(c, RunContext) else rt  # Studio may bring a context of its own (a dict)
        if c is None:
            raise SgievalError(
                "the evaluation graph was invoked without a run context",
                fix="invoke it with context=make_runtime(config)",
            )
        return c

    async def questioning(state: EvalState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        return await questioning_step(state, ctx(runtime), ask=interrupt)

    async def customisation(state: EvalState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        return await customisation_step(state, ctx(runtime))

    async def confirm(state: EvalState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        c = ctx(runtime)
        dry = c.config.dry_run
        if dry:
            check_until_settled(state, c)
        payload = None if dry else confirmation(state, c)
        if payload is None and not dry:  # --yes: no question; the estimate is still made, for the report
            return {"confirmed": True, "estimate": state.get("estimate") or await unattended_estimate(state, c)}
        estimate = state.get("estimate") or await estimate_step(state, c)
        if dry:  # --dry-run: the metrics and the estimate are the answer; nothing is evaluated
            return {
                "confirmed": False,
                "estimate": estimate,
                "dry_run_metrics": confirmation(state, c, show=True) or {},
            }
        if payload is None:
            return {"confirmed": False, "estimate": estimate}
        return {"confirmed": bool(interrupt({**payload, "estimate": estimate}))}

    async def evaluation(state: EvalState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        return await evaluation_step(state, ctx(runtime))

    async def reporting(state: EvalState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        return await reporting_step(state, ctx(runtime))

    g = StateGraph(EvalState, context_schema=RunContext)
    g.add_node("questioning", questioning)
    g.add_node("customisation", customisation)
    g.add_node("confirm", confirm)
    g.add_node("evaluation", evaluation)
    g.add_node("reporting", reporting)
    g.add_edge(START, "questioning")
    g.add_edge("questioning", "customisation")
    g.add_edge("customisation", "confirm")
    g.add_conditional_edges("confirm", lambda s: after_confirm(s), ["evaluation", END])
    g.add_edge("evaluation", "reporting")
    g.add_edge("reporting", END)
    return g.compile(checkpointer=checkpointer)


def into_folder(config: RunConfig) -> Path:
    """The run folder ``config.into`` names: a folder holding ``config.json``, a file in one (its report.md), or a run
    id under ``config.out_dir``.  Raises InputError naming it when none holds a run."""
    p = Path(config.into or "").expanduser()
    for d in (Path(config.out_dir) / (config.into or ""), p, p.parent if p.suffix else None):
        if d is not None and config.into and (d / "config.json").is_file():
            return d
    raise InputError(
        "no such run",
        what=f"--into {config.into}",
        fix=f"give a run id listed by `sgieval runs --out {config.out_dir}`, the run folder, or its report.md",
    )


async def into_run(config: RunConfig, fields: Any, *, side: str = "cli") -> tuple[RunConfig, Path]:
    """The merged config and the folder of an ``ask --into RUN`` invocation.

    The run's ``config.json`` and the targets its graph state names, with this invocation's additions
    (:func:`sgieval.agents.into.into_config`).  The run folder is read as data (its checkpoint with the allowlisted
    serializer).

    Args:
        config: this invocation's config (``config.into`` names the run).
        fields: the fields this invocation set.
        side: who invoked it, for the option names in errors (``"cli"`` flags or ``"api"`` keywords).

    Returns:
        ``(merged config, run folder)``.

    Raises:
        InputError: ``config.into`` names no run, its files cannot be read, or the additions are refused.
    """
    d = into_folder(config)
    base = RunStore(d, read_only=True).read_config()
    base.out_dir = str(d.parent)
    check_state_file(d / "state.sqlite")
    targets = list(read_state(d / "state.sqlite", base.run_id).get("targets") or [])  # nothing made beside it
    return into_config(base, config, fields, targets, side=side), d


async def execute(
    rt: RunContext, *, resume: bool = False, confirm: Callable[[dict], bool] | None = None
) -> dict[str, Any]:
    """Run (or resume) the graph for ``rt`` to the end, inside the run's scope.

    The scope is :func:`sgieval.agents.runtime.run_scope`: settings, call context, log sink and ledger of this run only.
    ``rt.invocation_kind == "into"`` (``ask --into``): the run's graph goes back to its metric confirmation with the
    run's plan (:func:`sgieval.agents.into.into_update`), so the evaluation adds what is missing (done responses and
    scores are reused) and the report is rewritten.

    Args:
        rt: the run context (:func:`make_runtime`).
        resume: continue the run from its last checkpoint instead of starting it.
        confirm: ``confirm(payload) -> bool`` answers the metric confirmation interrupt; None: the run stops at
            the interrupt and can be resumed.

    Returns:
        The final graph state (:class:`EvalState` keys).
    """
    if rt.invocation_kind == "into" and rt.config.dry_run:
        return await _estimate_into(rt)
    if rt.invocation_kind == "into" and rt.added_judges and (rt.store.root / "state.sqlite").is_file():
        # refused before the invocation is recorded: a judge with nothing to score leaves the run as it was
        values = read_state(rt.store.root / "state.sqlite", rt.config.run_id)
        primary = (values.get("metric_plan") or {}).get("primary")
        if not (rt.config.metric and rt.config.metric != primary):  # a new ranking metric: checked once planned
            check_added_judges(rt, values)
    with run_scope(rt, resume=resume or rt.invocation_kind == "into"):
        return await _drive(rt, confirm)


async def _estimate_into(rt: RunContext) -> dict[str, Any]:
    """``ask --into RUN --dry-run``: the metrics and the estimate of what the invocation would add, with the run folder
    read as data (``RunStore(read_only=True)``, its checkpoint through :func:`read_state`): no record, journal, log
    line, lock or checkpoint of the run is made or changed.

    Args:
        rt: the run context of the ``--into`` invocation (``rt.config.dry_run``).

    Returns:
        The run's graph state with ``estimate`` (:func:`sgieval.agents.estimate.estimate_step`), ``dry_run_metrics``
        (the metric confirmation's payload) and ``confirmed`` False.

    Raises:
        InputError: as the invocation would (nothing to score for an added judge, a budget without prices, an
            ``--until-settled`` that cannot run, the run has not chosen its items yet).
    """
    if not rt.store.read_only:
        rt.store = RunStore(rt.store.root, read_only=True)
    values = read_state(rt.store.root / "state.sqlite", rt.config.run_id)
    with reading_scope(rt):
        state = {**values, **into_update(values, rt)}
        check_until_settled(state, rt)
        estimate = await estimate_step(state, rt)
        metrics = confirmation(state, rt, show=True) or {}
    return {**state, "confirmed": False, "estimate": estimate, "dry_run_metrics": metrics}


async def _drive(rt: RunContext, confirm: Callable[[dict], bool] | None) -> dict[str, Any]:
    """Invoke the checkpointed graph from wherever its thread stopped."""
    thread = {"configurable": {"thread_id": rt.config.run_id}}
    async with open_saver(rt.store.root / "state.sqlite") as saver:
        graph = build_graph(rt, saver)
        snap = await graph.aget_state(thread)
        if rt.invocation_kind == "into":
            await graph.aupdate_state(thread, into_update(snap.values, rt), as_node="customisation")
            snap = await graph.aget_state(thread)
        # Complete means the thread reached END: a checkpoint with no task left at all.  Not ``not snap.next``:
        # LangGraph leaves out of ``next`` the tasks whose writes are saved, and a run killed after a step's
        # writes were committed but before the step's own checkpoint was (checkpoints are written in the
        # background while the next step runs) has such a latest checkpoint.  Invoking with None applies
        # those saved writes and continues from there; input ({}) only starts a thread with no checkpoint.
        done = snap.created_at is not None and not snap.tasks
        if done and (snap.values.get("report") or snap.values.get("confirmed") is not True):
            return snap.values  # already complete (or declined at the confirmation): nothing to do
        inp: Any = {} if snap.created_at is None else None
        pending = list(getattr(snap, "interrupts", ()) or ())
        if snap.next and pending:
            if confirm is None:
                return {**snap.values, "__interrupt__": pending}
            inp = Command(resume=bool(confirm(pending[0].value)))
        result = await graph.ainvoke(inp, thread, context=rt)
        while "__interrupt__" in result:
            if confirm is None:
                return result
            result = await graph.ainvoke(
                Command(resume=bool(confirm(result["__interrupt__"][0].value))), thread, context=rt
            )
        if result.get("confirmed") is True and not result.get("report"):
            # confirmed but ended without a report: the router after the confirmation raised
            # and the graph kept the confirmation's writes without the route; route again from there
            await graph.aupdate_state(thread, {"confirmed": True}, as_node="confirm")
            result = await graph.ainvoke(None, thread, context=rt)
        return result
