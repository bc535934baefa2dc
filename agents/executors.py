"""Executors: ``local`` runs every (target, item) unit in this event loop; ``ray`` shards the items across Ray tasks
(the ``[ray]`` extra) on scratch run folders, the driver appending each shard's records and computing the corpus-level
scores; in flight at most ``shards x --max-concurrency`` calls per provider, ``--budget`` checked between shards."""

from __future__ import annotations

import asyncio
import os
import tempfile
from contextlib import suppress
from functools import partial
from typing import Any, Awaitable, Callable, Sequence, TypeVar

from ..core import EXECUTORS, InputError, Item, OfflineError, RunStore
from ..core.retry import RetriesExhausted, RetryPolicy, retry
from ..metric_pool import Metric, ScoringContext
from ..models import CallContext, Ledger, NamedModel, call_context, current_call_context, current_ledger
from .evaluation import run_evaluation

U = TypeVar("U")

_CLIENT_FIELDS = frozenset(
    {"client", "async_client", "root_client", "root_async_client", "http_client", "http_async_client"}
)
_FILES = ("responses", "scores")


def shard(units: Sequence[U], n: int) -> list[list[U]]:
    """Split ``units`` into at most ``n`` contiguous shards.

    Args:
        units: the units.
        n: most shards (>= 1).

    Returns:
        The shards (sizes differ by at most 1; empty shards dropped; order kept).
    """
    n = max(1, min(int(n), len(units)))
    q, r = divmod(len(units), n)
    ends = [k * q + min(k, r) for k in range(n + 1)]
    return [list(units[a:b]) for a, b in zip(ends, ends[1:]) if b > a]


def ensure_ray(address: str | None = None, num_cpus: int | None = None) -> Any:
    """Import and initialise Ray (once).

    Args:
        address: a cluster address (default ``$RAY_ADDRESS``); none: a local instance.
        num_cpus: CPUs of a local instance (default: all).

    Returns:
        The ``ray`` module.

    Raises:
        InputError: the ``[ray]`` extra is not installed.
        OfflineError: the cluster cannot be reached after the retries.
    """
    try:
        import ray
    except ImportError as e:
        fix = "pip install 'sgieval[ray]' (or use --executor local)"
        raise InputError("the ray executor needs Ray", what="--executor ray", fix=fix) from e
    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS") or None
        kw: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False}
        if not address:
            ray.init(num_cpus=num_cpus, include_dashboard=False, **kw)
            return ray
        try:
            retry(lambda: ray.init(address=address, **kw), CONNECT_RETRY, lambda e: isinstance(e, ConnectionError))
        except RetriesExhausted as e:
            lines = [ln.strip() for ln in str(e.last).splitlines() if ln.strip()]
            reason = lines[-1] if lines else type(e.last).__name__
            raise OfflineError(
                f"could not connect to the Ray cluster at {address} after {e.attempts} attempt(s): {reason}",
                what="--executor ray (RAY_ADDRESS)",
                fix="check that the head node is up and its Ray Client server listens there "
                "(its logs: ray_client_server*.err under the head's session_latest/logs), or use --executor local",
            ) from e.last
    return ray


# a ConnectionError of ray.init(address=...) (e.g. a head slow to start the client's driver) is tried 3 times
CONNECT_RETRY = RetryPolicy(max_attempts=3, base_delay_s=2.0, max_delay_s=10.0)


def _portable_chat(chat: Any) -> Any:
    """``chat`` itself when picklable, else a ("rebuild", class, fields) recipe."""
    from ray import cloudpickle

    with suppress(Exception):  # live clients, locks: rebuilt from the fields
        cloudpickle.dumps(chat)
        return chat
    fields = getattr(type(chat), "model_fields", None)
    if not fields:
        what, fix = "--executor ray", "use --executor local for this model"
        raise InputError(f"cannot ship chat model {type(chat).__name__} to Ray tasks", what=what, fix=fix)
    data = {k: getattr(chat, k) for k in chat.model_fields_set if k in fields and k not in _CLIENT_FIELDS}
    return ("__rebuild__", type(chat), data)


def _restore_chat(packed: Any) -> Any:
    if isinstance(packed, tuple) and len(packed) == 3 and packed[0] == "__rebuild__":
        return packed[1](**packed[2])
    return packed


def pack_models(models: Sequence[NamedModel]) -> list[dict[str, Any]]:
    """NamedModels as picklable dicts, for Ray tasks.

    Args:
        models: resolved models.

    Returns:
        One dict per model.
    """
    keys = ("name", "role", "replay", "provider", "smoke_test", "params")
    return [
        {**{k: getattr(m, k) for k in keys}, "chat": _portable_chat(m.chat) if m.chat is not None else None}
        for m in models
    ]


def unpack_models(packed: Sequence[dict[str, Any]]) -> list[NamedModel]:
    """The NamedModels :func:`pack_models` packed, chat models rebuilt here.

    Args:
        packed: the dicts.

    Returns:
        One NamedModel per dict, in order.
    """
    return [NamedModel(**{**d, "chat": _restore_chat(d["chat"])}) for d in packed]


_TASK_LOOP: asyncio.AbstractEventLoop | None = None


def _run_in_task(fn: Callable[[list[Any]], Awaitable[Any]], part: list[Any]) -> Any:
    """Body of a Ray task, on one event loop per worker kept open (SDK clients cached per process stay bound to it)."""
    global _TASK_LOOP
    if _TASK_LOOP is None or _TASK_LOOP.is_closed():
        _TASK_LOOP = asyncio.new_event_loop()
    asyncio.set_event_loop(_TASK_LOOP)
    return _TASK_LOOP.run_until_complete(fn(part))


def _pending_items(
    store: RunStore, items: Sequence[Item], targets: Sequence[NamedModel], metrics: Sequence[Metric]
) -> list[Item]:
    resp = {(r.item_id, r.model) for r in store.read("responses")}
    done = {(s.item_id, s.model, s.metric) for s in store.read("scores")}

    def pending(it: Item, t: NamedModel) -> bool:
        specs = (s for m in metrics if m.applies(it) for s in m.specs)
        return (it.id, t.name) not in resp or any((it.id, t.name, s.name) not in done for s in specs)

    return [it for it in items if any(pending(it, t) for t in targets)]


async def _evaluate_shard(
    targets: list[dict[str, Any]], metrics: list[Metric], ctx: ScoringContext, max_parallel: int,
    existing: dict[str, Any], use_cache: bool | None, prices: dict[str, tuple[float, float]] | None, items: list[Item],
) -> dict[str, Any]:  # fmt: skip
    """The work of one Ray task: ``items`` on a scratch run folder -> {"responses", "scores", "ledger"} it added."""
    ids = {i.id for i in items}
    ledger = Ledger(prices=prices)
    calls = CallContext(use_cache=use_cache, limits={"*": max_parallel})
    with tempfile.TemporaryDirectory(prefix="sgieval-shard-") as tmp, ledger.activate(), call_context(calls):
        store = RunStore(tmp)
        old = {f: [r for r in existing[f] if r.item_id in ids] for f in _FILES}
        for f in _FILES:
            store.append(f, old[f])
        models = unpack_models(targets)
        await run_evaluation(store, items, models, metrics, ctx, max_parallel=max_parallel, corpus=False)
        new = {f: store.read(f)[len(old[f]) :] for f in _FILES}  # appended after the old records
        store.close()
    return {**new, "ledger": ledger.to_dicts()}


async def evaluate_with_executor(
    store: RunStore, items: list[Item], targets: list[NamedModel], metrics: list[Metric], ctx: ScoringContext, *,
    executor: str = "local", max_parallel: int = 16, on_progress: Callable[[int, int], None] | None = None,
    num_shards: int | None = None, corpus: bool = True,
) -> Any:  # fmt: skip
    """Evaluate ``items`` x ``targets`` into ``store``: ``local`` is :func:`run_evaluation`; ``ray`` first evaluates
    the unfinished items in Ray shards (records appended, ledgers merged as each finishes), then runs it locally.

    Args:
        store, items, targets, metrics, ctx: the run folder, selected items, models under test, the plan's metrics
            and the scoring context.
        executor: ``"local"`` or ``"ray"``.
        max_parallel: most (item, target model) units in flight (>= 1).
        on_progress: ``on_progress(done, total)`` as units finish.
        num_shards: Ray shards (default: the cluster's CPU count).
        corpus: compute the corpus-level scores at the end.

    Returns:
        ``run_evaluation``'s progress object, with the shards' records counted as new.

    Raises:
        InputError: an unknown executor or a model that cannot be shipped.
    """
    if executor not in EXECUTORS:
        raise InputError(f"unknown executor {executor!r}", what="--executor", fix=f"use one of {', '.join(EXECUTORS)}")
    sharded = {f: 0 for f in _FILES}
    todo = _pending_items(store, items, targets, metrics) if executor == "ray" else []
    if todo:
        await _ray_shards(store, todo, targets, metrics, ctx, max_parallel, on_progress, sharded, num_shards)
    prog = await run_evaluation(
        store, items, targets, metrics, ctx, max_parallel=max_parallel, on_progress=on_progress, corpus=corpus
    )
    prog.responses_new += sharded["responses"]
    prog.responses_skipped -= min(sharded["responses"], prog.responses_skipped)
    prog.scores_new += sharded["scores"]
    prog.scores_skipped -= min(sharded["scores"], prog.scores_skipped)
    return prog


async def _ray_shards(
    store: RunStore, todo: list[Item], targets: list[NamedModel], metrics: list[Metric], ctx: ScoringContext,
    max_parallel: int, on_progress: Callable[[int, int], None] | None, sharded: dict[str, int], num_shards: int | None,
) -> None:  # fmt: skip
    """Evaluate ``todo`` in one Ray task per shard, appending each shard's records and ledger as it finishes (in
    completion order; counted in ``sharded``)."""
    existing = {f: store.read(f) for f in _FILES}
    ledger = current_ledger()
    prices = ledger.prices if ledger is not None else None
    use_cache = current_call_context().use_cache
    ray = ensure_ray()  # first: packing the models needs Ray's cloudpickle
    fn = partial(_evaluate_shard, pack_models(targets), list(metrics), ctx, max_parallel, existing, use_cache, prices)
    n = num_shards or max(1, int(ray.cluster_resources().get("CPU", 1)))
    remote, fn_ref = ray.remote(_run_in_task), ray.put(fn)
    pending = [remote.remote(fn_ref, p) for p in shard(todo, n)]
    total = len(todo) * len(targets)
    while pending:
        ready, pending = await asyncio.to_thread(ray.wait, pending, num_returns=1)
        for ref in ready:
            part = await asyncio.to_thread(ray.get, ref)
            for f in _FILES:
                store.append(f, part[f])
                sharded[f] += len(part[f])
            if ledger is not None:
                ledger.merge(part["ledger"])
            if on_progress:
                on_progress(min(sharded["responses"], total), total)
