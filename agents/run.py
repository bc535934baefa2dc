"""The run of an evaluation: its context and the agent steps the evaluation graph wires together.

:class:`RunContext` holds what a run uses that is not graph state: its config, run folder, catalog, models by
role, tools, sandbox, ledger, settings and model-call context.  :func:`make_runtime` builds it from a
:class:`~sgieval.core.RunConfig`; :func:`run_scope` activates it (settings, call context, log sink and ledger
are contextvars, so nothing of the process changes).  Each step is a function
``(state, run context) -> state update`` called by a node of :mod:`sgieval.graphs.evaluate`, which holds only
the wiring: questioning (:func:`questioning_step`), customisation
(:func:`customisation_step`), the metric confirmation (:func:`confirmation`), evaluation
(:func:`evaluation_step`) and reporting (:func:`reporting_step`).  Also here: the default targets, the
judge pre-checks, the run's prices and ledger.  The report header, warnings and cost-and-usage summary are
:mod:`sgieval.agents.run_report`.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import re
import secrets
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..benchmarks import Catalog, load_catalog
from ..core import (
    OPEN_CREATIVITY,
    InputError,
    Item,
    ModelRef,
    RunConfig,
    RunStore,
    SecretValues,
    SgievalError,
)
from ..core import option_names as run_option_names
from ..core import get_logger, run_logging
from ..core import worker_active
from ..core import load_settings, use_settings
from ..metric_pool import Metric, ScoringContext
from ..models import Ledger, Prices, load_prices, price_table, unpriced_models
from ..models import NamedModel, Role
from ..models import CallContext, call_context, current_call_context
from ..models import resolve_model, sampling_for_role
from ..models import UnmatchedReplayError
from .customisation import MetricPlan, plan_specs, planned_metrics, run_customisation
from .executors import evaluate_with_executor
from .questioning import SelectionPlan, UnclearRequest, run_questioning
from .stored_responses import resolve_run_model, stored_models
from .requirements import MetricNeeds, metric_needs, none_can_run, ranking_cannot_run

__all__ = [
    "RunContext",
    "check_request_models",
    "check_until_settled",
    "confirmation",
    "customisation_step",
    "estimate_step",
    "evaluation_step",
    "check_budget_prices",
    "load_ledger",
    "make_runtime",
    "models_named_in",
    "new_run_id",
    "plan_needs",
    "questioning_step",
    "record_sampling",
    "reporting_step",
    "into_config",
    "into_update",
    "check_added_judges",
    "reading_scope",
    "run_scope",
    "start_invocation",
    "unique_models",
]

log = get_logger("sgieval")  # the run's own sink inside a run (core/logs.py), the host's structlog outside

State = Mapping[str, Any]
"""The evaluation graph's state (``sgieval.graphs.evaluate.EvalState``): ``selection``, ``metric_plan``,
``confirmed``, ``targets``, ``evaluated``, ``report``."""
Update = dict[str, Any]
"""What a step returns: the state keys it sets (LangGraph merges them into the state)."""


@dataclass
class RunContext:
    """One run's context, handed to every agent step (LangGraph's ``context``): what the steps use that is not
    graph state.  ``config``, ``store`` (the run folder), ``catalog``, the models by role (resolved from the
    config's strings, or given directly, e.g. scripted chat models in tests), ``tools``/``sandbox`` (attached
    when needed), ``on_progress(done, total)``, ``metric_options``; and the run's own ``ledger``, ``settings``,
    ``calls`` (cache switch and limits) and ``prices``, which :func:`run_scope` makes current for the run only."""

    config: RunConfig
    store: RunStore
    catalog: Catalog
    targets: list[NamedModel] = field(default_factory=list)
    judges: list[NamedModel] = field(default_factory=list)
    agent: NamedModel | None = None
    added_judges: list[NamedModel] = field(default_factory=list)
    """Judges added to the finished run (``RunConfig.added_judges``): they score beside ``judges``, into
    ``added_judge_scores.jsonl`` (:func:`score_added_judges`)."""
    tools: Any = None
    sandbox: Any = None
    on_progress: Callable[[int, int], None] | None = None
    metric_options: dict[str, Any] = field(default_factory=dict)
    ledger: Ledger | None = None
    settings: Any = None
    calls: CallContext | None = None
    prices: Any = None
    resolved_targets: dict[tuple[str, ...], list[NamedModel]] = field(default_factory=dict, repr=False)
    """Default targets already resolved, by the selected item ids (:func:`_default_targets`)."""
    matched_replays: set[tuple[str, ...]] = field(default_factory=set, repr=False)
    """Selections (item ids) whose given targets' replay files were matched to the items."""
    option_names: dict[str, str] = field(default_factory=lambda: run_option_names(RunConfig, "cli"), repr=False)
    """RunConfig field -> how errors and reports of the run name the option: the ``ask`` flags by default,
    the ``evaluate`` keywords when the Python API runs it (:func:`sgieval.core.option_names`)."""
    estimate: dict[str, Any] | None = field(default=None, repr=False)
    """The run's estimate once made (:func:`estimate_step`; the confirmation step runs again when it is
    answered, and reuses it)."""
    secrets: SecretValues | None = field(default=None, repr=False)
    """The secret values this run sends (:func:`run_secrets`; set by :func:`run_scope`): masked by value in
    every record, journal row and log line of the run."""
    argv: list[str] | None = None
    """The command line of this invocation (``sgieval`` arguments), kept in ``invocations.jsonl``; None from
    the Python API."""
    invocation_kind: str = ""
    """What this invocation does to the run: ``ask`` (a new run), ``resume``, ``into`` (``ask --into``: adds
    models, a judge or a metric); "" for ``ask``/``resume`` as :func:`run_scope` is told."""


def run_secrets(rt: RunContext) -> SecretValues:
    """The keys run ``rt`` may send: the API keys and base-URL credentials of its target, judge and agent
    models (:func:`sgieval.models.calls.model_secrets`), the provider and sandbox key variables of the
    environment, and the credentials inside the run's base URL."""
    from ..core import url_secrets
    from ..models import model_secrets

    models = [*rt.targets, *rt.judges, *rt.added_judges, *([rt.agent] if rt.agent else [])]
    values = [v for m in models for v in model_secrets(m)] + url_secrets(rt.config.base_url)
    return SecretValues.from_environment(values)


def start_invocation(rt: RunContext, kind: str) -> str:
    """Record this invocation of run ``rt``: one row of ``invocations.jsonl`` (``id``, ``time`` in UTC ISO 8601,
    ``kind``, ``argv``, ``options``: the run's config as this invocation runs it, secrets masked by the store),
    and make its id the one every Response and Score it appends carries (``RunStore.invocation``).

    Args:
        rt: the run context (its store is held by this process).
        kind: ``ask``, ``resume`` or ``into``.

    Returns:
        The invocation id (``YYYYmmddTHHMMSS-<6 hex digits>``).
    """
    from ..core import redact_url

    now = _dt.datetime.now(_dt.timezone.utc)
    inv = f"{now:%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"
    options = rt.config.model_dump(mode="json", exclude={"settings", "sent_params", "dropped_params"})
    if options.get("base_url"):
        options["base_url"] = redact_url(options["base_url"])
    row = {
        "id": inv,
        "time": now.isoformat(timespec="seconds"),
        "kind": kind,
        "argv": rt.argv,
        "options": options,
    }
    rt.store.append_rows("invocations", [row])
    rt.store.invocation = inv
    return inv


INTO_FIXED = ("request", "benchmarks", "k", "seed", "rank_all")
"""The options that chose a run's items: an ``--into`` invocation keeps the run's (it adds to those items)."""


def into_config(
    base: RunConfig, given: RunConfig, fields: Iterable[str], run_targets: list[str], *, side: str = "cli"
) -> RunConfig:
    """The config of an ``ask --into RUN`` invocation: the run's own config (``base``) with the given target
    models, judges and ranking metric added, and the other options given on this invocation (a new
    ``--max-concurrency``, ``--data-dir``, ``--yes``...) replacing the run's.

    A judge the run does not have joins as an *added judge* (``RunConfig.added_judges``): it scores the run's
    judge and rubric metrics on the stored responses beside the run's judges, whose scores stay the ones the
    ranking uses (a judge added to a finished run does not silently change its ranking).

    Args:
        base: the run's ``config.json``.
        given: this invocation's options (``given.into`` names the run).
        fields: the RunConfig fields this invocation sets (on the command line: those given a value other than
            the default; in Python: the keywords passed).
        run_targets: the run's target models as its graph state names them (the stored models a run without
            ``--models`` chose), used when ``base.models`` is empty.
        side: ``"cli"`` or ``"api"``: how errors name the options (``--k`` or ``k``).

    Returns:
        The merged config: ``run_id`` the run's, ``models`` the run's targets then the new ones, ``judges`` the
        run's, ``added_judges`` the run's added judges then the new ones, ``metric`` the given one (else the
        run's), ``into`` None.

    Raises:
        InputError: an option that chose the run's items (:data:`INTO_FIXED`) is given another value; nothing
            is added (no new target, judge or metric).
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
    update.update(
        models=[*existing, *new_models],
        added_judges=[*base.added_judges, *new_judges],
        metric=new_metric or base.metric,
        into=None,
    )
    return base.model_copy(update=update)


def into_update(state: State, rt: RunContext) -> Update:
    """The state an ``--into`` invocation continues the run from (before its metric confirmation).

    Args:
        state: the evaluation graph's state (``selection``, ``metric_plan``, ...).
        rt: the run context.

    Returns:
        The run's metric plan, with the ranking metric ``rt.config.metric`` when it is not the plan's (a rubric it
        names is saved in the run's ``rubrics/``), and no estimate (the confirmation makes this invocation's).

    Raises:
        InputError: the run has not chosen its items and metrics yet (resume it first).
    """
    if not state.get("metric_plan") or not (state.get("selection") or {}).get("item_ids"):
        raise InputError(
            "--into adds to a run that has chosen its items and metrics; this one has not yet",
            what=str(rt.store.root),
            fix=f"finish it first with `sgieval resume {rt.store.root}`",
        )
    plan = MetricPlan.model_validate(state["metric_plan"])
    if rt.config.metric and rt.config.metric != plan.primary:
        items = _items(rt, state["selection"]["item_ids"])
        plan = _ranking_metric(rt, items, plan, state["selection"].get("request", rt.config.request))
        for r in plan.custom if not rt.store.read_only else ():  # a dry run's store reads the folder only
            r.to_yaml(rt.store.rubric_path(r.name), root=rt.store.root)
    check_added_judges(rt, state, plan)
    # the estimate is made again for what this invocation adds (an earlier invocation's is not this one's)
    return {"metric_plan": plan.model_dump(mode="json"), "estimate": None}


def check_added_judges(rt: RunContext, state: State, plan: MetricPlan | None = None) -> None:
    """Refuse, before anything is written, judges added to a run (``rt.added_judges``) that would have nothing to
    score: the run's metric plan (``plan``, default the state's) has no judge or rubric metric.

    Args:
        rt: the run context of the ``--into`` invocation.
        state: the run's graph state (``selection``, ``metric_plan``).
        plan: the plan the invocation continues with (a new ranking metric included), when known.

    Raises:
        InputError: naming the added judges, the run's metrics and the fix.
    """
    from .evaluation import judged_metrics

    if not rt.added_judges or not state.get("metric_plan") or not (state.get("selection") or {}).get("item_ids"):
        return
    plan = plan or MetricPlan.model_validate(state["metric_plan"])
    if judged_metrics(_metrics(rt, _items(rt, state["selection"]["item_ids"]), plan)):
        return
    raise InputError(
        f"--judge {', '.join(j.name for j in rt.added_judges)}: the run has no judge or rubric metric for a judge "
        f"to score (its metrics: {', '.join([*plan.predefined, *(r.name for r in plan.custom)])})",
        what="--judge",
        fix="add a judge or rubric ranking metric with --metric in the same --into, or leave out --judge",
    )


def new_run_id(request: str) -> str:
    """A new run id.

    Args:
        request: the request (its slug names the run).

    Returns:
        ``YYYYmmdd-HHMMSS-<slug of the request>-<8 random hex digits>`` (the suffix keeps two runs of one request
        started in the same second apart).
    """
    slug = re.sub(r"[^a-z0-9]+", "-", (request or "all").lower()).strip("-")[:32].strip("-")
    return f"{_dt.datetime.now():%Y%m%d-%H%M%S}-{slug or 'all'}-{secrets.token_hex(4)}"


def recorded_settings(shown: Mapping[str, Any] | None) -> Any:
    """The settings a run recorded in its ``config.json`` when it started (``Settings.shown()``), as a settings
    object: its header line is the recorded one and its ``OPENAI_BASE_URL`` is the run's (other endpoint
    variables are not recorded: they are read from the environment now); a recorded key is ``"set"`` (a stand-in:
    such settings resolve models that are never called).

    Args:
        shown: the recorded settings (``RunConfig.settings``), or None/{} when none were recorded.

    Returns:
        The :class:`sgieval.core.settings.Settings`, or None when nothing usable was recorded (a run folder's
        file is data: a value that does not validate gives None, and the current settings are used).
    """
    from pydantic import ValidationError

    from ..core import ENV_NAMES, Settings

    if not shown or not isinstance(shown, Mapping):
        return None
    aliased = {"openai_api_key", "openai_base_url", "e2b_api_key"}
    values: dict[str, Any] = {}
    for name, env in ENV_NAMES.items():
        if env not in shown:
            continue
        v = shown[env]
        if name.endswith("_api_key"):
            v = "set" if v == "set" else None
        values[env if name in aliased else name] = v
    try:
        return Settings(**values)
    except (ValidationError, TypeError, ValueError):
        return None


def make_runtime(
    config: RunConfig,
    *,
    catalog: Catalog | None = None,
    targets: list[NamedModel] | None = None,
    judges: list[NamedModel] | None = None,
    agent: NamedModel | None = None,
    run_dir: str | Path | None = None,
    added_judges: list[NamedModel] | None = None,
    read_only: bool = False,
    calls: bool = True,
    **kw: Any,
) -> RunContext:
    """The run context of ``config``: its model strings resolved (unless models are given), its catalog loaded
    (unless given).

    A run folder that already holds ``items.jsonl`` (a resumed or re-rendered run) uses those items, not the
    benchmark files as they are now: the report does not change when a source file is edited or moved, and the run
    needs no source at all once its items are stored.

    Args:
        config: the run's options.
        catalog: the items to select from (default: the benchmarks the config names).
        targets: the models under test (default: resolved from ``config.models``).
        judges: the judges (default: resolved from ``config.judges``).
        agent: the agent model (default: resolved from ``config.agent_model``; None: offline agent paths).
        run_dir: the run folder (default ``<out_dir>/<run_id>``); ``report`` and ``resume`` pass the folder they
            were given, so a renamed or symlinked run folder is the one read and written.
        added_judges: the judges added to the finished run (default: resolved from ``config.added_judges``).
        read_only: open the run folder for reading only (``RunStore(read_only=True)``: nothing in it is made or
            changed; the context cannot run the run), for reading a finished run's metrics.
        calls: False when the context calls no target or judge (a re-rendered report; implied by ``read_only``):
            they are resolved as under ``--dry-run`` (no API key needed, no batch API) and one that cannot be built
            on this machine (a provider package or a base-URL variable missing) is named only; the agent model is
            resolved as usual (it writes the report's narrative).
        kw: further :class:`RunContext` fields (``tools``, ``sandbox``, ``on_progress``, ``metric_options``, ...).

    Returns:
        The run context; nothing is written yet.

    Raises:
        InputError: bad model strings or missing data.
    """
    run_dir = Path(run_dir) if run_dir is not None else Path(config.out_dir) / config.run_id
    existing = (  # no folder made for a new run
        RunStore(run_dir, read_only=read_only) if (run_dir / "items.jsonl").is_file() or read_only else None
    )
    stored = existing.read("items") if existing else []
    if catalog is None:
        try:
            catalog = load_catalog(config.benchmarks or None, config.data_dir)
        except SgievalError:
            if not stored:
                raise
            catalog = Catalog(
                items=stored,
                sources={
                    b: f"{run_dir / 'items.jsonl'} (the run's copy)" for b in dict.fromkeys(i.benchmark for i in stored)
                },
            )
    if stored:
        catalog.by_id.update({i.id: i for i in stored})

    calls = calls and not read_only
    batch, dry_run = (config.batch, config.dry_run) if calls else (False, True)
    # a re-render states the settings the run recorded when it started (config.json), not this shell's
    recorded = None if calls or "settings" in kw else recorded_settings(config.settings)
    if recorded is not None:
        kw["settings"] = recorded

    def named(resolve: Callable[..., NamedModel], spec: str, role: Role, **kw: Any) -> NamedModel:
        try:
            return resolve(spec, role, base_url=config.base_url, batch=batch, dry_run=dry_run, settings=recorded, **kw)
        except InputError:
            if calls:
                raise
            local = ModelRef.parse(spec, strict=False).provider == "local"
            return NamedModel(name=spec, role=role, smoke_test=local)  # named only: never called

    def judge_models(names: list[str]) -> list[NamedModel]:
        return [named(resolve_model, j, "judge", **sampling_for_role(config, "judge")) for j in names]

    if judges is None:
        judges = judge_models(config.judges)
    added = unique_models(judge_models(config.added_judges) if added_judges is None else added_judges)
    if agent is None and config.agent_model:
        try:
            agent = resolve_model(
                config.agent_model, "agent", base_url=config.base_url, **sampling_for_role(config, "agent")
            )
        except InputError as e:
            if calls:
                raise
            e.message += " (the agent model writes the report's narrative; no other model is called to re-render it)"
            raise InputError(e.message, what=e.what, fix=e.fix) from None
    if targets is None and config.models:
        targets = [
            named(resolve_run_model, m, "target", data_dir=config.data_dir, **sampling_for_role(config, "target"))
            for m in config.models
        ]
    targets, judges = unique_models(targets or []), unique_models(judges)
    if batch:  # models given directly too; a provider without a batch API fails here, before any call
        from ..models import batch_model

        targets, judges = [batch_model(m) for m in targets], [batch_model(m) for m in judges]
        added = [batch_model(m) for m in added]
    store = existing or RunStore(run_dir)
    settings = kw.pop("settings", None) or load_settings()  # bad SGIEVAL_* values fail here, before any write
    return RunContext(
        config=config,
        store=store,
        catalog=catalog,
        targets=targets,
        judges=judges,
        agent=agent,
        added_judges=added,
        settings=settings,
        **kw,
    )


def unique_models(models: list[NamedModel]) -> list[NamedModel]:
    """``models`` without repeats of a name (``replay:phi4`` and ``replay:phi4:latest`` resolve to one model).

    Args:
        models: resolved models.

    Returns:
        The first of each name, in order.

    Raises:
        InputError: two different replay files give one name (a/ans.jsonl and b/ans.jsonl): one would be lost.
    """
    seen: dict[str, NamedModel] = {}
    for m in models:
        first = seen.get(m.name)
        if first is None:
            seen[m.name] = m
            continue
        a, b = (getattr(getattr(x, "replay", None), "source", None) for x in (first, m))
        if a is not None and b is not None and Path(a).resolve() != Path(b).resolve():
            raise InputError(
                f"two stored-response files give the same model name {m.name!r} ({a}, {b})",
                what="--models",
                fix="add a \"model\" field to the lines of one file, or rename it",
            )
        log.warning("duplicate model ignored", model=m.name, role=m.role)
    return list(seen.values())


def models_named_in(request: str, models: list[str]) -> list[str]:
    """The stored models the request names.

    A model matches when its name (``openai/4o``) or its bare name (``4o``, ``llama3.3`` for
    ``llama3.3:latest``) appears in the request as a word of its own (case-insensitive; no letter, digit or dot
    may touch it, save a sentence-ending dot, so "GPT-4o" names ``openai/4o`` and "phi4" does not match
    "phi45"), or its family name: the leading letters of the bare name when there are at least 4 ("llama" names
    ``llama3.3:latest``).

    Args:
        request: the request.
        models: stored model names.

    Returns:
        The named ones, in ``models`` order.
    """
    text = (request or "").lower()
    out = []
    for m in models:
        bare = ModelRef.parse(m).bare
        family = re.match(r"[a-z]{4,}", bare)  # "llama" for llama3.3, "qwen" for qwen2.5
        names = {m.lower(), bare, family.group(0) if family else ""}
        if any(re.search(rf"(?<![\w.]){re.escape(n)}(?!\w|\.\w)", text) for n in names if n):
            out.append(m)
    return out


def _items(rt: RunContext, ids: list[str]) -> list[Item]:
    return [rt.catalog.by_id[i] for i in ids]


def _metrics(rt: RunContext, items: list[Item], plan: MetricPlan) -> list[Metric]:
    return planned_metrics(plan, items, rt.metric_options)


def _default_targets(rt: RunContext, items: list[Item]) -> list[NamedModel]:
    """The run's target models: the given ones, else those of ``--models``, else every stored SciAidanBench
    model (or the ones the request names).  Resolved once per run and item selection (the confirmation,
    the requirements and the evaluation all ask; the stored answers are read once)."""
    key = tuple(i.id for i in items)
    if rt.targets:
        if key not in rt.matched_replays:  # the given targets' replay files: matched once per selection
            match_replays(rt, items, rt.targets)
            rt.matched_replays.add(key)
        return rt.targets
    if key not in rt.resolved_targets:
        targets = _resolve_targets(rt, items)
        match_replays(rt, items, targets)
        rt.resolved_targets[key] = targets
    return rt.resolved_targets[key]


def match_replays(rt: RunContext, items: list[Item], targets: list[NamedModel]) -> None:
    """Match each JSONL replay target's stored item ids to the items of the selected benchmarks
    (:meth:`sgieval.models.replay.ReplayStore.match_items`) and log what was mapped or left unmatched.
    Raises InputError when none of a replay file's ids matches an item."""
    benches = {i.benchmark for i in items}
    candidates = [i for i in rt.catalog.items if i.benchmark in benches] or items
    for t in targets:
        if t.replay is None or not t.replay.by_item:
            continue
        t.replay.match_items(candidates)
        if t.replay.aliases:
            log.warning(
                "replay ids given without their benchmark prefix were mapped to items",
                file=str(t.replay.source),
                mapped=len(t.replay.aliases),
                example=next(f"{s} -> {i}" for i, s in t.replay.aliases.items()),
            )
        if t.replay.unmatched:
            log.warning(
                "replay lines match no item of the selected benchmark and are not used",
                file=str(t.replay.source),
                lines=t.replay.unmatched_lines(),
            )


def replay_notes(targets: list[NamedModel]) -> tuple[str, list[str]]:
    """(the Run table's "replay item ids" line, the report's warnings) for the replay targets whose stored ids
    were mapped from bare ids or match no item."""
    parts, warnings = [], []
    for t in targets:
        r = t.replay
        if r is None or not (r.aliases or r.unmatched):
            continue
        bits = []
        if r.aliases:
            item_id, stored_id = next(iter(r.aliases.items()))
            n = len(r.aliases)
            bits.append(f"{n} bare id{'' if n == 1 else 's'} mapped to item ids (e.g. {stored_id} -> {item_id})")
        if r.unmatched:
            n = len(r.unmatched)
            lines = f"{n} line{'' if n == 1 else 's'}"
            were = "was" if n == 1 else "were"
            bits.append(f"{lines} matched no item and {were} not used: {r.unmatched_lines()}")
            warnings.append(
                f"{lines} of the replay file {r.source} ({t.name}) matched no item of the "
                f"selected benchmark and {were} not used: {r.unmatched_lines()}."
            )
        parts.append(f"{r.source}: {'; '.join(bits)}")
    return "; ".join(parts), warnings


def _resolve_targets(rt: RunContext, items: list[Item]) -> list[NamedModel]:
    if rt.config.models:
        return unique_models(
            [
                resolve_run_model(
                    m,
                    "target",
                    base_url=rt.config.base_url,
                    data_dir=rt.config.data_dir,
                    **sampling_for_role(rt.config, "target"),
                )
                for m in rt.config.models
            ]
        )
    if items and all(i.benchmark == "sciaidanbench" for i in items):
        stores = stored_models(rt.config.data_dir)
        named = models_named_in(rt.config.request, [s.model for s in stores])
        if len(named) > 1:  # a comparison of the named models
            stores = [s for s in stores if s.model in named]
            log.info("targets named in the request", targets=named)
        elif named:  # one model: every stored model is replayed too, so the report says where it stands
            log.info("one stored model named in the request; the others are shown for comparison", focus=named)
        if stores:
            return [NamedModel(name=f"replay:{s.model}", role="target", replay=s, provider="replay") for s in stores]
        raise InputError(
            "no target models given and no stored SciAidanBench responses found",
            what="--models",
            fix="pass --models (e.g. replay:o1-mini, openai:gpt-4.1), or put stored answers in "
            "<data dir>/sciaidanbench/responses/ (`sgieval data pull sciaidanbench`)",
        )
    raise InputError(
        "no target models given",
        what="--models",
        fix="pass --models (e.g. openai:gpt-4.1, replay:<file.jsonl>, local:smollm2)",
    )


def _attach_tools(rt: RunContext, items: list[Item]) -> None:
    """Give the run its sandbox (when dry-experiment items need one) and its
    tool pool (when judges may call tools).  A sandbox that cannot start is
    not fatal: the dry-experiment scores record it as ``infra_error`` with
    the reason, and ``--unsafe-local-exec`` is the explicit way out."""
    from ..core import DRY_EXPERIMENT, SandboxUnavailableError

    rt.metric_options.setdefault("unsafe_local_exec", rt.config.unsafe_local_exec)
    if rt.config.judge_repeats > 1:
        rt.metric_options.setdefault("judge_repeats", rt.config.judge_repeats)
    if rt.config.corpus:
        rt.metric_options.setdefault("corpus", rt.config.corpus)
    if rt.sandbox is None and any(i.task == DRY_EXPERIMENT for i in items):
        from ..tools import get_sandbox

        try:
            rt.sandbox = get_sandbox(rt.config.sandbox, unsafe_local_exec=rt.config.unsafe_local_exec)
        except SandboxUnavailableError as e:
            log.warning("sandbox unavailable", reason=e.one_line())
    if rt.tools is None and (rt.judges or rt.agent) and rt.config.tools:
        from ..tools import ToolPool

        kw: dict[str, Any] = dict(
            documents=rt.catalog.items,
            sandbox=rt.sandbox or rt.config.sandbox,
            unsafe_local_exec=rt.config.unsafe_local_exec,
            corpus_dir=rt.config.corpus,
        )
        try:
            rt.tools = ToolPool.from_names(rt.config.tools, **kw)
        except SandboxUnavailableError as e:
            log.warning("run_python tool unavailable", reason=e.one_line())
            rt.tools = ToolPool.from_names([n for n in rt.config.tools if n != "python"], **kw)


def _check_open_creativity_judges(ctx: ScoringContext, items: list[Item], targets: list[NamedModel]) -> None:
    """Raise InputError when a live target on open-creativity items has no
    judge that may score it: every one of its answers would fail, so the run
    says so before any call."""
    if any(i.task == OPEN_CREATIVITY for i in items):
        for t in targets:
            problem = None if t.is_replay else ctx.judge_problem(t.name, "the open-creativity protocol")
            if problem:
                raise InputError(
                    problem[0],
                    what=t.name,
                    fix=problem[1] or "pass --judge <model> (it judges coherence after each answer)",
                )


def plan_needs(rt: RunContext, item_ids: list[str], plan: MetricPlan) -> list[MetricNeeds]:
    """What each metric of ``plan`` needs and whether this run has it (the confirmation's list,
    :func:`sgieval.agents.requirements.metric_needs`).

    Args:
        rt: the run context.
        item_ids: the selected items.
        plan: the metric plan.

    Returns:
        One MetricNeeds per metric of the plan.
    """
    items = _items(rt, item_ids)
    _attach_tools(rt, items)
    metrics = _metrics(rt, items, plan)
    specs = plan_specs(plan, [m for m in metrics if not hasattr(m, "rubric")])
    try:
        targets = _default_targets(rt, items)
    except UnmatchedReplayError:
        raise  # a replay file that answers no item stops the run before the confirmation asks
    except InputError:
        targets = []  # the evaluation step names the missing targets
    return metric_needs(
        specs,
        items,
        primary=plan.primary,
        custom={r.name for r in plan.custom},
        judges=[j.name for j in rt.judges],
        targets=[t.name for t in targets],
        replay_targets=bool(targets) and all(t.is_replay for t in targets),
        sandbox=rt.sandbox is not None,
        allow_self_judge=rt.config.allow_self_judge,
    )


def check_request_models(rt: RunContext) -> None:
    """Stop a new run whose request names a model with no stored responses that is not one of its targets.

    Args:
        rt: the run context.

    Raises:
        InputError: naming the stored models and the ``--models`` flag that runs it live
            (:func:`sgieval.agents.request_models.check_named_models`).
    """
    from ..agents.request_models import check_named_models, model_mentions

    if not model_mentions(rt.config.request):
        return
    stored = [s.model for s in stored_models(rt.config.data_dir)]
    check_named_models(rt.config.request, [*rt.config.models, *(t.name for t in rt.targets)], stored)


def request_terms(rt: RunContext) -> tuple[list[str], list[str]]:
    """(metric and rubric names, model names) a request of this run may name: the predefined metrics of the loaded
    benchmarks, the registered metrics and the rubric library; the run's target strings and the stored models."""
    from ..benchmarks import predefined_metrics
    from ..metric_pool import entries as registered_metrics
    from ..metric_pool import list_rubrics

    metrics = [s.name for m in predefined_metrics(rt.catalog.values("benchmark")) for s in m.all_specs]
    metrics += [s.name for e in registered_metrics() if not e.predefined for s in e.build(rt.metric_options).all_specs]
    metrics += [r.name for r in list_rubrics()]
    stored = (
        [s.model for s in stored_models(rt.config.data_dir)]
        if "sciaidanbench" in rt.catalog.values("benchmark")
        else []
    )
    return list(dict.fromkeys(metrics)), list(
        dict.fromkeys([*rt.config.models, *(t.name for t in rt.targets), *stored])
    )


async def questioning_step(state: State, rt: RunContext, ask: Callable[[dict], Any] | None = None) -> Update:
    """Questioning agent: select the items the request asks about, store them in ``items.jsonl`` (once).

    When the request's words are only misspelt and the run is not ``--yes``, ``ask(payload)`` puts the question
    first: payload ``kind`` ``"did_you_mean"``, ``question`` and the corrected ``request``; a true answer runs the
    corrected request (kept as ``selection["request"]``), any other raises the error.

    Args:
        state: the evaluation graph's state.
        rt: the run context.
        ask: the graph's interrupt (None: no question can be asked).

    Returns:
        The state update: ``selection`` (the selection plan, with ``item_ids``).

    Raises:
        UnclearRequest: a request the offline path does not understand (exit code 2; ``--all`` ranks every item
            anyway).
    """
    metrics, models = request_terms(rt)
    request = rt.config.request
    rank_all = rt.config.rank_all

    async def select(text: str) -> tuple[SelectionPlan, list[Item], dict[str, Any]]:
        return await run_questioning(
            text,
            rt.catalog,
            k=rt.config.k,
            seed=rt.config.seed,
            agent=rt.agent,
            metrics=metrics,
            models=models,
            rank_all=rank_all,
            names=rt.option_names,
        )

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
    return {
        "selection": {
            **plan.model_dump(),
            "item_ids": [i.id for i in items],
            "n_matching": n_matching,
            "trace": trace,
            "request": request,
        }
    }


def _ranking_metric(rt: RunContext, items: list[Item], plan: MetricPlan, request: str) -> MetricPlan:
    """``plan`` with the ranking metric ``--metric`` or the request names
    (:func:`sgieval.agents.metric_choice.choose_ranking_metric`): any metric of the plan, a registered metric that
    applies to the items (added to the plan), or a saved rubric."""
    from ..benchmarks import predefined_metrics
    from ..metric_pool import list_rubrics
    from .customisation import registered_offers
    from .metric_choice import choose_ranking_metric

    specs = [s for m in _metrics(rt, items, plan) for s in m.all_specs]
    predefined = predefined_metrics(list(dict.fromkeys(i.benchmark for i in items)), items, rt.metric_options)
    offers = registered_offers(items, predefined, rt.metric_options)
    chosen = choose_ranking_metric(
        plan,
        request,
        metric=rt.config.metric,
        specs=specs,
        library=list_rubrics(),
        offered={e.name: list(m.all_specs) for e, m in offers},
    )
    added = [e.key for e, _m in offers if e.name in chosen.added and e.name not in plan.added]
    if added and plan.metrics:  # a plan that names its metrics by key scores the added one too
        chosen = chosen.model_copy(
            update={"metrics": [*chosen.metrics, *[k for k in added if k not in chosen.metrics]]}
        )
    return chosen


async def customisation_step(state: State, rt: RunContext) -> Update:
    """Customisation agent: choose the metrics (predefined, added registered ones, custom rubrics saved under
    ``rubrics/``).

    Args:
        state: the evaluation graph's state (``selection``, ``metric_plan``, ...).
        rt: the run context.

    Returns:
        The state update: ``metric_plan`` (a :class:`~sgieval.agents.customisation.MetricPlan` dump).

    Raises:
        InputError: no metric applies to the selected items.
    """
    items = _items(rt, state["selection"]["item_ids"])
    _attach_tools(rt, items)
    plan, _metrics_, trace = await run_customisation(
        state["selection"].get("request", rt.config.request),
        items,
        agent=rt.agent,
        options=rt.metric_options,
        tools=rt.tools,
    )
    plan = _ranking_metric(rt, items, plan, state["selection"].get("request", rt.config.request))
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
    """Refuse an ``--until-settled`` run whose stopping rule cannot run, before any call (also under
    ``--dry-run``, whose estimate would otherwise describe a run that stops at its first step).

    Args:
        state: the evaluation graph's state (``selection``, ``metric_plan``).
        rt: the run context.

    Raises:
        InputError: ``--until-settled`` with fewer than two targets, or a ranking metric that is corpus-level or
            unbounded (:func:`sgieval.agents.settle.settle_problem`).
    """
    if not rt.config.until_settled:
        return
    from .settle import settle_problem

    plan = MetricPlan.model_validate(state["metric_plan"])
    items = _items(rt, state["selection"]["item_ids"])
    problem = settle_problem(plan.primary, _metrics(rt, items, plan), [t.name for t in _default_targets(rt, items)])
    if problem is not None:
        raise problem


def confirmation(state: State, rt: RunContext, *, show: bool = False) -> dict[str, Any] | None:
    """The metric confirmation.

    With ``--yes`` (``rt.config.yes``) the pre-checks run instead of a question.

    Args:
        state: the evaluation graph's state (``selection``, ``metric_plan``, ...).
        rt: the run context.
        show: give the payload whatever ``--yes`` says, without the pre-checks (``--dry-run`` shows the
            metrics, what each needs and whether it is available, beside the estimate).

    Returns:
        None with ``--yes`` (confirmed); otherwise the question's payload (``question``, ``predefined``,
        ``custom``, ``primary``, ``notes``, ``needs``) for the graph's interrupt.

    Raises:
        InputError: with ``--yes``, before any call: a live open-creativity target without a judge that may score
            it, a plan in which no metric can run, or a ranking metric that needs a judge the run lacks.
    """
    plan = MetricPlan.model_validate(state["metric_plan"])
    needs = plan_needs(rt, state["selection"]["item_ids"], plan)
    if rt.config.yes and not show:
        _check_open_creativity_judges(
            ScoringContext(judges=rt.judges, allow_self_judge=rt.config.allow_self_judge),
            _items(rt, state["selection"]["item_ids"]),
            _default_targets(rt, _items(rt, state["selection"]["item_ids"])),
        )
        stop = none_can_run(needs) or ranking_cannot_run(needs)
        if stop is not None:  # --yes: nothing could be measured or ranked, so nothing is run
            raise stop
        check_until_settled(state, rt)
        return None
    return {
        "question": "Run with these metrics?",
        "predefined": plan.predefined,
        "custom": [r.name for r in plan.custom],
        "primary": plan.primary,
        "notes": plan.notes,
        "needs": [n.model_dump() for n in needs],
    }


async def estimate_step(state: State, rt: RunContext) -> dict[str, Any]:
    """The run's estimate before any call (:func:`sgieval.agents.estimate.estimate_run`): per (model, role) the
    calls, input tokens (counted on the target and judge prompts built for every item), output tokens and USD.
    Kept in the run folder (``estimate.jsonl``) for the report's cost section, with the invocation it is of
    (``invocation``, ``kind``).  An ``ask --into`` invocation counts only what it calls: the responses and scores the
    run holds are reused (not counted), and the added judges' pass counts what they have not scored; its rows
    without a call are left out (a note names them).  A run folder opened read-only (``--into`` under
    ``--dry-run``) gets nothing written.

    Args:
        state: the graph state after the customisation (``selection``, ``metric_plan``).
        rt: the run context.

    Returns:
        The estimate as a dict (:class:`sgieval.models.estimate.Estimate` fields) with ``lines``: its text,
        one line per (model, role), then the total and how it was counted.
    """
    from ..models import get_cache
    from .estimate import estimate_run

    if rt.estimate is not None:
        return rt.estimate
    items = _items(rt, state["selection"]["item_ids"])
    plan = MetricPlan.model_validate(state["metric_plan"])
    _attach_tools(rt, items)
    try:
        targets = _default_targets(rt, items)
    except InputError:
        targets = []
    agent_done: dict[str, int] = {}
    if rt.agent is not None and rt.ledger is not None:
        for t in rt.ledger.totals().values():
            if t.model == rt.agent.name and t.role == "agent":
                agent_done = {"calls": t.calls, "input_tokens": t.input_tokens, "output_tokens": t.output_tokens}
    into = rt.invocation_kind == "into"
    # an --into reuses what the run holds: its stored responses are not asked again, its scores not made again
    stored = {(r.item_id, r.model): r for r in rt.store.read("responses")} if into else None
    done = {(s.item_id, s.model, s.metric) for s in rt.store.read("scores")} if into else None
    common: dict[str, Any] = dict(
        tools=rt.tools,
        options=rt.metric_options,
        allow_self_judge=rt.config.allow_self_judge,
        prices=run_prices(rt),
        cache=get_cache() if rt.config.use_cache else None,
        batch=rt.config.batch,
    )
    est = await estimate_run(
        items,
        targets,
        rt.judges,
        _metrics(rt, items, plan),
        agent=rt.agent,
        agent_done=agent_done,
        stored=stored,
        done=done,
        **common,
    )
    if rt.added_judges:  # their pass: every target's stored responses, on the judge and rubric metrics
        from .evaluation import ADDED_JUDGE_SCORES, JUDGED_KINDS, judged_metrics

        judged = judged_metrics(_metrics(rt, items, plan))
        objective = {s.name for m in judged for s in m.specs if s.kind not in JUDGED_KINDS}  # the run's own
        added_rows = rt.store.read(ADDED_JUDGE_SCORES)
        for judge in rt.added_judges:  # one pass per judge, as the run scores them (score_added_judge)
            mine = {(s.item_id, s.model, s.metric) for s in added_rows if s.judge == judge.name}
            mine |= {(i.id, t.name, name) for i in items for t in targets for name in objective}
            extra = await estimate_run(items, targets, [judge], judged, stored=stored, done=mine, **common)
            est.rows += [r for r in extra.rows if r.role == "judge"]
    if into:
        idle = [r for r in est.rows if not (r.calls or r.cached_calls) and r.role != "agent"]
        est.rows = [r for r in est.rows if r not in idle]
        held = len(stored or {})
        est.notes.append(
            f"ask --into: the {held} responses and {len(done or ())} scores the run holds are reused, not asked "
            "again; the rows count only the calls this invocation makes"
            + (f" (nothing to call for {', '.join(f'{r.model} ({r.role})' for r in idle)})" if idle else "")
        )
    out = {**est.model_dump(mode="json"), "lines": est.lines()}
    if rt.store.invocation:  # which invocation this estimate is of (an --into's is kept beside the run's)
        out.update(invocation=rt.store.invocation, kind=rt.invocation_kind or "ask")
    if not rt.store.read_only:  # an --into under --dry-run reads the run folder only
        rt.store.append_rows("estimate", [out])
    rt.estimate = out
    log.info("estimate", calls=est.calls, input_tokens=est.input_tokens, usd=est.usd)
    return out


async def evaluation_step(state: State, rt: RunContext) -> Update:
    """Evaluation: the targets answer the selected items and every metric of the plan scores them.

    Records are appended to the run folder as they come; done units are skipped.  With ``--until-settled`` the items
    go in a seeded random order, chunk by chunk, until the ranking is settled (:mod:`sgieval.agents.settle`; the
    stop record is ``evaluated["settled"]``).

    Args:
        state: the evaluation graph's state (``selection``, ``metric_plan``, ...).
        rt: the run context.

    Returns:
        The state update: ``targets`` (model names) and ``evaluated`` (the counts).
    """
    items = _items(rt, state["selection"]["item_ids"])
    plan = MetricPlan.model_validate(state["metric_plan"])
    targets = _default_targets(rt, items)
    rt.targets = targets
    _attach_tools(rt, items)
    ctx = ScoringContext(
        judges=rt.judges,
        tools=rt.tools,
        sandbox=rt.sandbox,
        allow_self_judge=rt.config.allow_self_judge,
        options=rt.metric_options,
    )
    _check_open_creativity_judges(ctx, items, targets)
    record_sampling(rt)
    on_progress = rt.on_progress
    if any(not t.is_replay for t in targets):
        on_progress = _warming_report_imports(on_progress)
    settled: dict[str, Any] | None = None
    if rt.config.until_settled:
        from .settle import evaluate_until_settled

        prog, settled = await evaluate_until_settled(
            rt.store,
            items,
            targets,
            _metrics(rt, items, plan),
            ctx,
            primary=plan.primary,
            seed=rt.config.seed,
            executor=rt.config.executor,
            max_parallel=_max_parallel(rt.config, len(items) * len(targets)),
            on_progress=on_progress,
        )
        log.info("until settled", **{k: v for k, v in settled.items() if k not in ("item_ids", "comparisons")})
    else:
        prog = await evaluate_with_executor(
            rt.store,
            items,
            targets,
            _metrics(rt, items, plan),
            ctx,
            executor=rt.config.executor,
            max_parallel=_max_parallel(rt.config, len(items) * len(targets)),
            on_progress=on_progress,
        )
    added_new = 0
    if rt.added_judges and not prog.budget_stopped:
        added_new, prog.budget_stopped = await _score_added_judges(rt, items, targets, plan, settled)
    record_sampling(rt)  # parameters a server rejected during the run (HTTP 400) were dropped meanwhile
    log.info(
        "evaluation",
        new_responses=prog.responses_new,
        new_scores=prog.scores_new,
        new_added_judge_scores=added_new,
        budget_stopped=prog.budget_stopped,
    )
    return {
        "targets": [t.name for t in targets],
        "evaluated": {
            "responses_new": prog.responses_new,
            "scores_new": prog.scores_new,
            "texts_embedded": prog.texts_embedded,
            "long_texts_embedded": prog.long_texts_embedded,
            "budget_stopped": prog.budget_stopped,
            **({"added_judge_scores_new": added_new} if rt.added_judges else {}),
            **({"settled": settled} if settled is not None else {}),
        },
    }


async def _score_added_judges(
    rt: RunContext, items: list[Item], targets: list[NamedModel], plan: MetricPlan, settled: dict[str, Any] | None
) -> tuple[int, str | None]:
    """Score the stored responses with each judge added to the run (:func:`~sgieval.agents.evaluation.score_added_judge`),
    one judge at a time, on the items the run's report covers; returns the Scores made and why the budget
    stopped them (None when it did not)."""
    from .evaluation import score_added_judge

    if settled:
        used = set(settled.get("item_ids") or [])
        items = [i for i in items if i.id in used]
    metrics = _metrics(rt, items, plan)
    made = 0
    for judge in rt.added_judges:
        ctx = ScoringContext(
            judges=[judge],
            tools=rt.tools,
            sandbox=rt.sandbox,
            allow_self_judge=rt.config.allow_self_judge,
            options=rt.metric_options,
        )
        prog = await score_added_judge(rt.store, items, targets, metrics, ctx, max_parallel=rt.config.max_concurrency)
        made += prog.scores_new
        if prog.budget_stopped:
            return made, prog.budget_stopped
    return made, None


def _max_parallel(config: RunConfig, units: int) -> int:
    """Target calls in flight: ``--max-concurrency``; with ``--batch`` every (item, target) unit at once, so
    the target calls of a run go in one batch per provider (up to 50,000)."""
    if config.batch:
        return max(config.max_concurrency, min(units, 50_000))
    return config.max_concurrency


async def reporting_step(state: State, rt: RunContext) -> Update:
    """Reporting: write ``report.md`` (:func:`sgieval.agents.run_report.report_run`).

    Args:
        state: the evaluation graph's state (``selection``, ``metric_plan``, ...).
        rt: the run context.

    Returns:
        The state update: ``report``, the path of ``report.md``.
    """
    from . import run_report  # the report header imports this module

    path = await run_report.report_run(rt, state)
    return {"report": str(path)}


def _warming_report_imports(on_progress: Callable[[int, int], None] | None) -> Callable[[int, int], None]:
    """``on_progress`` that also starts, when the first unit is done, a daemon
    thread importing what the report will need (the report builder,
    scipy.stats, matplotlib: ~1 s of CPU).  While model calls are in flight the
    event loop mostly waits, so these imports overlap the calls instead of
    following them; nothing is imported before the first call."""
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


def record_sampling(rt: RunContext) -> None:
    """Write into ``config.json`` the sampling parameters each model of the run actually gets
    (``RunConfig.sent_params``) and those it does not, with the reason (``RunConfig.dropped_params``); log each
    dropped one.  Replay targets send nothing and are not listed.

    Args:
        rt: the run context.
    """
    models = [*rt.targets, *rt.judges, *rt.added_judges, *([rt.agent] if rt.agent else [])]
    sent = {m.name: dict(m.params) for m in models if not m.is_replay}
    dropped = {m.name: dict(m.dropped) for m in models if m.dropped}
    if sent == rt.config.sent_params and dropped == rt.config.dropped_params:
        return
    for name, params in dropped.items():
        for p, why in params.items():
            if rt.config.dropped_params.get(name, {}).get(p) != why:
                log.warning("sampling parameter not sent", model=name, param=p, reason=why)
    rt.config.sent_params, rt.config.dropped_params = sent, dropped
    rt.store.write_config(rt.config)


def run_prices(rt: RunContext) -> Prices:
    """The run's user prices (USD per 1M input and output tokens, :mod:`sgieval.models.accounting`): the
    process-wide ones (:func:`~sgieval.models.accounting.set_prices`), then ``rt.prices`` (a table or a YAML
    file given to the API), then the run's ``--price`` values (``RunConfig.prices``), later ones winning."""
    table = price_table()
    if rt.prices is not None:
        table.update(load_prices(rt.prices))
    table.update(rt.config.price_table())
    return table


def called_models(rt: RunContext) -> list[str]:
    """The names of the run's models that make calls (targets that are not replays, judges, the agent model)."""
    models = [*rt.targets, *rt.judges, *rt.added_judges, *([rt.agent] if rt.agent else [])]
    return [m.name for m in models if not m.is_replay]


def check_budget_prices(rt: RunContext) -> None:
    """Raise InputError before anything runs when the run has a budget (``--budget``) and a model it calls
    has no known price (:func:`~sgieval.models.accounting.unpriced_models`): its calls would count as 0 USD
    and the budget would never stop the run."""
    if rt.config.budget_usd is None:
        return
    missing = unpriced_models(called_models(rt), run_prices(rt))
    if not missing:
        return
    from importlib.metadata import version

    raise InputError(
        f"--budget {rt.config.budget_usd} USD cannot be kept: no price is known for {', '.join(missing)} "
        f"(not listed by genai-prices {version('genai-prices')} under that exact name, and no --price given), "
        "so its calls would count as 0 USD",
        what="--budget",
        fix=f"pass --price {missing[0]}=IN,OUT (USD per 1M input and output tokens) for "
        + ("it" if len(missing) == 1 else "each of them")
        + ", or leave out --budget",
    )


def load_ledger(rt: RunContext) -> Ledger:
    """The run's ledger: every call already in ``ledger.jsonl``, then each new call journalled there as it is
    recorded (so a killed run's accounts survive).

    Args:
        rt: the run context.

    Returns:
        The ledger, with the run's budget (USD) and prices.
    """
    ledger = Ledger(budget_usd=rt.config.budget_usd, prices=run_prices(rt))
    ledger.merge(rt.store.read_rows("ledger"))
    ledger.on_record = lambda rows: rt.store.append_rows("ledger", rows)
    # calls sent by a process that was killed before their outcome was recorded: counted once, as interrupted
    ledger.recover(rt.store.read_rows("inflight"))
    ledger.on_send = lambda row: rt.store.append_rows("inflight", [row])
    return ledger


def _run_defaults(rt: RunContext) -> tuple[CallContext, SecretValues]:
    """Fill what ``rt`` lacks before a scope activates it: its settings (from the environment), its own model-call
    context (the run's cache switch, limits and timeout; the caller's cache file) and its secrets, which the call
    context masks in every reply before the call cache keeps it.

    Args:
        rt: the run context (filled in place).

    Returns:
        ``(rt.calls, rt.secrets)``.
    """
    if rt.settings is None:
        rt.settings = load_settings()
    if rt.calls is None:
        rt.calls = CallContext(
            use_cache=rt.config.use_cache,
            cache_path=current_call_context().cache_path,
            limits={"*": rt.config.max_concurrency},
            timeout_s=rt.config.timeout_s,
        )
    if rt.secrets is None:
        rt.secrets = run_secrets(rt)
    rt.calls.secrets = rt.secrets
    return rt.calls, rt.secrets


@contextlib.contextmanager
def reading_scope(rt: RunContext) -> Iterator[RunContext]:
    """Activate run ``rt`` for reading it, as :func:`run_scope` does for running it (its settings, model-call
    context and secrets), with nothing written: no lock, log line, invocation row or ledger journal, so an
    ``ask --into RUN --dry-run`` leaves the run folder as it was.  The ledger holds the calls ``ledger.jsonl``
    records (the agent's planning, for the estimate), journalled nowhere.

    Args:
        rt: the run context (its store is read-only).

    Yields:
        ``rt``, active.

    Raises:
        InputError: ``--budget`` with a model whose price is unknown (:func:`check_budget_prices`).
    """
    calls, _ = _run_defaults(rt)
    with use_settings(rt.settings), call_context(calls):
        check_budget_prices(rt)
        rt.ledger = Ledger(budget_usd=rt.config.budget_usd, prices=run_prices(rt))
        rt.ledger.merge(rt.store.read_rows("ledger"))
        yield rt


@contextlib.contextmanager
def run_scope(rt: RunContext, *, resume: bool = False) -> Iterator[RunContext]:
    """Activate the run ``rt`` for the body: its settings, model-call context (cache switch, limits), log sink and
    ledger become the current ones (contextvars: run-scoped, never global).

    A new run first checks the models its request names (:func:`check_request_models`) and writes ``config.json``
    with its settings (secrets masked).  A SgievalError leaving the body of a new run removes the run folder when
    this call created it and no response was computed (no half-written run; a folder it was given, or a resumed
    run's, is never removed); the records are fsynced at the end either way.

    Args:
        rt: the run context.
        resume: the run continues (nothing is checked or written first, the folder is never removed).

    Yields:
        ``rt``, active.
    """
    calls, secrets = _run_defaults(rt)
    rt.store.secrets = secrets  # every record of the run is masked by value before it is written
    try:
        rt.store.hold()  # the folder is this process's until the run ends (another one gets a one-line error)
        with (
            use_settings(rt.settings),
            call_context(calls),
            run_logging(rt.store.root, rt.config.run_id, secrets=secrets),
        ):
            check_budget_prices(rt)
            if rt.config.batch:
                from ..models import BatchCollector, batch_settings, check_batch_models

                check_batch_models([*rt.targets, *rt.judges, *rt.added_judges])
                if calls.batches is None:  # the run's batches, resumable from its folder's batches.json
                    calls.batches = BatchCollector(
                        rt.store.root, run_id=rt.config.run_id, **batch_settings(rt.settings)
                    )
            if not resume:
                check_request_models(rt)
                rt.config.settings = rt.settings.shown()
                rt.store.write_config(rt.config, new=True)
            elif rt.invocation_kind == "into" and not rt.config.dry_run:
                rt.store.write_config(rt.config)  # the run's targets, judges and metric now include the added ones
            if not (rt.invocation_kind == "into" and rt.config.dry_run):  # an estimate of an --into adds nothing
                start_invocation(rt, rt.invocation_kind or ("resume" if resume else "ask"))
            rt.ledger = load_ledger(rt)
            with rt.ledger.activate():
                yield rt
    except SgievalError:
        if not resume and rt.store.created and not rt.store.read("responses"):
            rt.store.close()
            shutil.rmtree(rt.store.root, ignore_errors=True)  # nothing computed: leave no half-written run
        raise
    finally:
        rt.store.close()  # fsync the records written (the files reopen if the runtime is used again)
