"""``ask --into RUN``: add target models, judges or a ranking metric to a finished run."""

from __future__ import annotations

from typing import Any, Iterable

from ..core import InputError, RunConfig
from ..core import option_names as run_option_names
from .customisation import MetricPlan, planned_metrics
from .evaluation import judged_metrics
from .metric_choice import ranking_metric
from .runtime import RunContext, State, Update, plan_items

INTO_FIXED = ("request", "benchmarks", "k", "seed", "rank_all")  # chose the run's items: an --into keeps the run's


def into_config(
    base: RunConfig, given: RunConfig, fields: Iterable[str], run_targets: list[str], *, side: str = "cli"
) -> RunConfig:
    """The config of an ``ask --into RUN``: the run's with the given targets, judges (as ``added_judges``, scoring
    beside the run's own) and ranking metric added, the other given options replacing the run's.

    Args:
        base: the run's ``config.json``.
        given: this invocation's options (``given.into`` names the run).
        fields: the RunConfig fields this invocation sets.
        run_targets: the run's target models as its graph state names them, used when ``base.models`` is empty.
        side: ``"cli"`` or ``"api"``: how errors name the options (``--k`` or ``k``).

    Returns:
        The merged config (``models`` and ``added_judges`` the run's then the new ones, ``into`` None).

    Raises:
        InputError: an option of :data:`INTO_FIXED` is given another value, or nothing is added.
    """
    names = run_option_names(RunConfig, "api" if side == "api" else "cli")
    fields = set(fields)
    for f in INTO_FIXED:
        if f in fields and getattr(given, f) != getattr(base, f) and getattr(given, f) not in ("", None, []):
            was = getattr(base, f)
            raise InputError(
                f"--into {given.into} adds to a finished run whose items were chosen with "
                f"{names.get(f, f)} {was!r}; this invocation gives {getattr(given, f)!r}",
                what=names.get(f, f),
                fix=f"leave out {names.get(f, f)} (the run's items stay), or start a new run without --into",
            )
    existing = list(base.models or run_targets)
    new_models = [m for m in given.models if m not in existing]
    had = [*base.judges, *base.added_judges]
    new_judges = [j for j in dict.fromkeys(given.judges) if j not in had]
    new_metric = given.metric if given.metric and given.metric != base.metric else None
    if not (new_models or new_judges or new_metric):
        raise InputError(
            f"--into {given.into}: nothing to add (its targets {', '.join(existing) or 'none'}, judges "
            f"{', '.join(had) or 'none'} and ranking metric {base.metric or 'the default'} are already "
            "the run's)",
            what="--into",
            fix="name the target models (--models), a judge (--judge) or the ranking metric (--metric) to add",
        )
    keep = set(INTO_FIXED) | {"run_id", "into", "models", "judges", "metric", "out_dir"}
    update: dict[str, Any] = {f: getattr(given, f) for f in fields if f not in keep and f in RunConfig.model_fields}
    added = [*base.added_judges, *new_judges]
    update.update(models=[*existing, *new_models], added_judges=added, metric=new_metric or base.metric, into=None)
    return base.model_copy(update=update)


def into_update(state: State, rt: RunContext) -> Update:
    """The state an ``--into`` invocation continues the run from (before its metric confirmation).

    Args:
        state: the evaluation graph's state (``selection``, ``metric_plan``, ...).
        rt: the run context.

    Returns:
        The run's metric plan, ranking by ``rt.config.metric`` when given, and no estimate.

    Raises:
        InputError: the run has not chosen its items and metrics yet (resume it first).
    """
    if not state.get("metric_plan") or not (state.get("selection") or {}).get("item_ids"):
        fix = f"finish it first with `sgieval resume {rt.store.root}`"
        msg = "--into adds to a run that has chosen its items and metrics; this one has not yet"
        raise InputError(msg, what=str(rt.store.root), fix=fix)
    plan = MetricPlan.model_validate(state["metric_plan"])
    if rt.config.metric and rt.config.metric != plan.primary:
        items = plan_items(rt, state["selection"]["item_ids"])
        request = state["selection"].get("request", rt.config.request)
        plan = ranking_metric(plan, items, request, metric=rt.config.metric, options=rt.metric_options)
        for r in plan.custom if not rt.store.read_only else ():  # a dry run's store reads the folder only
            r.to_yaml(rt.store.rubric_path(r.name), root=rt.store.root)
    check_added_judges(rt, state, plan)
    return {"metric_plan": plan.model_dump(mode="json"), "estimate": None}


def check_added_judges(rt: RunContext, state: State, plan: MetricPlan | None = None) -> None:
    """Refuse, before anything is written, added judges when the run's plan has no judge or rubric metric.

    Args:
        rt: the run context of the ``--into`` invocation.
        state: the run's graph state (``selection``, ``metric_plan``).
        plan: the plan the invocation continues with (a new ranking metric included), when known.

    Raises:
        InputError: naming the added judges, the run's metrics and the fix.
    """
    if not rt.added_judges or not state.get("metric_plan") or not (state.get("selection") or {}).get("item_ids"):
        return
    plan = plan or MetricPlan.model_validate(state["metric_plan"])
    if judged_metrics(planned_metrics(plan, plan_items(rt, state["selection"]["item_ids"]), rt.metric_options)):
        return
    raise InputError(
        f"--judge {', '.join(j.name for j in rt.added_judges)}: the run has no judge or rubric metric for a judge "
        f"to score (its metrics: {', '.join([*plan.predefined, *(r.name for r in plan.custom)])})",
        what="--judge",
        fix="add a judge or rubric ranking metric with --metric in the same --into, or leave out --judge",
    )
