"""Evaluation agent (SGI-Bench paper, arXiv 2512.16969, section 3, agent 3): the targets answer the selected items (or
replay stored responses), every metric of the plan scores them, and each Response and Score is appended to the run
folder as it is produced; work already there is skipped."""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from langchain_core.messages import HumanMessage

from ..core import DRY_EXPERIMENT, OPEN_CREATIVITY, InputError, Item, ModelCallError, Response, RunStoppedError
from ..core import RunStore, SandboxUnavailableError, Score, get_logger
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
    long_texts_embedded: int = 0  # texts over MiniLM's 256-token window, embedded in pieces


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
    """One target Response for ``item``: a replay's stored one, the AidanBench generation protocol for open creativity
    (METRICS.md B.1-B.5, needs a judge), else one call; a call failing after its retries gives ``infra_error``."""
    if target.is_replay:
        return target.replay.respond(item, target.name)
    if item.task == OPEN_CREATIVITY:
        from ..metric_pool import run_generation

        judges = ctx.judges_for(target.name)
        if not judges:
            why = ctx.no_judge_reason(target.name, "the open-creativity protocol (coherence judge)")
            return Response(item_id=item.id, model=target.name, status="not_run", error=why)
        if ctx.embedder is None:
            from ..metric_pool import get_embedder

            ctx.embedder = get_embedder(ctx.options.get("embedding_model", "minilm"))
        return await run_generation(item, target, judges[0], ctx.embedder, **ctx.options.get("aidanbench", {}))
    t0 = time.perf_counter()
    try:
        msg = await ainvoke(target, [_user_message(item)])
    except ModelCallError as e:
        latency = time.perf_counter() - t0
        return Response(item_id=item.id, model=target.name, status="infra_error", error=e.message, latency_s=latency)
    return _reply_response(item, target, msg, latency_s=time.perf_counter() - t0)


def _reply_response(item: Item, target: NamedModel, msg: Any, *, latency_s: float | None = None) -> Response:
    """The Response of one target reply (METRICS.md D.8, D.10): final text after the last ``</think>``, reasoning apart;
    a reply cut by the token limit is ``truncated``, one without final text ``empty``."""
    r = read_reply(msg)
    error = None
    if r["status"] == "truncated":
        error = f"reply cut by the token limit (finish_reason {r['finish_reason']!r})"
    elif r["status"] == "empty":
        error = "empty reply" + (" (reasoning only, no final text after it)" if r["reasoning"] else "")
    return Response(
        item_id=item.id, model=target.name, text=r["text"], reasoning=r["reasoning"], finish_reason=r["finish_reason"],
        latency_s=latency_s, tokens=usage(msg), status=r["status"], error=error,
    )  # fmt: skip


def metric_prompt_key(m: Metric) -> str:
    """The prompt family of a metric's judge calls (OpenAI's ``prompt_cache_key``).

    Args:
        m: a built metric.

    Returns:
        ``sgieval:<scope>/<name>`` from its registry key, e.g. ``sgieval:*/rigor``.
    """
    scope, name = key_of(m)
    return f"sgieval:{scope}/{name}"


async def score_response(
    item: Item, response: Response, metrics: list[Metric], ctx: ScoringContext, done: set[tuple[str, str, str]]
) -> list[Score]:
    """Scores of every applicable metric not yet in ``done`` (on the final text, D.8); one that raises gives failed
    Scores (``parse_error``)."""
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
    """``(texts, long texts)`` embedded so far in this process; (0, 0) while the embeddings module is not loaded, or
    is still being imported by another thread (in ``sys.modules`` before its counter is defined)."""
    counts = getattr(sys.modules.get(_EMBEDDINGS), "embedding_counts", None)
    return counts() if counts is not None else (0, 0)


_EMBEDDINGS = __name__.rsplit(".", 2)[0] + ".metric_pool.embeddings"


async def _check_sandbox_once(ctx: ScoringContext, items: list[Item]) -> None:
    """Before a run with dry-experiment items, run the sandbox's ``check()`` once; one that cannot start is replaced
    in ``ctx`` by an ``UnavailableSandbox`` with the reason (those items are then ``infra_error``)."""
    sandbox = ctx.sandbox
    check = getattr(sandbox, "check", None)
    if check is None or not any(i.task == DRY_EXPERIMENT for i in items):
        return
    try:
        await asyncio.to_thread(check)
    except SandboxUnavailableError as e:
        from ..tools import UnavailableSandbox

        if isinstance(sandbox, UnavailableSandbox):
            return
        log.warning("sandbox cannot run programs", reason=e.one_line())
        ctx.sandbox = UnavailableSandbox(getattr(sandbox, "name", type(sandbox).__name__), e)


async def run_evaluation(
    store: RunStore, items: list[Item], targets: list[NamedModel], metrics: list[Metric], ctx: ScoringContext, *,
    max_parallel: int = 16, on_progress: Callable[[int, int], None] | None = None, corpus: bool = True,
) -> EvalProgress:  # fmt: skip
    """Evaluate every (target, item) pair not complete in ``store`` (at most ``max_parallel`` target calls in flight),
    appending each Response and its Scores as they exist, then the corpus-level scores unless ``corpus`` is False;
    ``on_progress(done, total)`` is called before the first unit and after each."""
    await _check_sandbox_once(ctx, items)
    prog = EvalProgress()
    embedded_before = _embedded_so_far()
    try:
        responses = {(r.item_id, r.model): r for r in store.read("responses")}
        done = {(s.item_id, s.model, s.metric) for s in store.read("scores")}
        units = [(t, i) for t in targets for i in items]
        finished = 0
        if on_progress:
            on_progress(0, len(units))
        # ``calls`` keeps max_parallel target calls in flight and 2 x max_parallel workers take the units, so a freed
        # slot is taken at once while its unit is scored
        calls = asyncio.Semaphore(max(1, max_parallel))
        stopped: list[RunStoppedError] = []

        async def unit(target: NamedModel, item: Item) -> None:
            nonlocal finished
            resp = responses.get((item.id, target.name))
            if resp is None:
                async with calls:  # held for the target call only: scoring overlaps the next unit's call
                    if prog.budget_stopped or stopped:
                        return
                    resp = await infer(item, target, ctx)
                store.append("responses", [resp])
                responses[(item.id, target.name)] = resp
                prog.responses_new += 1
            else:
                prog.responses_skipped += 1
            if not resp.ok:
                prog.failures.append(f"{target.name} on {item.id}: {resp.error}")
            scores = await score_response(item, resp, metrics, ctx, done)
            store.append("scores", scores)
            done.update((s.item_id, s.model, s.metric) for s in scores)
            prog.scores_new += len(scores)
            finished += 1
            if on_progress:
                on_progress(finished, len(units))

        await _each_unit(units, unit, 2 * max_parallel, prog, stopped)
        if not prog.budget_stopped and corpus:  # corpus-level scores need every item: not computed on a budget stop
            _corpus_scores(store, "scores", items, targets, metrics, responses, store.read("scores"), done, prog)
    finally:
        after = _embedded_so_far()
        prog.texts_embedded = after[0] - embedded_before[0]
        prog.long_texts_embedded = after[1] - embedded_before[1]
    return prog


async def _each_unit(
    units: list[tuple[NamedModel, Item]], unit: Callable[[NamedModel, Item], Awaitable[None]], workers: int,
    prog: EvalProgress, stopped: list[RunStoppedError],
) -> None:  # fmt: skip
    """``unit`` on each (target, item) of ``units``, in ``workers`` workers sharing one iterator: after a budget stop
    (noted in ``prog``) or a RunStoppedError (e.g. a refused key; kept in ``stopped``, then raised) none starts."""
    pending = iter(units)

    async def worker() -> None:
        for t, i in pending:
            if prog.budget_stopped or stopped:
                return
            try:
                await unit(t, i)
            except BudgetExceeded as e:  # units not started are skipped, the report says where
                prog.budget_stopped = prog.budget_stopped or e.one_line()
            except RunStoppedError as e:
                stopped.append(e)

    await asyncio.gather(*(worker() for _ in range(max(1, min(workers, len(units))))))
    if stopped:
        raise stopped[0]


def _corpus_scores(
    store: RunStore, file: str, items: list[Item], targets: list[NamedModel], metrics: list[Metric],
    responses: dict[tuple[str, str], Response], scores: list[Score], done: set[tuple[str, str, str]],
    prog: EvalProgress, judge: str | None = None,
) -> None:  # fmt: skip
    """Append to ``file`` each target's corpus-level scores of ``metrics`` not in ``done`` (``judge`` set if given)."""
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


ADDED_JUDGE_SCORES = "added_judge_scores"  # scores of judges added to a finished run (ask --into RUN --judge J)
JUDGED_KINDS = ("judge", "rubric")


def judged_metrics(metrics: list[Metric]) -> list[Metric]:
    """The metrics of ``metrics`` with a per-item spec scored by a judge (kind ``judge`` or ``rubric``)."""
    return [m for m in metrics if any(s.kind in JUDGED_KINDS for s in m.specs)]


async def score_added_judge(
    store: RunStore, items: list[Item], targets: list[NamedModel], metrics: list[Metric], ctx: ScoringContext, *,
    max_parallel: int = 16,
) -> EvalProgress:  # fmt: skip
    """Score the stored responses with the judge added to the run (``ctx.judges``, one): only judge and rubric specs,
    only stored Responses, only what ``added_judge_scores.jsonl`` lacks for it; each Score appended there with
    ``judge`` set, then the corpus-level scores once every pair is scored.

    Args:
        store: the run folder.
        items: the run's items.
        targets: the run's target models (only their names are used: nothing is sent to them).
        metrics: the run's metrics.
        ctx: the scoring context whose ``judges`` is the added judge alone.
        max_parallel: (target, item) pairs scored at once (>= 1).

    Returns:
        The counts: ``scores_new``, ``scores_skipped``, ``responses_skipped`` (stored Responses read),
        ``budget_stopped``; ``responses_new`` is always 0.

    Raises:
        RunStoppedError: a judge call that stops the run (e.g. its key was refused).
    """
    (judge,) = ctx.judges
    prog = EvalProgress()
    judged = judged_metrics(metrics)
    wanted = {s.name for m in judged for s in m.specs if s.kind in JUDGED_KINDS}
    responses = {(r.item_id, r.model): r for r in store.read("responses")}
    done = {(s.item_id, s.model, s.metric) for s in store.read(ADDED_JUDGE_SCORES) if s.judge == judge.name}
    not_judged = {s.name for m in judged for s in m.specs} - wanted
    done |= {(i.id, t.name, name) for i in items for t in targets for name in not_judged}
    units = [(t, i) for t in targets for i in items if (i.id, t.name) in responses]
    prog.responses_skipped = len(units)

    async def unit(target: NamedModel, item: Item) -> None:
        scores = await score_response(item, responses[(item.id, target.name)], judged, ctx, done)
        scores = [s.model_copy(update={"judge": judge.name}) for s in scores]
        store.append(ADDED_JUDGE_SCORES, scores)
        done.update((s.item_id, s.model, s.metric) for s in scores)
        prog.scores_new += len(scores)
        prog.scores_skipped += 0 if scores else 1

    await _each_unit(units, unit, max_parallel, prog, [])
    if not prog.budget_stopped:  # corpus-level scores need every item
        mine = [s for s in store.read(ADDED_JUDGE_SCORES) if s.judge == judge.name]
        _corpus_scores(store, ADDED_JUDGE_SCORES, items, targets, judged, responses, mine, done, prog, judge.name)
    return prog
