"""The evaluation graph: questioning -> customisation -> [confirm] -> evaluation -> reporting, a LangGraph
``StateGraph`` over :class:`EvalState` checkpointed in ``runs/<run_id>/state.sqlite`` (thread id = run id); each node
calls an agent step of :mod:`sgieval.agents.run` with the run context (LangGraph's ``context``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from ..agents import (
    check_added_judges, check_until_settled, confirmation, customisation_step, estimate_step, evaluation_step,
    into_config, into_update, questioning_step, reading_scope, reporting_step, run_scope,
)  # fmt: skip
from ..agents import (  # noqa: F401 - re-exported: callers of the graph use these names from here
    RunContext, check_request_models, load_ledger, make_runtime, models_named_in, new_run_id, metric_specs, report_run,
)  # fmt: skip
from ..core import InputError, RunConfig, RunStore, SgievalError, check_state_file, get_logger
from .checkpoints import open_saver, read_state


class EvalState(TypedDict, total=False):
    """Graph state (checkpointed): plan dumps (``selection`` with ``item_ids``, ``metric_plan``), target names, counts,
    report path, the estimate and, under ``--dry-run``, the metric confirmation's payload."""

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


def build_graph(rt: RunContext | None = None, checkpointer: Any = None):
    """Compile the four-agent evaluation graph; each invocation brings its run context (``context=rt``).

    Args:
        rt: the run context used when an invocation brings none (state reads, LangGraph Studio).
        checkpointer: a LangGraph checkpointer (:func:`open_saver`); None: no checkpoints.

    Returns:
        The compiled ``CompiledStateGraph`` over :class:`EvalState`.
    """

    def ctx(runtime: Runtime[RunContext] | None) -> RunContext:
        c = getattr(runtime, "context", None)
        c = c if isinstance(c, RunContext) else rt  # Studio may bring a context of its own (a dict)
        if c is None:
            fix = "invoke it with context=make_runtime(config)"
            raise SgievalError("the evaluation graph was invoked without a run context", fix=fix)
        return c

    def step(run: Callable[..., Any], **kw: Any) -> Callable[..., Any]:
        async def node(state: EvalState, runtime: Runtime[RunContext]) -> dict[str, Any]:
            return await run(state, ctx(runtime), **kw)

        return node

    async def confirm(state: EvalState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        c = ctx(runtime)
        if c.config.dry_run:  # --dry-run: the metrics and the estimate are the answer; nothing is evaluated
            check_until_settled(state, c)
            estimate = state.get("estimate") or await estimate_step(state, c)
            metrics = confirmation(state, c, show=True) or {}
            return {"confirmed": False, "estimate": estimate, "dry_run_metrics": metrics}
        payload = confirmation(state, c)
        if payload is None:  # --yes: no question; the estimate is still made, for the report (logged if it fails)
            try:
                estimate = state.get("estimate") or await estimate_step(state, c)
            except Exception as e:  # noqa: BLE001 - the estimate informs the report; the run it describes goes on
                get_logger("sgieval").warning(
                    "estimate failed; the run goes on without one", reason=f"{type(e).__name__}: {e}"
                )
                estimate = None
            return {"confirmed": True, "estimate": estimate}
        estimate = state.get("estimate") or await estimate_step(state, c)
        return {"confirmed": bool(interrupt({**payload, "estimate": estimate}))}

    g = StateGraph(EvalState, context_schema=RunContext)
    g.add_node("questioning", step(questioning_step, ask=interrupt))
    g.add_node("customisation", step(customisation_step))
    g.add_node("confirm", confirm)
    g.add_node("evaluation", step(evaluation_step))
    g.add_node("reporting", step(reporting_step))
    for a, b in ((START, "questioning"), ("questioning", "customisation"), ("customisation", "confirm")):
        g.add_edge(a, b)
    g.add_conditional_edges("confirm", lambda s: after_confirm(s), ["evaluation", END])
    g.add_edge("evaluation", "reporting")
    g.add_edge("reporting", END)
    return g.compile(checkpointer=checkpointer)


async def into_run(config: RunConfig, fields: Any, *, side: str = "cli") -> tuple[RunConfig, Path]:
    """The merged config (the run's with this invocation's additions) and the folder of an ``ask --into RUN``.

    Args:
        config: this invocation's config (``config.into`` names the run).
        fields: the fields this invocation set.
        side: who invoked it, for the option names in errors (``"cli"`` flags or ``"api"`` keywords).

    Returns:
        ``(merged config, run folder)``.

    Raises:
        InputError: ``config.into`` names no run, its files cannot be read, or the additions are refused.
    """
    p = Path(config.into or "").expanduser()  # a run id under out_dir, the run folder, or a file in it
    places = [Path(config.out_dir) / (config.into or ""), p] + ([p.parent] if p.suffix else [])
    d = next((d for d in places if config.into and (d / "config.json").is_file()), None)
    if d is None:
        fix = f"give a run id listed by `sgieval runs --out {config.out_dir}`, the run folder, or its report.md"
        raise InputError("no such run", what=f"--into {config.into}", fix=fix)
    base = RunStore(d, read_only=True).read_config()
    base.out_dir = str(d.parent)
    check_state_file(d / "state.sqlite")
    targets = list(read_state(d / "state.sqlite", base.run_id).get("targets") or [])
    return into_config(base, config, fields, targets, side=side), d


async def execute(
    rt: RunContext, *, resume: bool = False, confirm: Callable[[dict], bool] | None = None
) -> dict[str, Any]:
    """Run (or resume) the graph for ``rt`` to the end inside :func:`run_scope` (``ask --into``: from the confirmation).

    Args:
        rt: the run context (:func:`make_runtime`).
        resume: continue the run from its last checkpoint instead of starting it.
        confirm: ``confirm(payload) -> bool`` answers the metric confirmation; None: the run stops there, resumable.

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
    """``ask --into RUN --dry-run``: the graph state with ``estimate``, ``dry_run_metrics`` and ``confirmed`` False,
    the run folder read only (InputError as the invocation would raise)."""
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
        # complete = no task left at all (not ``not snap.next``: a run killed after a step's writes were saved but
        # before its checkpoint has tasks out of ``next``; invoking with None applies those writes and goes on)
        done = snap.created_at is not None and not snap.tasks
        if done and (snap.values.get("report") or snap.values.get("confirmed") is not True):
            return snap.values  # already complete (or declined at the confirmation): nothing to do
        pending = list(getattr(snap, "interrupts", ()) or ())
        if snap.next and pending:  # stopped at the confirmation: answered below
            result = {**snap.values, "__interrupt__": pending}
        else:
            result = await graph.ainvoke({} if snap.created_at is None else None, thread, context=rt)
        while "__interrupt__" in result:
            if confirm is None:
                return result
            answer = bool(confirm(result["__interrupt__"][0].value))
            result = await graph.ainvoke(Command(resume=answer), thread, context=rt)
        if result.get("confirmed") is True and not result.get("report"):
            # the router after the confirmation raised and the graph kept its writes without the route: route again
            await graph.aupdate_state(thread, {"confirmed": True}, as_node="confirm")
            result = await graph.ainvoke(None, thread, context=rt)
        return result
