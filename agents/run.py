"""The agent steps the evaluation graph (:mod:`sgieval.graphs.evaluate`) wires together, each ``(state, run context)
-> state update``."""

from __future__ import annotations

import threading
from typing import Any, Callable

from ..benchmarks import predefined_metrics
from ..core import OPEN_CREATIVITY, InputError, Item, get_logger, worker_active
from ..metric_pool import ScoringContext, list_rubrics
from ..metric_pool import entries as registered_metrics
from ..models import NamedModel, UnmatchedReplayError
from .customisation import MetricPlan, plan_specs, planned_metrics, run_customisation
from .evaluation import score_added_judge
from .executors import evaluate_with_executor
from .metric_choice import ranking_metric
from .questioning import SelectionPlan, UnclearRequest, run_questioning
from .requirements import metric_needs, none_can_run, ranking_cannot_run
from .runtime import RunContext, State, Update, attach_tools, plan_items, record_sampling
from .stored_responses import stored_models
from .targets import default_targets

log = get_logger("sgieval")


def _check_open_creativity_judges(ctx: ScoringContext, items: list[Item], targets: list[NamedModel]) -> None:
    """Raise InputError when a live target on open-creativity items has no judge that may score it."""
    if any(i.task == OPEN_CREATIVITY for i in items):
        for t in targets:
            problem = None if t.is_replay else ctx.judge_problem(t.name, "the open-creativity protocol")
            if problem:
                fix = problem[1] or "pass --judge <model> (it judges coherence after each answer)"
                raise InputError(problem[0], what=t.name, fix=fix)


def request_terms(rt: RunContext) -> tuple[list[str], list[str]]:
    """(metric and rubric names, model names) a request of this run may name."""
    metrics = [s.name for m in predefined_metrics(rt.catalog.values("benchmark")) for s in m.all_specs]
    metrics += [s.name for e in registered_metrics() if not e.predefined for s in e.build(rt.metric_options).all_specs]
    metrics += [r.name for r in list_rubrics()]
    has_stored = "sciaidanbench" in rt.catalog.values("benchmark")
    stored = [s.model for s in stored_models(rt.config.data_dir)] if has_stored else []
    models = [*rt.config.models, *(t.name for t in rt.targets), *stored]
    return list(dict.fromkeys(metrics)), list(dict.fromkeys(models))


async def questioning_step(state: State, rt: RunContext, ask: Callable[[dict], Any] | None = None) -> Update:
    """Questioning agent: select the items the request asks about, stored in ``items.jsonl`` once.  A misspelt
    request outside ``--yes`` is asked about first (``ask`` payload ``kind`` ``"did_you_mean"``, ``question``,
    ``request``); a true answer runs the corrected request.

    Args:
        state: the graph state.
        rt: the run context.
        ask: the graph's interrupt (None: no question can be asked).

    Returns:
        ``selection``: the selection plan, with ``item_ids``.

    Raises:
        UnclearRequest: a request the offline path does not understand (``--all`` ranks every item anyway).
    """
    metrics, models = request_terms(rt)
    request = rt.config.request
    rank_all = rt.config.rank_all

    async def select(text: str) -> tuple[SelectionPlan, list[Item], dict[str, Any]]:
        return await run_questioning(
            text, rt.catalog, k=rt.config.k, seed=rt.config.seed, agent=rt.agent, metrics=metrics, models=models,
            rank_all=rank_all, names=rt.option_names,
        )  # fmt: skip

    try:
        plan, items, trace = await select(request)
    except UnclearRequest as e:
        if e.corrected is None or rt.config.yes or ask is None:
            raise
        if ask({"kind": "did_you_mean", "question": e.message, "request": e.corrected}) is not True:
            raise
        request = e.corrected
        plan, items, trace = await select(request)
    if not rt.store.read("items"):
        rt.store.append("items", items)
    log.info("questioning", n_items=len(items), filters=plan.filters, planner=plan.planner)
    n_matching = len(rt.catalog.filter(plan.filters))  # the catalog's items of this kind, sampled or not
    ids = [i.id for i in items]
    selection = {**plan.model_dump(), "item_ids": ids, "n_matching": n_matching, "trace": trace, "request": request}
    return {"selection": selection}


async def customisation_step(state: State, rt: RunContext) -> Update:
    """Customisation agent: choose the metrics (custom rubrics saved under ``rubrics/``).

    Args:
        state: the graph state.
        rt: the run context.

    Returns:
        ``metric_plan``: a :class:`~sgieval.agents.customisation.MetricPlan` dump.

    Raises:
        InputError: no metric applies to the selected items.
    """
    items = plan_items(rt, state["selection"]["item_ids"])
    attach_tools(rt, items)
    request = state["selection"].get("request", rt.config.request)
    plan, _metrics_, trace = await run_customisation(
        request, items, agent=rt.agent, options=rt.metric_options, tools=rt.tools
    )
    plan = ranking_metric(plan, items, request, metric=rt.config.metric, options=rt.metric_options)
    if not plan.predefined and not plan.custom and not plan.added:
        benches = sorted({i.benchmark for i in items})
        raise InputError(
            f"no metric applies to the selected items of {', '.join(benches)}",
            what="metrics",
            fix="give JSONL items a `reference` field (scored by exact_match), or ask about a "
            "quality such as 'most rigorous' to get a rubric metric (needs --judge)",
        )
    for r in plan.custom:
        r.to_yaml(rt.store.rubric_path(r.name), root=rt.store.root)  # slugged: a user YAML may name it ../../x
    log.info("customisation", predefined=plan.predefined, custom=[r.name for r in plan.custom], primary=plan.primary)
    return {"metric_plan": plan.model_dump(mode="json")}


def check_until_settled(state: State, rt: RunContext) -> None:
    """Refuse an ``--until-settled`` run whose stopping rule cannot run, before any call.

    Args:
        state: the graph state (``selection``, ``metric_plan``).
        rt: the run context.

    Raises:
        InputError: fewer than two targets, or a corpus-level or unbounded ranking metric.
    """
    if not rt.config.until_settled:
        return
    from .settle import settle_problem

    plan = MetricPlan.model_validate(state["metric_plan"])
    items = plan_items(rt, state["selection"]["item_ids"])
    metrics = planned_metrics(plan, items, rt.metric_options)
    problem = settle_problem(plan.primary, metrics, [t.name for t in default_targets(rt, items)])
    if problem is not None:
        raise problem


def confirmation(state: State, rt: RunContext, *, show: bool = False) -> dict[str, Any] | None:
    """The metric confirmation; with ``--yes`` the pre-checks run instead of a question.

    Args:
        state: the graph state.
        rt: the run context.
        show: give the payload whatever ``--yes`` says, without the pre-checks (``--dry-run``).

    Returns:
        None with ``--yes``; else the question's payload (``question``, ``predefined``, ``custom``, ``primary``,
        ``notes``, ``needs``).

    Raises:
        InputError: with ``--yes``: a live open-creativity target without a judge, no metric can run, or the ranking
            metric needs a judge the run lacks.
    """
    plan = MetricPlan.model_validate(state["metric_plan"])
    items = plan_items(rt, state["selection"]["item_ids"])
    attach_tools(rt, items)
    metrics = planned_metrics(plan, items, rt.metric_options)
    specs = plan_specs(plan, [m for m in metrics if not hasattr(m, "rubric")])
    try:
        targets = default_targets(rt, items)
    except UnmatchedReplayError:
        raise
    except InputError:
        targets = []  # the evaluation step names the missing targets
    needs = metric_needs(
        specs, items, primary=plan.primary, custom={r.name for r in plan.custom}, judges=[j.name for j in rt.judges],
        targets=[t.name for t in targets], replay_targets=bool(targets) and all(t.is_replay for t in targets),
        sandbox=rt.sandbox is not None, allow_self_judge=rt.config.allow_self_judge,
    )  # fmt: skip
    if rt.config.yes and not show:
        ctx = ScoringContext(judges=rt.judges, allow_self_judge=rt.config.allow_self_judge)
        _check_open_creativity_judges(ctx, items, default_targets(rt, items))
        stop = none_can_run(needs) or ranking_cannot_run(needs)
        if stop is not None:
            raise stop
        check_until_settled(state, rt)
        return None
    custom, needed = [r.name for r in plan.custom], [n.model_dump() for n in needs]
    return {
        "question": "Run with these metrics?", "predefined": plan.predefined, "custom": custom, "primary": plan.primary,
        "notes": plan.notes, "needs": needed,
    }  # fmt: skip


async def evaluation_step(state: State, rt: RunContext) -> Update:
    """Evaluation: the targets answer the selected items and every metric scores them (done units skipped); with
    ``--until-settled`` chunk by chunk until the ranking is settled.

    Args:
        state: the graph state.
        rt: the run context.

    Returns:
        ``targets`` (model names) and ``evaluated`` (the counts).
    """
    items = plan_items(rt, state["selection"]["item_ids"])
    plan = MetricPlan.model_validate(state["metric_plan"])
    targets = default_targets(rt, items)
    rt.targets = targets
    attach_tools(rt, items)
    ctx = _scoring(rt, rt.judges)
    _check_open_creativity_judges(ctx, items, targets)
    record_sampling(rt)
    on_progress = rt.on_progress
    if any(not t.is_replay for t in targets):
        on_progress = _warming_report_imports(on_progress)
    settled: dict[str, Any] | None = None
    max_parallel = rt.config.max_concurrency  # with --batch every unit at once (up to 50,000)
    if rt.config.batch:
        max_parallel = max(max_parallel, min(len(items) * len(targets), 50_000))
    run_kw: dict[str, Any] = dict(executor=rt.config.executor, max_parallel=max_parallel, on_progress=on_progress)
    metrics = planned_metrics(plan, items, rt.metric_options)
    if rt.config.until_settled:
        from .settle import evaluate_until_settled

        prog, settled = await evaluate_until_settled(
            rt.store, items, targets, metrics, ctx, primary=plan.primary, seed=rt.config.seed, **run_kw
        )
        log.info("until settled", **{k: v for k, v in settled.items() if k not in ("item_ids", "comparisons")})
    else:
        prog = await evaluate_with_executor(rt.store, items, targets, metrics, ctx, **run_kw)
    added_new = 0
    if rt.added_judges and not prog.budget_stopped:
        added_new, prog.budget_stopped = await _score_added_judges(rt, items, targets, plan, settled)
    record_sampling(rt)  # parameters a server rejected during the run (HTTP 400) were dropped meanwhile
    log.info(
        "evaluation", new_responses=prog.responses_new, new_scores=prog.scores_new,
        new_added_judge_scores=added_new, budget_stopped=prog.budget_stopped,
    )  # fmt: skip
    counts = ("responses_new", "scores_new", "texts_embedded", "long_texts_embedded", "budget_stopped")
    evaluated = {k: getattr(prog, k) for k in counts}
    if rt.added_judges:
        evaluated["added_judge_scores_new"] = added_new
    if settled is not None:
        evaluated["settled"] = settled
    return {"targets": [t.name for t in targets], "evaluated": evaluated}


async def _score_added_judges(
    rt: RunContext, items: list[Item], targets: list[NamedModel], plan: MetricPlan, settled: dict[str, Any] | None
) -> tuple[int, str | None]:
    """Score the stored responses with each added judge in turn: (Scores made, why the budget stopped them or None)."""
    if settled:
        used = set(settled.get("item_ids") or [])
        items = [i for i in items if i.id in used]
    metrics = planned_metrics(plan, items, rt.metric_options)
    made = 0
    for judge in rt.added_judges:
        ctx = _scoring(rt, [judge])
        prog = await score_added_judge(rt.store, items, targets, metrics, ctx, max_parallel=rt.config.max_concurrency)
        made += prog.scores_new
        if prog.budget_stopped:
            return made, prog.budget_stopped
    return made, None


def _scoring(rt: RunContext, judges: list[NamedModel]) -> ScoringContext:
    """The scoring context of the run with ``judges``."""
    allow = rt.config.allow_self_judge
    return ScoringContext(
        judges=judges, tools=rt.tools, sandbox=rt.sandbox, allow_self_judge=allow, options=rt.metric_options
    )


async def reporting_step(state: State, rt: RunContext) -> Update:
    """Reporting: write ``report.md``.

    Args:
        state: the graph state.
        rt: the run context.

    Returns:
        ``report``: the path of ``report.md``.
    """
    from . import run_report

    path = await run_report.report_run(rt, state)
    return {"report": str(path)}


def _warming_report_imports(on_progress: Callable[[int, int], None] | None) -> Callable[[int, int], None]:
    """``on_progress`` that, after the first unit, imports what the report needs in a daemon thread."""
    started = False
    warm = worker_active()  # the sgieval command's warm worker imports scipy and matplotlib itself

    def load() -> None:
        try:
            from ..reports import warm_templates
            from . import reporting  # noqa: F401

            warm_templates()
            if not warm:
                import scipy.stats  # noqa: F401

                from ..reports import pyplot

                pyplot()
        except Exception:  # noqa: BLE001 - only a warm-up: the report imports them itself
            pass

    def progress(done: int, total: int) -> None:
        nonlocal started
        if not started and done > 0:
            started = True
            threading.Thread(target=load, name="sgieval-report-imports", daemon=True).start()
        if on_progress is not None:
            on_progress(done, total)

    return progress
