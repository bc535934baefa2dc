"""The run context (:class:`RunContext`): built by :func:`make_runtime`, made current by :func:`run_scope` (settings,
call context, log sink and ledger are contextvars); also the run's invocation record, secrets, prices and ledger."""

from __future__ import annotations

import contextlib
import datetime as _dt
import re
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..benchmarks import Catalog, load_catalog
from ..core import DRY_EXPERIMENT, ENV_NAMES, InputError, Item, ModelRef, RunConfig, RunStore, SandboxUnavailableError
from ..core import SecretValues, Settings, SgievalError, get_logger, load_settings, redact_url, run_logging, url_secrets
from ..core import use_settings
from ..core import option_names as run_option_names
from ..models import CallContext, Ledger, NamedModel, Prices, Role, call_context, current_call_context
from ..models import model_secrets, price_table, resolve_model, sampling_for_role, unpriced_models
from .request_models import check_named_models, model_mentions
from .stored_responses import resolve_run_model, stored_models

log = get_logger("sgieval")

State = Mapping[str, Any]  # the evaluation graph's state (sgieval.graphs.evaluate.EvalState)
Update = dict[str, Any]  # the state keys a step sets


@dataclass
class RunContext:
    """One run's context, handed to every agent step (LangGraph's ``context``): what the steps use that is not graph
    state; ``ledger``, ``settings`` and ``calls`` are made current by :func:`run_scope` for the run only."""

    config: RunConfig
    store: RunStore
    catalog: Catalog
    targets: list[NamedModel] = field(default_factory=list)
    judges: list[NamedModel] = field(default_factory=list)
    agent: NamedModel | None = None
    added_judges: list[NamedModel] = field(default_factory=list)  # score into added_judge_scores.jsonl
    tools: Any = None
    sandbox: Any = None
    on_progress: Callable[[int, int], None] | None = None
    metric_options: dict[str, Any] = field(default_factory=dict)
    ledger: Ledger | None = None
    settings: Any = None
    calls: CallContext | None = None
    resolved_targets: dict[tuple[str, ...], list[NamedModel]] = field(default_factory=dict, repr=False)  # by item ids
    matched_replays: set[tuple[str, ...]] = field(default_factory=set, repr=False)
    # RunConfig field -> the option's name in errors and reports: ask flags, or evaluate keywords from the API
    option_names: dict[str, str] = field(default_factory=lambda: run_option_names(RunConfig, "cli"), repr=False)
    estimate: dict[str, Any] | None = field(default=None, repr=False)
    secrets: SecretValues | None = field(default=None, repr=False)  # masked by value in every record and log line
    argv: list[str] | None = None  # kept in invocations.jsonl; None from the Python API
    invocation_kind: str = ""  # ask, resume or into; "" lets run_scope decide between ask and resume

    def models(self) -> list[NamedModel]:
        """Every model of the run.

        Returns:
            Targets, judges, added judges, then the agent model.
        """
        return [*self.targets, *self.judges, *self.added_judges, *([self.agent] if self.agent else [])]


def _start_invocation(rt: RunContext, kind: str) -> None:
    """Append this invocation's row to ``invocations.jsonl``; its id, the store's ``invocation``, tags its records."""
    now = _dt.datetime.now(_dt.timezone.utc)
    inv = f"{now:%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"
    options = rt.config.model_dump(mode="json", exclude={"settings", "sent_params", "dropped_params"})
    if options.get("base_url"):
        options["base_url"] = redact_url(options["base_url"])
    row = {"id": inv, "time": now.isoformat(timespec="seconds"), "kind": kind, "argv": rt.argv, "options": options}
    rt.store.append_rows("invocations", [row])
    rt.store.invocation = inv


def new_run_id(request: str) -> str:
    """A new run id.

    Args:
        request: the request (its slug names the run).

    Returns:
        ``YYYYmmdd-HHMMSS-<slug of the request>-<8 random hex digits>``.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", (request or "all").lower()).strip("-")[:32].strip("-")
    return f"{_dt.datetime.now():%Y%m%d-%H%M%S}-{slug or 'all'}-{secrets.token_hex(4)}"


def _recorded_settings(shown: Mapping[str, Any] | None) -> Any:
    """The settings ``config.json`` recorded (a key becomes the stand-in ``"set"``), or None."""
    if not shown or not isinstance(shown, Mapping):
        return None
    aliased = {"openai_api_key", "openai_base_url", "e2b_api_key"}
    values = {env if name in aliased else name: shown[env] for name, env in ENV_NAMES.items() if env in shown}
    keys = {k: "set" if v == "set" else None for k, v in values.items() if k.lower().endswith("_api_key")}
    try:
        return Settings(**{**values, **keys})
    except (TypeError, ValueError):  # a pydantic ValidationError is a ValueError
        return None


def make_runtime(
    config: RunConfig, *, catalog: Catalog | None = None, targets: list[NamedModel] | None = None,
    judges: list[NamedModel] | None = None, agent: NamedModel | None = None, run_dir: str | Path | None = None,
    added_judges: list[NamedModel] | None = None, read_only: bool = False, calls: bool = True, **kw: Any,
) -> RunContext:  # fmt: skip
    """The run context of ``config``; a run folder holding ``items.jsonl`` uses those items.

    Args:
        config: the run's options.
        catalog: the items to select from (default: the config's benchmarks).
        targets: the models under test (default: from ``config.models``).
        judges: the judges (default: from ``config.judges``).
        agent: the agent model (default: from ``config.agent_model``; None: offline agent paths).
        run_dir: the run folder (default ``<out_dir>/<run_id>``).
        added_judges: the judges added to the finished run (default: from ``config.added_judges``).
        read_only: open the run folder for reading only.
        calls: False when no target or judge is called (implied by ``read_only``): they resolve as under
            ``--dry-run``, one that cannot be built is named only.
        kw: further :class:`RunContext` fields.

    Returns:
        The run context; nothing is written yet.

    Raises:
        InputError: bad model strings or missing data.
    """
    run_dir = Path(run_dir) if run_dir is not None else Path(config.out_dir) / config.run_id
    existing = RunStore(run_dir, read_only=read_only) if (run_dir / "items.jsonl").is_file() or read_only else None
    catalog = _run_catalog(config, run_dir, existing.read("items") if existing else [], catalog)
    calls = calls and not read_only
    # a re-render states the settings the run recorded when it started (config.json), not this shell's
    recorded = None if calls or "settings" in kw else _recorded_settings(config.settings)
    targets, judges, added, agent = _run_models(config, calls, recorded, targets, judges, added_judges, agent)
    store = existing or RunStore(run_dir)
    # bad SGIEVAL_* values fail here, before any write
    settings = kw.pop("settings", None) or recorded or load_settings()
    return RunContext(config, store, catalog, targets, judges, agent, added, settings=settings, **kw)


def _run_catalog(config: RunConfig, run_dir: Path, stored: list[Item], catalog: Catalog | None) -> Catalog:
    """``catalog`` or the config's benchmarks, the run's stored items winning (alone when the files cannot be read)."""
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
    config: RunConfig, calls: bool, recorded: Any, targets: list[NamedModel] | None, judges: list[NamedModel] | None,
    added_judges: list[NamedModel] | None, agent: NamedModel | None,
) -> tuple[list[NamedModel], list[NamedModel], list[NamedModel], NamedModel | None]:  # fmt: skip
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

        targets, judges, added = ([batch_model(m) for m in group] for group in (targets, judges, added))
    return targets, judges, added, agent


def unique_models(models: list[NamedModel]) -> list[NamedModel]:
    """``models`` without repeats of a name (``replay:phi4`` and ``replay:phi4:latest`` resolve to one model).

    Args:
        models: resolved models.

    Returns:
        The first of each name, in order.

    Raises:
        InputError: two different replay files give one name.
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
    """The run's items of ``ids``.

    Args:
        rt: the run context.
        ids: item ids the selection holds.

    Returns:
        The catalog's items, in ``ids`` order.
    """
    return [rt.catalog.by_id[i] for i in ids]


def attach_tools(rt: RunContext, items: list[Item]) -> None:
    """Give the run its metric options, a sandbox (for dry-experiment items) and its tool pool (for judges with tools).
    A sandbox that cannot start is logged, and those scores record ``infra_error``.

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
        from ..tools import get_sandbox

        try:
            rt.sandbox = get_sandbox(rt.config.sandbox, unsafe_local_exec=rt.config.unsafe_local_exec)
        except SandboxUnavailableError as e:
            log.warning("sandbox unavailable", reason=e.one_line())
    if rt.tools is None and (rt.judges or rt.agent) and rt.config.tools:
        from ..tools import ToolPool

        sandbox, unsafe = rt.sandbox or rt.config.sandbox, rt.config.unsafe_local_exec
        kw: dict[str, Any] = dict(
            documents=rt.catalog.items, sandbox=sandbox, unsafe_local_exec=unsafe, corpus_dir=rt.config.corpus
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
        InputError: naming the stored models and the ``--models`` flag that runs it live.
    """
    if not model_mentions(rt.config.request):
        return
    stored = [s.model for s in stored_models(rt.config.data_dir)]
    check_named_models(rt.config.request, [*rt.config.models, *(t.name for t in rt.targets)], stored)


def record_sampling(rt: RunContext) -> None:
    """Write into ``config.json`` the sampling parameters each (non-replay) model gets (``sent_params``) and those it
    does not, with the reason (``dropped_params``); log each dropped one.

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
    """The run's prices (USD per 1M input, output tokens): process-wide, then ``--price`` (wins)."""
    return {**price_table(), **rt.config.price_table()}


def _check_budget_prices(rt: RunContext) -> None:
    """Raise InputError when the run has a ``--budget`` and a model it calls has no known price."""
    if rt.config.budget_usd is None:
        return
    missing = unpriced_models([m.name for m in rt.models() if not m.is_replay], run_prices(rt))
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
    """The run's ledger: the calls in ``ledger.jsonl``, each new call journalled there as it is recorded.

    Args:
        rt: the run context.

    Returns:
        The ledger, with the run's budget (USD) and prices.
    """
    ledger = Ledger(budget_usd=rt.config.budget_usd, prices=run_prices(rt))
    ledger.merge(rt.store.read_rows("ledger"))
    ledger.on_record = lambda rows: rt.store.append_rows("ledger", rows)
    ledger.recover(rt.store.read_rows("inflight"))
    ledger.on_send = lambda row: rt.store.append_rows("inflight", [row])
    return ledger


def _run_defaults(rt: RunContext) -> tuple[CallContext, SecretValues]:
    """Fill ``rt``'s missing settings, model-call context and secrets in place; return ``(rt.calls, rt.secrets)``."""
    if rt.settings is None:
        rt.settings = load_settings()
    if rt.calls is None:
        rt.calls = CallContext(
            use_cache=rt.config.use_cache,
            cache_path=current_call_context().cache_path,
            limits={"*": rt.config.max_concurrency},
            timeout_s=rt.config.timeout_s,
        )
    if rt.secrets is None:  # the keys run ``rt`` may send: its models', the environment's, base-URL credentials
        values = [v for m in rt.models() for v in model_secrets(m)] + url_secrets(rt.config.base_url)
        rt.secrets = SecretValues.from_environment(values)
    rt.calls.secrets = rt.secrets
    return rt.calls, rt.secrets


@contextlib.contextmanager
def reading_scope(rt: RunContext) -> Iterator[RunContext]:
    """Activate run ``rt`` for reading, as :func:`run_scope` does, writing nothing.

    Args:
        rt: the run context (its store is read-only).

    Yields:
        ``rt``, active, its ledger holding the calls of ``ledger.jsonl``.

    Raises:
        InputError: ``--budget`` with a model whose price is unknown.
    """
    calls, _ = _run_defaults(rt)
    with use_settings(rt.settings), call_context(calls):
        _check_budget_prices(rt)
        rt.ledger = Ledger(budget_usd=rt.config.budget_usd, prices=run_prices(rt))
        rt.ledger.merge(rt.store.read_rows("ledger"))
        yield rt


@contextlib.contextmanager
def run_scope(rt: RunContext, *, resume: bool = False) -> Iterator[RunContext]:
    """Make run ``rt``'s settings, call context, log sink and ledger current for the body.  A new run first
    checks the models its request names and writes ``config.json``; a SgievalError removes a folder it created
    when no response was computed.

    Args:
        rt: the run context.
        resume: the run continues (nothing is checked or written first, the folder is never removed).

    Yields:
        ``rt``, active.
    """
    calls, secrets = _run_defaults(rt)
    rt.store.secrets = secrets
    try:
        rt.store.hold()
        with (
            use_settings(rt.settings),
            call_context(calls),
            run_logging(rt.store.root, rt.config.run_id, secrets=secrets),
        ):
            _check_budget_prices(rt)
            if rt.config.batch:
                from ..models import BatchCollector, batch_settings, check_batch_models

                check_batch_models([*rt.targets, *rt.judges, *rt.added_judges])
                if calls.batches is None:
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
                _start_invocation(rt, rt.invocation_kind or ("resume" if resume else "ask"))
            rt.ledger = load_ledger(rt)
            with rt.ledger.activate():
                yield rt
    except SgievalError:
        if not resume and rt.store.created and not rt.store.read("responses"):
            rt.store.close()
            shutil.rmtree(rt.store.root, ignore_errors=True)
        raise
    finally:
        rt.store.close()
