"""``--until-settled``: evaluate the items in a seeded random order, in chunks, and stop once one model is ahead of
every other by the settle rule (:class:`~sgieval.metric_pool.stats.SettleRule`: betting confidence sequences of the
paired differences, without replacement, Bonferroni over the leader's K - 1 comparisons).  Order and chunks depend only
on the seed and selection, the rule only on the stored scores, so a killed run resumes to the same stop."""

from __future__ import annotations

import math
import random
from typing import Any, Callable

from ..core import InputError, Item, MetricSpec, RunStore
from ..metric_pool import Metric, ScoringContext, SettleRule
from ..models import NamedModel, current_ledger
from .evaluation import EvalProgress
from .executors import evaluate_with_executor

ALPHA = 0.05  # family-wise level: the declared leader is the selection's best model with probability >= 0.95


def settle_order(items: list[Item], seed: int) -> list[Item]:
    """The items in the order ``--until-settled`` draws them: a random permutation seeded by the run's ``seed``."""
    order = list(items)
    random.Random(f"until-settled:{seed}").shuffle(order)
    return order


def chunk_size(n_items: int, n_targets: int, max_concurrency: int) -> int:
    """Items per chunk: enough units to keep ``2 x max_concurrency`` calls busy, at least 10, at most ``n_items``."""
    per = math.ceil(2 * max(1, max_concurrency) / max(1, n_targets))
    return max(1, min(n_items, max(10, per)))


def ranking_spec(primary: str, metrics: list[Metric]) -> MetricSpec | None:
    """The per-item spec of the ranking metric ``primary`` among ``metrics`` (None: not scored per item)."""
    return next((s for m in metrics for s in m.specs if s.name == primary), None)


def settle_problem(primary: str, metrics: list[Metric], targets: list[str]) -> InputError | None:
    """Why ``--until-settled`` cannot run on this plan (fewer than two targets, no per-item values, unbounded range)."""
    if len(targets) < 2:
        return InputError(
            f"it stops when one model is ahead of the others; this run has {len(targets)} target model",
            what="--until-settled",
            fix="give two or more target models (--models), or leave out --until-settled",
        )
    spec = ranking_spec(primary, metrics)
    if spec is None:
        return InputError(
            f"it needs a ranking metric with a value per item; {primary} is computed over all items at once",
            what="--until-settled",
            fix="rank by a per-item metric (--metric), or leave out --until-settled",
        )
    lo, hi = spec.range
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        return InputError(
            f"it needs a bounded ranking metric (its confidence sequence is for bounded values); "
            f"{primary} has the range [{lo:g}, {hi:g}]",
            what="--until-settled",
            fix="rank by a bounded metric (--metric, e.g. a rubric or an accuracy), or leave out --until-settled",
        )
    return None


async def evaluate_until_settled(
    store: RunStore, items: list[Item], targets: list[NamedModel], metrics: list[Metric], ctx: ScoringContext, *,
    primary: str, seed: int, executor: str = "local", max_parallel: int = 16,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[EvalProgress, dict[str, Any]]:  # fmt: skip
    """Evaluate ``items`` x ``targets`` chunk by chunk in the seeded order until ``primary`` is settled, then add the
    corpus-level scores of the items used.

    Args:
        store: the run folder; units already in it are skipped, and the rule is fed from its scores.
        items: the full selection (N items).
        targets: the target models (K >= 2).
        metrics: the plan's metrics.
        ctx: the scoring context (judges, tools, sandbox).
        primary: the ranking metric (per item, bounded: :func:`settle_problem`).
        seed: the run's seed (the order).
        executor, max_parallel: as for :func:`evaluate_with_executor`.
        on_progress: ``(done, total)`` over the units of the full selection.

    Returns:
        (the counts, the stop record: ``settled``, ``leader``, ``items_used``, ``items_total``, ``chunk``, ``alpha``,
        ``comparisons`` (leader minus model: n, mean, low, high, left_out), ``calls``, ``calls_saved``,
        ``units_saved``, ``item_ids`` in drawn order).

    Raises:
        InputError: :func:`settle_problem` finds a reason the rule cannot run.
    """
    problem = settle_problem(primary, metrics, [t.name for t in targets])
    if problem is not None:
        raise problem
    spec = ranking_spec(primary, metrics)
    assert spec is not None
    order = settle_order(items, seed)
    n, k = len(order), len(targets)
    chunk = chunk_size(n, k, max_parallel)
    names, hib = [t.name for t in targets], spec.higher_is_better
    rule = SettleRule(names, spec.range, higher_is_better=hib, population=n, alpha=ALPHA)
    total = EvalProgress()
    used = 0
    for start in range(0, n, chunk):
        part = order[start : start + chunk]

        def progress(done: int, _total: int, offset: int = start * k) -> None:
            if on_progress is not None:
                on_progress(offset + done, n * k)

        prog = await evaluate_with_executor(
            store, part, targets, metrics, ctx, executor=executor, max_parallel=max_parallel, on_progress=progress,
            corpus=False,
        )  # fmt: skip
        _add(total, prog)
        used = start + len(part)
        if prog.budget_stopped:
            break
        values = {(s.item_id, s.model): s.value for s in store.read("scores") if s.metric == primary and s.ok}
        for item in part:
            rule.add({t.name: values.get((item.id, t.name)) for t in targets})
        if rule.check().settled:
            break
    if not total.budget_stopped:  # corpus-level scores of the items used (all their units are done)
        prog = await evaluate_with_executor(
            store, order[:used], targets, metrics, ctx, executor=executor, max_parallel=max_parallel
        )
        total.scores_new += prog.scores_new
    return total, _stop_record(rule, primary, order, used, chunk, k)


def _stop_record(rule: SettleRule, primary: str, order: list[Item], used: int, chunk: int, k: int) -> dict[str, Any]:
    """The stop record of :func:`evaluate_until_settled`."""
    result = rule.check()
    n = len(order)
    ledger = current_ledger()
    calls = sum(1 for r in ledger.records if r.role in ("target", "judge")) if ledger is not None else 0
    comparisons = [
        {"model": c.model, "n": int(c.n), "mean": float(c.mean), "low": float(c.low), "high": float(c.high),
         "left_out": int(c.left_out)}
        for c in result.comparisons
    ]  # fmt: skip
    return {
        "settled": result.settled, "leader": result.leader, "items_used": used, "items_total": n, "chunk": chunk,
        "alpha": ALPHA, "comparisons": comparisons, "metric": primary, "calls": calls,
        "calls_saved": round(calls / used * (n - used)) if used else 0, "units_saved": (n - used) * k,
        "item_ids": [i.id for i in order[:used]],
    }  # fmt: skip


def _add(total: EvalProgress, prog: EvalProgress) -> None:
    for f in ("responses_new", "responses_skipped", "scores_new", "scores_skipped", "failures", "texts_embedded",
              "long_texts_embedded"):  # fmt: skip
        setattr(total, f, getattr(total, f) + getattr(prog, f))
    total.budget_stopped = total.budget_stopped or prog.budget_stopped
