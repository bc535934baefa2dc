"""The run's estimate before any call: every target and judge prompt the run will send, built by its own code against a
rehearsal chat model per live model, then counted and priced; nothing is sent, stored or billed."""

from __future__ import annotations

import dataclasses
import statistics
from collections import Counter
from typing import Any, Mapping, Sequence

from pydantic import ValidationError

from ..core import OPEN_CREATIVITY, InputError, Item, Response, SandboxUnavailableError, get_logger
from ..metric_pool import Metric, ScoringContext
from ..models import CallContext, Ledger, NamedModel, cache_key_for, call_context, get_cache, should_cache
from ..models import APPROXIMATION, DEFAULT_TYPICAL_OUTPUT_TOKENS, JUDGE_REPLY_TOKENS, TOOL_RESULT_TOKENS
from ..models import TOOL_TURN_TOKENS, TYPICAL_OUTPUT_TOKENS, Estimate, Rehearsal, RehearsalChat, RoleEstimate, priced
from ..models import summarise, token_counter
from ..reports import Table, Text
from .customisation import MetricPlan, planned_metrics
from .evaluation import ADDED_JUDGE_SCORES, JUDGED_KINDS, infer, judged_metrics, score_response
from .runtime import RunContext, State, attach_tools, plan_items, run_prices
from .targets import default_targets

log = get_logger("sgieval")

NARRATIVE_INPUT_TOKENS = 3000  # stated: the report's tables it reads are not known before the run
NARRATIVE_OUTPUT_TOKENS = 400


def _max_tokens(model: NamedModel) -> int | None:
    found = [getattr(model.chat, n, None) for n in ("max_tokens", "max_completion_tokens", "max_output_tokens")]
    return next((v for v in [*found, model.params.get("max_tokens")] if isinstance(v, int) and v > 0), None)


def _typical_answer_tokens(items: Sequence[Item], stored: Sequence[str], model: str = "") -> tuple[int, str]:
    """(tokens, source phrase) of a typical target answer: the median of ``stored`` answers (counted for ``model``),
    else the items' benchmark's :data:`TYPICAL_OUTPUT_TOKENS`, else :data:`DEFAULT_TYPICAL_OUTPUT_TOKENS`."""
    counter = token_counter(model)
    if stored:
        n = int(statistics.median(counter.count(t) for t in stored))
        return max(1, n), f"the median of {len(stored)} stored answers to these items ({n} tokens)"
    benches = [i.benchmark for i in items]
    bench = max(set(benches), key=benches.count) if benches else ""
    key = "jsonl" if bench not in TYPICAL_OUTPUT_TOKENS else bench
    n = TYPICAL_OUTPUT_TOKENS.get(key, DEFAULT_TYPICAL_OUTPUT_TOKENS)
    return n, f"the stated default for {bench or 'these'} answers ({n} tokens)"


def _notes(rehearsed: "_Rehearsed", batch: bool) -> list[str]:
    """The estimate's notes: the batch rate, open-creativity items, metrics that asked no judge of a stand-in."""
    notes = ["--batch: target and judge calls priced at the batch rate (genai-prices' batch price, else 50% of the "
             "list price); the agent model's calls are direct"] if batch else []  # fmt: skip
    if rehearsed.open_creativity:
        notes.append(
            "open-creativity items: counted for one answer and one coherence judgement per question; the "
            "protocol asks for further answers while they stay coherent and novel, so those items cost more"
        )
    for name, ids in rehearsed.unrehearsed.items():
        notes.append(
            f"{name}: no judge call was made on the stand-in answer on {len(ids)} item(s) (the metric reads the "
            "answer's content before it asks a judge), so its judge calls on live answers are not counted"
        )
    return notes


def _tokenizer(rows: Sequence[RoleEstimate]) -> str:
    """The tokenizer that counted every row's tokens, else each model's, else the approximation."""
    counters = {m: token_counter(m).name for m in dict.fromkeys(r.model for r in rows)}
    names = set(counters.values())
    tokenizer = "; ".join(f"{m}: {n}" for m, n in counters.items()) or APPROXIMATION
    if len(names) == 1:
        tokenizer = next(iter(names))
    return tokenizer


async def estimate_run(
    items: Sequence[Item], targets: Sequence[NamedModel], judges: Sequence[NamedModel], metrics: Sequence[Metric], *,
    agent: NamedModel | None = None, agent_done: Mapping[str, int] | None = None, tools: Any = None,
    options: Mapping[str, Any] | None = None, allow_self_judge: bool = False,
    prices: Mapping[str, tuple[float, float]] | None = None, cache: Any = None, batch: bool = False,
    stored: Mapping[tuple[str, str], Any] | None = None, done: set[tuple[str, str, str]] | None = None,
) -> Estimate:  # fmt: skip
    """The estimate of a run before any call.

    Args:
        items: the run's items.
        targets: the target models (replays answer with their stored responses; live ones are rehearsed).
        judges: the judge models.
        metrics: the plan's metrics (their judge prompts are built by their own ``score``).
        agent: the agent model, or None; ``agent_done``: its ledger totals so far (``calls``, ``input_tokens``,
            ``output_tokens``: the planning calls already made).
        tools: the run's tool pool (the tools a judge is offered are bound as the run binds them; none is run).
        options: the metric options (``judge_repeats``, ``tool_budget``...).
        allow_self_judge: as in the run.
        prices: the run's user prices (USD per 1M input and output tokens).
        cache: the run's call cache (looked up, never written) or None when the run does not use it.
        batch: the run sends target and judge calls through batch APIs (``--batch``): priced at the batch rate.
        stored: the Responses the run folder holds, by (item id, target model): scored as stored, target not called.
        done: the (item id, target model, metric spec) scores the run folder holds: not scored again.

    Returns:
        The Estimate: calls, input tokens, output tokens (typical and bound) and USD per (model, role).
    """
    rehearsal = Rehearsal(cache=cache, cache_key=cache_key_for if cache is not None else None)
    replayed = {(t.name, i.id): t.replay.respond(i, t.name) for t in targets if t.is_replay for i in items}
    texts = [r.text for r in replayed.values() if r.ok and r.text]
    first_live = next((t.name for t in targets if not t.is_replay), "")
    answer_tokens, answer_source = _typical_answer_tokens(items, texts, first_live)

    def stand_in(m: NamedModel) -> NamedModel:  # same name, role, provider and parameters; a rehearsal chat model
        chat = RehearsalChat(
            rehearsal=rehearsal, label=m.name, role=m.role, answer_tokens=answer_tokens, max_tokens=_max_tokens(m),
            real=m if cache is None or should_cache(m, None) else None,
        )  # fmt: skip
        return dataclasses.replace(m, chat=chat, params=dict(m.params), dropped=dict(m.dropped))

    live = {t.name: stand_in(t) for t in targets if not t.is_replay}
    stand_in_judges = [stand_in(j) for j in judges]
    # without a judge scoring sends nothing, so the metrics are not run
    sandbox = None
    if stand_in_judges:
        from ..tools import UnavailableSandbox

        sandbox = UnavailableSandbox("rehearsal", SandboxUnavailableError("no program runs before the run"))
    ctx = ScoringContext(
        judges=stand_in_judges, tools=tools, sandbox=sandbox, embedder=_no_embedding,
        allow_self_judge=allow_self_judge, options=dict(options or {}),
    )  # fmt: skip
    answers = {**replayed, **{(t, i): r for (i, t), r in (stored or {}).items()}}
    rehearsed = await _rehearse(items, targets, metrics if stand_in_judges else [], ctx, live, answers, rehearsal, done)
    how = (
        f"a live target's answer is unknown before the run: its judge prompts carry a stand-in answer of the "
        f"typical length, {answer_source}"
        if live
        else "judge prompts carry the stored answers"
    )
    order = [(t.name, "target") for t in targets if not t.is_replay] + [(j.name, "judge") for j in judges]
    rows = summarise(rehearsal.calls, order, prices, batch=batch)
    for row in rows:
        if row.role == "target" and row.model in rehearsed.not_run:
            row.note = "; ".join(f"not run on {n} item(s): {why}" for why, n in rehearsed.not_run[row.model].items())
    if agent is not None:
        rows.append(_agent_row(agent, agent_done or {}, prices))
    typical = (
        f"{how}; typical judge output {JUDGE_REPLY_TOKENS} tokens per structured reply and {TOOL_TURN_TOKENS} per "
        f"tool round (stated); judges offered tools are counted with every tool round used (an upper bound), each "
        f"tool result read back as {TOOL_RESULT_TOKENS} input tokens (stated)"
    )
    notes = _notes(rehearsed, batch)
    return Estimate(rows=rows, items=len(items), tokenizer=_tokenizer(rows), typical_output=typical, notes=notes)


@dataclasses.dataclass
class _Rehearsed:
    open_creativity: bool = False
    not_run: dict[str, Counter[str]] = dataclasses.field(default_factory=dict)
    unrehearsed: dict[str, set[str]] = dataclasses.field(default_factory=dict)


async def _rehearse(
    items: Sequence[Item], targets: Sequence[NamedModel], metrics: Sequence[Metric], ctx: ScoringContext,
    live: dict[str, NamedModel], answers: Mapping[tuple[str, str], Response], rehearsal: Rehearsal,
    done: set[tuple[str, str, str]] | None,
) -> _Rehearsed:  # fmt: skip
    """Every target answers every item (known answer, else rehearsed) and every metric scores it, recorded apart."""
    out = _Rehearsed()
    done = set(done or ())
    with call_context(CallContext(use_cache=False, limits={"*": 64})), Ledger().activate():
        for t in targets:
            for i in items:
                resp = answers.get((t.name, i.id))
                exact = resp is not None
                if resp is None:
                    resp = await infer(i, live[t.name], ctx)
                    if resp.status == "not_run":
                        out.not_run.setdefault(t.name, Counter())[resp.error or "not run"] += 1
                        continue
                    out.open_creativity = out.open_creativity or i.task == OPEN_CREATIVITY
                    if not resp.ok:
                        resp = resp.model_copy(update={"status": "ok", "error": None})
                for m in metrics:
                    before = len(rehearsal.calls)
                    await score_response(i, resp, [m], ctx, done)
                    if (
                        not exact
                        and len(rehearsal.calls) == before
                        and m.applies(i)
                        and any(sp.kind != "objective" and (i.id, t.name, sp.name) not in done for sp in m.specs)
                        and ctx.judges_for(t.name)
                    ):
                        out.unrehearsed.setdefault(m.name, set()).add(i.id)
    return out


def _agent_row(agent: NamedModel, made: Mapping[str, int], prices: Mapping[str, tuple[float, float]] | None) -> Any:
    """The agent model's row: its planning calls made so far, then the report narrative (stated tokens)."""
    calls = int(made.get("calls", 0))
    note = (
        f"{calls} planning call(s) made, then the report narrative (1 call, a second when its fact check "
        f"fails; {NARRATIVE_INPUT_TOKENS:,} input tokens stated: its tables are not known before the run)"
    )
    inp = int(made.get("input_tokens", 0)) + NARRATIVE_INPUT_TOKENS
    out = int(made.get("output_tokens", 0)) + NARRATIVE_OUTPUT_TOKENS
    row = RoleEstimate(
        model=agent.name,
        role="agent",
        calls=calls + 1,
        input_tokens=inp,
        output_tokens=out,
        done_calls=calls,
        note=note,
    )
    return priced(row, prices)


async def estimate_step(state: State, rt: RunContext) -> dict[str, Any]:
    """The run's estimate before any call (:func:`estimate_run`), appended to ``estimate.jsonl`` (unless read-only)
    with its ``invocation`` and ``kind``; an ``ask --into`` counts only what it calls.

    Args:
        state: the graph state after the customisation (``selection``, ``metric_plan``).
        rt: the run context.

    Returns:
        The Estimate's fields as a dict, with ``lines``: its text.
    """
    if rt.estimate is not None:
        return rt.estimate
    items = plan_items(rt, state["selection"]["item_ids"])
    plan = MetricPlan.model_validate(state["metric_plan"])
    attach_tools(rt, items)
    try:
        targets = default_targets(rt, items)
    except InputError:
        targets = []
    agent_done: dict[str, int] = {}
    if rt.agent is not None and rt.ledger is not None:
        for t in rt.ledger.totals().values():
            if t.model == rt.agent.name and t.role == "agent":
                agent_done = {"calls": t.calls, "input_tokens": t.input_tokens, "output_tokens": t.output_tokens}
    into = rt.invocation_kind == "into"
    stored = {(r.item_id, r.model): r for r in rt.store.read("responses")} if into else None
    done = {(s.item_id, s.model, s.metric) for s in rt.store.read("scores")} if into else None
    cache = get_cache() if rt.config.use_cache else None
    common: dict[str, Any] = dict(
        tools=rt.tools, options=rt.metric_options, allow_self_judge=rt.config.allow_self_judge, prices=run_prices(rt),
        cache=cache, batch=rt.config.batch, stored=stored,
    )  # fmt: skip
    metrics = planned_metrics(plan, items, rt.metric_options)
    est = await estimate_run(
        items, targets, rt.judges, metrics, agent=rt.agent, agent_done=agent_done, done=done, **common
    )
    est.rows += await _added_judge_rows(rt, items, targets, metrics, common)
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
    if rt.store.invocation:
        out.update(invocation=rt.store.invocation, kind=rt.invocation_kind or "ask")
    if not rt.store.read_only:
        rt.store.append_rows("estimate", [out])
    rt.estimate = out
    log.info("estimate", calls=est.calls, input_tokens=est.input_tokens, usd=est.usd)
    return out


async def _added_judge_rows(
    rt: RunContext, items: list[Item], targets: list[NamedModel], metrics: list[Metric], common: dict[str, Any]
) -> list[RoleEstimate]:
    """The judge rows of the added judges' pass (one per judge, on the judged metrics), without what each has scored."""
    if not rt.added_judges:
        return []
    judged = judged_metrics(metrics)
    objective = {s.name for m in judged for s in m.specs if s.kind not in JUDGED_KINDS}
    added_rows = rt.store.read(ADDED_JUDGE_SCORES)
    rows: list[RoleEstimate] = []
    for judge in rt.added_judges:
        mine = {(s.item_id, s.model, s.metric) for s in added_rows if s.judge == judge.name}
        mine |= {(i.id, t.name, name) for i in items for t in targets for name in objective}
        extra = await estimate_run(items, targets, [judge], judged, done=mine, **common)
        rows += [r for r in extra.rows if r.role == "judge"]
    return rows


def _no_embedding(texts: list[str]) -> Any:
    """A stand-in embedder for the rehearsal: unit vectors."""
    import numpy as np

    out = np.zeros((len(texts), 8), dtype=np.float32)
    out[:, 0] = 1.0
    return out


OLD_INTO_NOTE = "ask --into: the rows count"  # an --into estimate line that kept no invocation: not the run's


def run_estimate(stored: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The estimate of everything a run's invocations called: the run's last ``ask``/``resume`` estimate and the last
    of each ``ask --into`` invocation, added up per (model, role) (a bound is None when one part's is).

    Args:
        stored: the ``estimate.jsonl`` rows, in file order.

    Returns:
        The one part as stored, or the sum with ``parts`` and a note naming them; None when there is no estimate.
    """
    own = [e for e in stored if e.get("kind") in (None, "ask", "resume") and not _old_into(e)]
    into = {str(e["invocation"]): e for e in stored if e.get("kind") == "into" and e.get("invocation")}
    parts = ([("the run's estimate", own[-1])] if own else []) + [
        (f"the estimate of ask --into (invocation {inv})", e) for inv, e in into.items()
    ]
    if len(parts) <= 1:
        return dict(parts[0][1]) if parts else None
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for _, e in parts:
        for r in e.get("rows") or []:
            key = (str(r.get("model")), str(r.get("role")))
            if key not in rows:
                rows[key] = dict(r)
                continue
            acc = rows[key]
            for f in ("calls", "cached_calls", "input_tokens", "output_tokens", "done_calls"):
                acc[f] = int(acc.get(f) or 0) + int(r.get(f) or 0)
            for f in ("usd", "usd_bound", "output_bound"):
                a, b = acc.get(f), r.get(f)
                acc[f] = None if a is None or b is None else a + b
            acc["note"] = "; ".join(n for n in dict.fromkeys([acc.get("note") or "", r.get("note") or ""]) if n)
    first = parts[0][1]
    names = ", then ".join(name for name, _ in parts)
    notes = [f"Estimates added up per model and role: {names}"]
    for _, e in parts:
        notes += [n for n in e.get("notes") or [] if n not in notes]
    est = Estimate(
        rows=[RoleEstimate.model_validate(r) for r in rows.values()], items=int(first.get("items") or 0),
        tokenizer=str(first.get("tokenizer") or ""), typical_output=str(first.get("typical_output") or ""), notes=notes,
    )  # fmt: skip
    return {**est.model_dump(mode="json"), "lines": est.lines(), "parts": [name for name, _ in parts]}


def _old_into(e: Mapping[str, Any]) -> bool:
    return "kind" not in e and any(str(n).startswith(OLD_INTO_NOTE) for n in e.get("notes") or [])


def estimate_blocks(estimate: Mapping[str, Any] | None, actual: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The cost section's "estimate and actual" table and its note, per (model, role).

    Args:
        estimate: the stored estimate (``rows``, ``tokenizer``, ``typical_output``, ``notes``), or None.
        actual: the ledger's rows (``model``, ``role``, ``calls``, ``input_tokens``, ``output_tokens``, ``cost``).

    Returns:
        A Table (``estimate``) and a Text on how it was made; without an estimate a Text saying so, or [] when no
        call was made.
    """
    if not estimate or not estimate.get("rows"):
        if not any(r.get("calls") for r in actual):
            return []
        return [
            Text(
                "No estimate before the calls is stored in this run folder: it was written by an sgieval that "
                "made none for a run started with `--yes`, or the estimate failed (the run's log.jsonl says why)."
            )
        ]
    try:
        stored = Estimate.model_validate({k: v for k, v in estimate.items() if k in Estimate.model_fields})
    except ValidationError as bad:
        why = bad.errors()[0]["msg"]
        return [Text(f"The stored estimate (estimate.jsonl) is unreadable and is not shown: {why}.")]
    seen = {(str(r.get("model")), str(r.get("role"))): r for r in actual}

    def usd(v: Any) -> str:
        return "n/a" if v is None else f"{float(v):.4f}"

    rows = []
    for e in stored.rows:
        a = seen.get((e.model, e.role), {})
        rows.append(
            [e.model, e.role, e.calls, a.get("calls", 0), e.input_tokens, a.get("input_tokens", 0), e.output_tokens,
             a.get("output_tokens", 0), usd(e.usd), usd(a.get("cost")) if a else "0.0000"]
        )  # fmt: skip
    head = ["model", "role", "calls (est.)", "calls", "input tokens (est.)", "input tokens",
            "output tokens (est., typical)", "output tokens", "cost (est., USD)", "cost (USD)"]  # fmt: skip
    table = Table(head, rows, name="estimate")
    text = (
        "Estimate made before any call, beside what the run used (its tokens as the providers reported them): "
        "input tokens counted with "
        f"{stored.tokenizer or APPROXIMATION} on the prompts built for every item; "
        f"{stored.typical_output}."
    )
    notes = list(stored.notes)
    return [table, Text(text + (" " + " ".join(n.rstrip(".") + "." for n in notes) if notes else ""))]
