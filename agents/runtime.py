"""The run context: what a run uses that is not graph state, how it is built and how it is made current.

:class:`RunContext` holds a run's config, run folder, catalog, models by role, tools, sandbox, ledger, settings and
model-call context.  :func:`make_runtime` builds it from a :class:`~sgieval.core.RunConfig`; :func:`run_scope` activates
it (settings, call context, log sink and ledger are contextvars, so nothing of the process changes).  Also here: the
run's invocation record, secrets, prices, ledger and the sampling parameters it records.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import re
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from pydantic import ValidationError

from ..benchmarks import Catalog, load_catalog
from ..core import (
    DRY_EXPERIMENT,
    ENV_NAMES,
    InputError,
    Item,
    ModelRef,
    RunConfig,
    RunStore,
    SandboxUnavailableError,
    SecretValues,
    Settings,
    SgievalError,
    get_logger,
    load_settings,
    redact_url,
    run_logging,
    url_secrets,
    use_settings,
)
from ..core import option_names as run_option_names
from ..metric_pool import Metric
from ..models import (
    CallContext,
    Ledger,
    NamedModel,
    Prices,
    Role,
    call_context,
    current_call_context,
    load_prices,
    model_secrets,
    price_table,
    resolve_model,
    sampling_for_role,
    unpriced_models,
)
from .customisation import MetricPlan, planned_metrics
from .request_models import check_named_models, model_mentions
from .stored_responses import resolve_run_model, stored_models

__all__ = [
    "RunContext",
    "State",
    "Update",
    "attach_tools",
    "check_budget_prices",
    "check_request_models",
    "load_ledger",
    "make_runtime",
    "new_run_id",
    "plan_items",
    "plan_metrics",
    "reading_scope",
    "record_sampling",
    "run_prices",
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
    """Default targets already resolved, by the selected item ids (:func:`sgieval.agents.targets.default_targets`)."""
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

    def models(self) -> list[NamedModel]:
        """Every model of the run: targets, judges, added judges, then the agent model.

        Returns:
            The models, in that order.
        """
        return [*self.targets, *self.judges, *self.added_judges, *([self.agent] if self.agent else [])]


def run_secrets(rt: RunContext) -> SecretValues:
    """The keys run ``rt`` may send: the API keys and base-URL credentials of its target, judge and agent models
    (:func:`sgieval.models.calls.model_secrets`), the provider and sandbox key variables of the environment, and the
    credentials inside the run's base URL."""
    models = rt.models()
    values = [v for m in models for v in model_secrets(m)] + url_secrets(rt.config.base_url)
    return SecretValues.from_environment(values)


def start_invocation(rt: RunContext, kind: str) -> str:
    """Record this invocation of run ``rt``: one row of ``invocations.jsonl`` (``id``, ``time`` in UTC ISO 8601,
    ``kind``, ``argv``, ``options``: the run's config as this invocation runs it, secrets masked by the store), and make
    its id the one every Response and Score it appends carries (``RunStore.invocation``).

    Args:
        rt: the run context (its store is held by this process).
        kind: ``ask``, ``resume`` or ``into``.

    Returns:
        The invocation id (``YYYYmmddTHHMMSS-<6 hex digits>``).
    """
    now = _dt.datetime.now(_dt.timezone.utc)
    inv = f"{now:%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"
    options = rt.config.model_dump(mode="json", exclude={"settings", "sent_params", "dropped_params"})
    if options.get("base_url"):
        options["base_url"] = redact_url(options["base_url"])
    row = {"id": inv, "time": now.isoformat(timespec="seconds"), "kind": kind, "argv": rt.argv, "options": options}
    rt.store.append_rows("invocations", [row])
    rt.store.invocation = inv
    return inv


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
    """The settings a run recorded in its ``config.json`` when it started (``Settings.shown()``), as a settings object:
    its header line is the recorded one and its ``OPENAI_BASE_URL`` is the run's (other endpoint variables are not
    recorded: they are read from the environment now); a recorded key is ``"set"`` (a stand-in: such settings resolve
    models that are never called).

    Args:
        shown: the recorded settings (``RunConfig.settings``), or None/{} when none were recorded.

    Returns:
        The :class:`sgieval.core.settings.Settings`, or None when nothing usable was recorded (a run folder's
        file is data: a value that does not validate gives None, and the current settings are used).
    """
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
    """The run context of ``config``: its model strings resolved (unless models are given), its catalog loaded (unless
    given).

    A run folder that already holds ``items.jsonl`` (a resumed or re-rendered run) uses those items, not the benchmark
    files as they are now: the report does not change when a source file is edited or moved, and the run needs no source
    at all once its items are stored.

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
    catalog = _run_catalog(config, run_dir, existing.read("items") if existing else [], catalog)
    calls = calls and not read_only
    # a re-render states the settings the run recorded when it started (config.json), not this shell's
    recorded = None if calls or "settings" in kw else recorded_settings(config.settings)
    if recorded is not None:
        kw["settings"] = recorded
    targets, judges, added, agent = _run_models(config, calls, recorded, targets, judges, added_judges, agent)
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


def _run_catalog(config: RunConfig, run_dir: Path, stored: list[Item], catalog: Catalog | None) -> Catalog:
    """The catalog of the run: ``catalog`` or the config's benchmarks, with the run's stored items winning (the stored
    items alone when the benchmark files cannot be read)."""
    if catalog is None:
        try:
            catalog = load_catalog(config.benchmarks or None, config.data_dir)
        except SgievalError:
            if not stored:
                raise
            copy = f"{run_dir / 'items.jsonl'} (the run's copy)"
            catalog = Catalog(items=stored, sources={b: copy for b in dict.fromkeys(i.benchmark for i in stored)})
    if stored:
        catalog.by_id.update({i.id: i for i in stored})
    return catalog


def _run_models(
    config: RunConfig,
    calls: bool,
    recorded: Any,
    targets: list[NamedModel] | None,
    judges: list[NamedModel] | None,
    added_judges: list[NamedModel] | None,
    agent: NamedModel | None,
) -> tuple[list[NamedModel], list[NamedModel], list[NamedModel], NamedModel | None]:
    """(targets, judges, added judges, agent) of :func:`make_runtime`: the given ones, else resolved from the config."""
    batch, dry_run = (config.batch, config.dry_run) if calls else (False, True)

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
        from ..models import batch_model  # the batch clients load only for a --batch run

        targets, judges = [batch_model(m) for m in targets], [batch_model(m) for m in judges]
        added = [batch_model(m) for m in added]
    return targets, judges, added, agent


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


def plan_items(rt: RunContext, ids: list[str]) -> list[Item]:
    """The run's items of ``ids`` (its catalog's, in ``ids`` order).

    Args:
        rt: the run context.
        ids: item ids the selection holds.

    Returns:
        The items.
    """
    return [rt.catalog.by_id[i] for i in ids]


def plan_metrics(rt: RunContext, items: list[Item], plan: MetricPlan) -> list[Metric]:
    """The Metric objects of ``plan`` for ``items`` with the run's metric options.

    Args:
        rt: the run context.
        items: the items scored.
        plan: the metric plan.

    Returns:
        The metrics (:func:`sgieval.agents.customisation.planned_metrics`).
    """
    return planned_metrics(plan, items, rt.metric_options)


def attach_tools(rt: RunContext, items: list[Item]) -> None:
    """Give the run its metric options, its sandbox (when dry-experiment items need one) and its tool pool (when judges
    may call tools).  A sandbox that cannot start is not fatal: the dry-experiment scores record it as ``infra_error``
    with the reason, and ``--unsafe-local-exec`` is the explicit way out.

    Args:
        rt: the run context (filled in place: ``metric_options``, ``sandbox``, ``tools``).
        items: the selected items.
    """
    rt.metric_options.setdefault("unsafe_local_exec", rt.config.unsafe_local_exec)
    if rt.config.judge_repeats > 1:
        rt.metric_options.setdefault("judge_repeats", rt.config.judge_repeats)
    if rt.config.corpus:
        rt.metric_options.setdefault("corpus", rt.config.corpus)
    if rt.sandbox is None and any(i.task == DRY_EXPERIMENT for i in items):
        from ..tools import get_sandbox  # the sandbox backends load only for a run that needs one

        try:
            rt.sandbox = get_sandbox(rt.config.sandbox, unsafe_local_exec=rt.config.unsafe_local_exec)
        except SandboxUnavailableError as e:
            log.warning("sandbox unavailable", reason=e.one_line())
    if rt.tools is None and (rt.judges or rt.agent) and rt.config.tools:
        from ..tools import ToolPool  # with the sandbox backends: only for a run whose judges get tools

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


def check_request_models(rt: RunContext) -> None:
    """Stop a new run whose request names a model with no stored responses that is not one of its targets.

    Args:
        rt: the run context.

    Raises:
        InputError: naming the stored models and the ``--models`` flag that runs it live
            (:func:`sgieval.agents.request_models.check_named_models`).
    """
    if not model_mentions(rt.config.request):
        return
    stored = [s.model for s in stored_models(rt.config.data_dir)]
    check_named_models(rt.config.request, [*rt.config.models, *(t.name for t in rt.targets)], stored)


def record_sampling(rt: RunContext) -> None:
    """Write into ``config.json`` the sampling parameters each model of the run actually gets
    (``RunConfig.sent_params``) and those it does not, with the reason (``RunConfig.dropped_params``); log each dropped
    one.  Replay targets send nothing and are not listed.

    Args:
        rt: the run context.
    """
    models = rt.models()
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
    """The run's user prices (USD per 1M input and output tokens, :mod:`sgieval.models.accounting`): the process-wide
    ones (:func:`~sgieval.models.accounting.set_prices`), then ``rt.prices`` (a table or a YAML file given to the API),
    then the run's ``--price`` values (``RunConfig.prices``), later ones winning."""
    table = price_table()
    if rt.prices is not None:
        table.update(load_prices(rt.prices))
    table.update(rt.config.price_table())
    return table


def called_models(rt: RunContext) -> list[str]:
    """The names of the run's models that make calls (targets that are not replays, judges, the agent model)."""
    models = rt.models()
    return [m.name for m in models if not m.is_replay]


def check_budget_prices(rt: RunContext) -> None:
    """Raise InputError before anything runs when the run has a budget (``--budget``) and a model it calls has no known
    price (:func:`~sgieval.models.accounting.unpriced_models`): its calls would count as 0 USD and the budget would
    never stop the run."""
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
    """The run's ledger: every call already in ``ledger.jsonl``, then each new call journalled there as it is recorded
    (so a killed run's accounts survive).

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
    """Activate run ``rt`` for reading it, as :func:`run_scope` does for running it (its settings, model-call context
    and secrets), with nothing written: no lock, log line, invocation row or ledger journal, so an ``ask --into RUN
    --dry-run`` leaves the run folder as it was.  The ledger holds the calls ``ledger.jsonl`` records (the agent's
    planning, for the estimate), journalled nowhere.

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

    A new run first checks the models its request names (:func:`check_request_models`) and writes ``config.json`` with
    its settings (secrets masked).  A SgievalError leaving the body of a new run removes the run folder when this call
    created it and no response was computed (no half-written run; a folder it was given, or a resumed run's, is never
    removed); the records are fsynced at the end either way.

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
                from ..models import BatchCollector, batch_settings, check_batch_models  # only for --batch

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
