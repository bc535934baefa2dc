"""Evaluation agent (SGI-Bench paper, arXiv 2512.16969, section 3, agent 3).

Runs the target models on the selected items (or replays stored responses), applies every metric of the plan, and
appends each Response and Score to the run folder as it is produced.  Work already in the run folder is skipped, so a
resumed run recomputes nothing already written.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from langchain_core.messages import HumanMessage

from ..core import (
    DRY_EXPERIMENT,
    OPEN_CREATIVITY,
    InputError,
    Item,
    ModelCallError,
    Response,
    RunStoppedError,
    RunStore,
    SandboxUnavailableError,
    Score,
    get_logger,
)
from ..metric_pool import CORPUS, Metric, ScoringContext, key_of
from ..models import BudgetExceeded, NamedModel, ainvoke, prompt_scope, read_reply, usage

log = get_logger("sgieval")


@dataclass
class EvalProgress:
    """Counts of what this call produced and skipped (for logs and tests)."""

    responses_new: int = 0
    responses_skipped: int = 0
    scores_new: int = 0
    scores_skipped: int = 0
    failures: list[str] = field(default_factory=list)
    budget_stopped: str | None = None
    texts_embedded: int = 0
    long_texts_embedded: int = 0
    """Texts the run embedded, and how many of them exceeded MiniLM's 256-token
    window and were embedded whole in pieces."""


def _user_message(item: Item) -> HumanMessage:
    images = item.metadata.get("images") or []
    if not images:
        return HumanMessage(content=item.prompt)
    blocks: list[str | dict[Any, Any]] = [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b}"}} for b in images
    ]
    blocks.append({"type": "text", "text": item.prompt})
    return HumanMessage(content=blocks)


async def infer(item: Item, target: NamedModel, ctx: ScoringContext) -> Response:
    """One target Response for ``item``.

    Replay targets serve the stored response (a missing one is a failed Response with the reason).  Open-creativity
    items run the AidanBench generation protocol (METRICS.md B.1-B.5), which needs a judge.  Other tasks send
    ``item.prompt`` once.  A call that fails after its retries is a Response with status ``infra_error`` and the reason,
    never an empty answer scored as zero.
    """
    if target.is_replay:
        return target.replay.respond(item, target.name)
    if item.task == OPEN_CREATIVITY:
        from ..metric_pool import run_generation  # numpy: loaded only for open-creativity items

        judges = ctx.judges_for(target.name)
        if not judges:
            return Response(
                item_id=item.id,
                model=target.name,
                status="not_run",
                error=ctx.no_judge_reason(target.name, "the open-creativity protocol (coherence judge)"),
            )
        if ctx.embedder is None:
            from ..metric_pool import get_embedder  # numpy and the embedder: only for open creativity

            ctx.embedder = get_embedder(ctx.options.get("embedding_model", "minilm"))
        return await run_generation(item, target, judges[0], ctx.embedder, **ctx.options.get("aidanbench", {}))
    t0 = time.perf_counter()
    try:
        msg = await ainvoke(target, [_user_message(item)])
    except ModelCallError as e:
        return Response(
            item_id=item.id,
            model=target.name,
            status="infra_error",
            error=e.message,
            latency_s=time.perf_counter() - t0,
        )
    return reply_response(item, target, msg, latency_s=time.perf_counter() - t0)


def reply_response(item: Item, target: NamedModel, msg: Any, *, latency_s: float | None = None) -> Response:
    """The Response of one target reply (METRICS.md D.8, D.10): ``text`` is the final text after the last ``</think>``,
    ``reasoning`` the thinking (also a server's separate ``reasoning_content``), ``finish_reason`` the server's; a reply
    cut by the token limit has status ``truncated`` and one with no final text ``empty`` (both excluded from means and
    counted in the report)."""
    r = read_reply(msg)
    error = None
    if r["status"] == "truncated":
        error = f"reply cut by the token limit (finish_reason {r['finish_reason']!r})"
    elif r["status"] == "empty":
        error = "empty reply" + (" (reasoning only, no final text after it)" if r["reasoning"] else "")
    return Response(
        item_id=item.id,
        model=target.name,
        text=r["text"],
        reasoning=r["reasoning"],
        finish_reason=r["finish_reason"],
        latency_s=latency_s,
        tokens=usage(msg),
        status=r["status"],
        error=error,
    )


def metric_prompt_key(m: Metric) -> str:
    """The prompt family of a metric's judge calls (:class:`~sgieval.models.context.prompt_scope`).

    Args:
        m: a built metric (a benchmark's :class:`~sgieval.metric_pool.registry.Scoped` one, or one for all).

    Returns:
        ``sgieval:<scope>/<name>`` from its registry key (scope a benchmark or ``*``), e.g. ``sgieval:*/rigor``;
        OpenAI judges receive it as ``prompt_cache_key``.
    """
    scope, name = key_of(m)
    return f"sgieval:{scope}/{name}"


async def score_response(
    item: Item, response: Response, metrics: list[Metric], ctx: ScoringContext, done: set[tuple[str, str, str]]
) -> list[Score]:
    """Scores of every applicable metric not yet in ``done``.  A metric that raises becomes failed Scores (status
    ``parse_error``) with the exception. Metrics see the response's final text only (its reasoning moved out, D.8)."""
    response = response.split_reasoning()
    out: list[Score] = []
    for m in metrics:
        if not m.applies(item):
            continue
        todo = [s.name for s in m.specs if (item.id, response.model, s.name) not in done]
        if not todo:
            continue
        try:
            with prompt_scope(metric_prompt_key(m)):
                scores = await m.score(item, response, ctx)
        except (BudgetExceeded, RunStoppedError):
            raise
        except InputError as e:
            scores = m.failed(item, response, "input_error", e.one_line())
        except Exception as e:  # noqa: BLE001 - a metric bug must not lose the run
            scores = m.failed(item, response, "parse_error", f"{type(e).__name__}: {e}")
        out += [s for s in scores if s.metric in todo]
    return out


def _embedded_so_far() -> tuple[int, int]:
    """``(texts, long texts)`` embedded so far in this process (metric_pool.embeddings.embedding_counts); ``(0, 0)``
    while the embeddings module is not loaded, since nothing can have been embedded then.  Not importing it here keeps
    numpy off the path to the first model call."""
    module = sys.modules.get(_EMBEDDINGS)
    return module.embedding_counts() if module is not None else (0, 0)


_EMBEDDINGS = __name__.rsplit(".", 2)[0] + ".metric_pool.embeddings"


async def check_sandbox_once(ctx: ScoringContext, items: list[Item]) -> None:
    """Before a run that needs the sandbox (``ctx.sandbox`` set and a dry-experiment item among ``items``), start it
    once with a trivial program (the sandbox's ``check()``; the outcome is kept on the sandbox object, so a run checks
    it once).  A sandbox that cannot start its interpreter is replaced in ``ctx`` by
    :class:`~sgieval.tools.sandbox.UnavailableSandbox` carrying the reason: each dry-experiment item is then
    ``infra_error`` with that reason, never a failed test, and no program is launched.  A sandbox object without
    ``check`` (a test double) is used as is."""
    sandbox = ctx.sandbox
    check = getattr(sandbox, "check", None)
    if check is None or not any(i.task == DRY_EXPERIMENT for i in items):
        return
    try:
        await asyncio.to_thread(check)
    except SandboxUnavailableError as e:
        from ..tools import UnavailableSandbox  # the sandbox module: loaded only when a sandbox fails

        if isinstance(sandbox, UnavailableSandbox):
            return
        log.warning("sandbox cannot run programs", reason=e.one_line())
        ctx.sandbox = UnavailableSandbox(getattr(sandbox, "name", type(sandbox).__name__), e)


async def run_evaluation(
    store: RunStore,
    items: list[Item],
    targets: list[NamedModel],
    metrics: list[Metric],
    ctx: ScoringContext,
    *,
    max_parallel: int = 16,
    on_progress: Callable[[int, int], None] | None = None,
    corpus: bool = True,
) -> EvalProgress:
    """Evaluate every (target, item) pair not already complete in ``store``.

    Units run concurrently (workers take them in order; at most ``max_parallel`` target calls in flight, while finished
    units are scored); each appends its Response, then its Scores, as soon as they exist.  Corpus-level scores
    (``item_id == "*"``) are computed last, once per model.  ``on_progress(done, total)`` is called with ``done`` 0
    before the first unit, then after each unit (``total``: the (target, item) pairs). ``corpus`` False leaves the
    corpus-level scores out (a chunk of a run that goes on).
    """
    await check_sandbox_once(ctx, items)
    prog = EvalProgress()
    embedded_before = _embedded_so_far()
    try:
        return await _run_evaluation(prog, store, items, targets, metrics, ctx, max_parallel, on_progress, corpus)
    finally:
        after = _embedded_so_far()
        prog.texts_embedded = after[0] - embedded_before[0]
        prog.long_texts_embedded = after[1] - embedded_before[1]


async def _run_evaluation(
    prog: EvalProgress,
    store: RunStore,
    items: list[Item],
    targets: list[NamedModel],
    metrics: list[Metric],
    ctx: ScoringContext,
    max_parallel: int,
    on_progress: Callable[[int, int], None] | None,
    corpus: bool = True,
) -> EvalProgress:
    responses = {(r.item_id, r.model): r for r in store.read("responses")}
    done = {(s.item_id, s.model, s.metric) for s in store.read("scores")}
    lock = asyncio.Lock()
    units = [(t, i) for t in targets for i in items]
    finished = 0
    if on_progress:
        on_progress(0, len(units))  # the total is known before the first call: a progress display shows it

    stopped: list[RunStoppedError] = []

    async def unit(target: NamedModel, item: Item) -> None:
        try:
            await _unit(target, item)
        except BudgetExceeded as e:  # stop cleanly: units not started are skipped, the report says where
            prog.budget_stopped = prog.budget_stopped or e.one_line()
        except RunStoppedError as e:  # e.g. a refused key: no other unit starts, the run stops with this error
            stopped.append(e)

    async def _unit(target: NamedModel, item: Item) -> None:
        nonlocal finished
        if prog.budget_stopped or stopped:
            return
        resp = responses.get((item.id, target.name))
        if resp is None:
            async with calls:  # held for the target call only: scoring overlaps the next unit's call
                if prog.budget_stopped or stopped:
                    return
                resp = await infer(item, target, ctx)
            async with lock:
                store.append("responses", [resp])
                responses[(item.id, target.name)] = resp
            prog.responses_new += 1
        else:
            prog.responses_skipped += 1
        if not resp.ok:
            prog.failures.append(f"{target.name} on {item.id}: {resp.error}")
        scores = await score_response(item, resp, metrics, ctx, done)
        async with lock:
            store.append("scores", scores)
            done.update((s.item_id, s.model, s.metric) for s in scores)
            prog.scores_new += len(scores)
            finished += 1
            if on_progress:
                on_progress(finished, len(units))

    # 2 x ``max_parallel`` workers take the units in order from one shared iterator (each unit once): the first
    # calls start at once, where one task per unit made all 10,000 tasks of a 10,000-item run before the first
    # call (~0.15 s) and kept them alive for the whole run.  ``calls`` keeps at most ``max_parallel``
    # target calls in flight; the other half of the workers wait there, so a slot freed by a reply is taken
    # at once while that unit is scored and stored (with one worker per slot, a slot idled while its unit was
    # scored: as long as a call, or longer, for judged metrics)
    calls = asyncio.Semaphore(max(1, max_parallel))
    pending = iter(units)

    async def worker() -> None:
        for t, i in pending:
            await unit(t, i)

    await asyncio.gather(*(worker() for _ in range(max(1, min(2 * max_parallel, len(units))))))
    if stopped:
        raise stopped[0]
    if prog.budget_stopped or not corpus:
        return prog  # corpus-level scores need every item: not computed on a budget stop

    _corpus_scores(store, "scores", items, targets, metrics, responses, store.read("scores"), done, prog)
    return prog


def _corpus_scores(
    store: RunStore, file: str, items: list[Item], targets: list[NamedModel], metrics: list[Metric],
    responses: dict[tuple[str, str], Response], scores: list[Score], done: set[tuple[str, str, str]],
    prog: EvalProgress, judge: str | None = None,
) -> None:  # fmt: skip
    """Append to ``file`` each target's corpus-level scores of ``metrics`` not in ``done`` (``judge`` set on them when
    given), computed from its responses and item-level ``scores``."""
    by_id = {i.id: i for i in items}
    for t in targets:
        model_resp = [r for (iid, m), r in responses.items() if m == t.name and iid in by_id]
        model_scores = [s for s in scores if s.model == t.name]
        for m in metrics:
            if all((CORPUS, t.name, s.name) in done for s in m.corpus_specs):
                continue
            pooled = [s for s in m.corpus(by_id, model_resp, model_scores) if (CORPUS, t.name, s.metric) not in done]
            if judge is not None:
                pooled = [s.model_copy(update={"judge": judge}) for s in pooled]
            store.append(file, pooled)
            done.update((CORPUS, t.name, s.metric) for s in pooled)
            prog.scores_new += len(pooled)


ADDED_JUDGE_SCORES = "added_judge_scores"
"""The run-folder file of the scores made by judges added to a finished run (``ask --into RUN --judge J``)."""

JUDGED_KINDS = ("judge", "rubric")


def judged_metrics(metrics: list[Metric]) -> list[Metric]:
    """The metrics of ``metrics`` with a per-item spec scored by a judge (kind ``judge`` or ``rubric``)."""
    return [m for m in metrics if any(s.kind in JUDGED_KINDS for s in m.specs)]


async def score_added_judge(
    store: RunStore,
    items: list[Item],
    targets: list[NamedModel],
    metrics: list[Metric],
    ctx: ScoringContext,
    *,
    max_parallel: int = 16,
) -> EvalProgress:
    """Score the stored responses with a judge added to the run: ``ctx.judges`` is that one judge.

    Only the judge and rubric specs of ``metrics`` are scored (:func:`judged_metrics`), only on the Responses already in
    ``store`` (no target model is called: a (target, item) pair without a stored Response is left out), and only what
    ``added_judge_scores.jsonl`` does not hold yet for that judge, so a second call scores nothing.  Each Score is
    appended there with ``judge`` set to the added judge's name (a ``not_run`` Score too, e.g. the judge is the target
    model itself and ``--allow-self-judge`` is not set: the self-judge guard of
    :meth:`~sgieval.metric_pool.ScoringContext.judges_for` applies as in any run).  Corpus-level scores of those metrics
    are computed from the added judge's per-item scores, once every pair is scored.

    Args:
        store: the run folder.
        items: the run's items.
        targets: the run's target models (only their names are used: nothing is sent to them).
        metrics: the run's metrics.
        ctx: the scoring context whose ``judges`` is the added judge alone.
        max_parallel: (target, item) pairs scored at once (>= 1).

    Returns:
        The counts: ``scores_new``, ``scores_skipped`` (pairs already scored), ``responses_skipped`` (the
        stored Responses read), ``budget_stopped`` (the budget was reached: the pairs not started are left for a
        later invocation); ``responses_new`` is always 0.

    Raises:
        RunStoppedError: a judge call that stops the run (e.g. its key was refused).
    """
    (judge,) = ctx.judges
    prog = EvalProgress()
    judged = judged_metrics(metrics)
    wanted = {s.name for m in judged for s in m.specs if s.kind in JUDGED_KINDS}
    responses = {(r.item_id, r.model): r for r in store.read("responses")}
    done = {(s.item_id, s.model, s.metric) for s in store.read(ADDED_JUDGE_SCORES) if s.judge == judge.name}
    not_judged = {s.name for m in judged for s in m.specs} - wanted  # a judged metric's objective parts: the run's
    done |= {(i.id, t.name, name) for i in items for t in targets for name in not_judged}
    lock = asyncio.Lock()
    slots = asyncio.Semaphore(max(1, max_parallel))

    stopped: list[RunStoppedError] = []

    async def unit(target: NamedModel, item: Item) -> None:
        resp = responses.get((item.id, target.name))
        if resp is None:
            return
        prog.responses_skipped += 1
        async with slots:
            if prog.budget_stopped or stopped:
                return
            try:
                scores = await score_response(item, resp, judged, ctx, done)
                scores = [s.model_copy(update={"judge": judge.name}) for s in scores]
            except BudgetExceeded as e:  # as in a run: pairs not started are skipped, the report says where
                prog.budget_stopped = prog.budget_stopped or e.one_line()
                return
            except RunStoppedError as e:  # e.g. a refused key: no other pair starts
                stopped.append(e)
                return
        async with lock:
            store.append(ADDED_JUDGE_SCORES, scores)
            done.update((s.item_id, s.model, s.metric) for s in scores)
            prog.scores_new += len(scores)
            prog.scores_skipped += 0 if scores else 1

    await asyncio.gather(*(unit(t, i) for t in targets for i in items))
    if stopped:
        raise stopped[0]
    if prog.budget_stopped:
        return prog  # corpus-level scores need every item
    mine = [s for s in store.read(ADDED_JUDGE_SCORES) if s.judge == judge.name]
    _corpus_scores(store, ADDED_JUDGE_SCORES, items, targets, judged, responses, mine, done, prog, judge.name)
    return prog
