"""The Python API: run sgieval from code and get the run's records back (issue 5, item 6).

    import sgieval
    run = sgieval.evaluate("Which model is the most creative in chemistry?")
    run.totals("aidan_accepted_answers")   # {"replay:o1-mini": 296.0, ...}
    run.report                               # Path to runs/<run_id>/report.md

``evaluate`` runs the same four-agent LangGraph graph as ``sgieval ask``
(:mod:`sgieval.graphs.evaluate`), with the metric confirmation answered
"yes" unless ``yes=False``.  Models are model strings (``replay:...``,
``openai:...``, ``local:smollm2``, ``provider:model``) or ready
:class:`~sgieval.models.base.NamedModel` objects (e.g. scripted chat models
in tests).

It also exposes the LangGraph Studio factories named in ``langgraph.json``:
:func:`evaluation_graph` and :func:`metric_chat_graph`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from pydantic import ValidationError

from .core import InputError, Item, Response, RunConfig, Score
from .models.base import NamedModel

ModelArg = "str | NamedModel"

_RUNTIME_KEYS = {"metric_options", "on_progress", "tools_pool", "sandbox_backend"}


@dataclass
class RunRecords:
    """What a run produced.

    ``run_id``; ``run_dir`` (the run folder); ``items``, ``responses``,
    ``scores`` (the records of ``items.jsonl``, ``responses.jsonl``,
    ``scores.jsonl``, values on each metric's native scale); ``report``
    (path of ``report.md``, None when the run stopped at the metric
    confirmation); ``selection`` (the questioning agent's plan + item ids);
    ``metric_plan`` (the customisation agent's plan); ``state`` (the final
    graph state); ``stopped`` (True when the run stopped at the confirmation).
    """

    run_id: str
    run_dir: Path
    items: list[Item]
    responses: list[Response]
    scores: list[Score]
    report: Path | None
    selection: dict[str, Any] = field(default_factory=dict)
    metric_plan: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    stopped: bool = False

    def values(self, metric: str, model: str | None = None) -> list[Score]:
        """The ok item-level Scores of ``metric`` (optionally of one target model)."""
        return [s for s in self.scores if s.metric == metric and s.ok and s.item_id != "*"
                and (model is None or s.model == model)]

    def totals(self, metric: str) -> dict[str, float]:
        """Sum of ``metric`` over the selected items per target model (ok scores only)."""
        out: dict[str, float] = {}
        for s in self.values(metric):
            out[s.model] = out.get(s.model, 0.0) + float(s.value)
        return out

    def means(self, metric: str) -> dict[str, float]:
        """Mean of ``metric`` per item per target model (ok scores only)."""
        tot, n = self.totals(metric), {}
        for s in self.values(metric):
            n[s.model] = n.get(s.model, 0) + 1
        return {m: tot[m] / n[m] for m in tot}


def _split_models(models: Sequence[Any] | str | NamedModel | None) -> tuple[list[str], list[NamedModel]]:
    if models is None:
        return [], []
    if isinstance(models, (str, NamedModel)):
        models = [models]
    strings, objects = [], []
    for m in models:
        if isinstance(m, NamedModel):
            objects.append(m)
        elif isinstance(m, str):
            strings += [x.strip() for x in m.split(",") if x.strip()]
        else:
            raise InputError(f"model {m!r} is neither a model string nor a NamedModel", what="models",
                             fix="pass model strings such as 'replay:o1-mini' or 'openai:gpt-4.1', or NamedModel objects")
    return strings, objects


def _resolve(strings: list[str], objects: list[NamedModel], role: str, config: RunConfig) -> list[NamedModel] | None:
    """None when only strings were given (make_runtime resolves them); else every model as a NamedModel."""
    if not objects:
        return None
    from .models.registry import resolve_model, sampling_for_role

    return [resolve_model(s, role, base_url=config.base_url, data_dir=config.data_dir,
                          **sampling_for_role(config, role)) for s in strings] + objects


async def aevaluate(request: str = "", models: Sequence[Any] | str | NamedModel | None = None,
                    judge: Sequence[Any] | str | NamedModel | None = None, *,
                    agent: str | NamedModel | None = None, benchmarks: Sequence[str] | str | None = None,
                    k: int | None = None, seed: int = 0, data_dir: str | Path | None = None,
                    out_dir: str | Path = "runs", run_id: str | None = None, yes: bool = True,
                    confirm: Callable[[dict], bool] | None = None, **kw: Any) -> RunRecords:
    """Async :func:`evaluate` (same arguments)."""
    from .graphs.evaluate import execute, make_runtime, new_run_id

    t_str, t_obj = _split_models(models)
    j_str, j_obj = _split_models(judge)
    runtime_kw = {k_: kw.pop(k_) for k_ in list(kw) if k_ in _RUNTIME_KEYS}
    unknown = [k_ for k_ in kw if k_ not in RunConfig.model_fields]
    if unknown:
        raise InputError(f"unknown option(s) {unknown}", what="sgieval.evaluate",
                         fix=f"use RunConfig fields ({', '.join(sorted(RunConfig.model_fields))}) or "
                             f"{', '.join(sorted(_RUNTIME_KEYS))}")
    if isinstance(benchmarks, str):
        benchmarks = [benchmarks]
    try:
        config = RunConfig(run_id=run_id or new_run_id(request), request=request, benchmarks=list(benchmarks or []),
                           k=k, seed=seed, models=t_str, judges=j_str,
                           agent_model=agent if isinstance(agent, str) else None,
                           data_dir=str(data_dir) if data_dir is not None else None, out_dir=str(out_dir), yes=yes,
                           **kw)
    except ValidationError as e:
        errs = "; ".join(f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}" for err in e.errors())
        raise InputError(errs, what="sgieval.evaluate", fix="check the option values") from e
    targets = _resolve(t_str, t_obj, "target", config)
    judges = _resolve(j_str, j_obj, "judge", config)
    rt = make_runtime(config, targets=targets, judges=judges, agent=agent if isinstance(agent, NamedModel) else None,
                      metric_options=runtime_kw.get("metric_options") or {},
                      on_progress=runtime_kw.get("on_progress"),
                      tools=runtime_kw.get("tools_pool"), sandbox=runtime_kw.get("sandbox_backend"))
    state = await execute(rt, confirm=confirm if confirm is not None else (lambda payload: True) if yes else None)
    stopped = "__interrupt__" in state or state.get("confirmed") is False or not state.get("report")
    ids = set((state.get("selection") or {}).get("item_ids") or [])
    targets_names = set(state.get("targets") or [])
    items = [i for i in rt.store.read("items") if i.id in ids] if ids else rt.store.read("items")
    return RunRecords(
        run_id=config.run_id, run_dir=rt.store.root, items=items,
        responses=[r for r in rt.store.read("responses") if not targets_names or r.model in targets_names],
        scores=[s for s in rt.store.read("scores") if not targets_names or s.model in targets_names],
        report=Path(state["report"]) if state.get("report") else None,
        selection={k_: v for k_, v in (state.get("selection") or {}).items()},
        metric_plan=dict(state.get("metric_plan") or {}), state=dict(state), stopped=stopped)


def evaluate(request: str = "", models: Sequence[Any] | str | NamedModel | None = None,
             judge: Sequence[Any] | str | NamedModel | None = None, **kw: Any) -> RunRecords:
    """Run the evaluation graph on ``request`` and return its :class:`RunRecords`.

    ``request``: the question in plain language ("" = the whole catalog).
    ``models``: target models (strings or NamedModels; default for
    SciAidanBench: every stored model).  ``judge``: judge model(s) (default
    none: judge metrics are reported as not run).  Keyword options:
    ``agent`` (planning model string or NamedModel; default the offline
    agent paths), ``benchmarks``, ``k``, ``seed``, ``data_dir``, ``out_dir``
    (default "runs"), ``run_id``, ``yes`` (default True: no confirmation
    pause; with False, ``confirm(payload) -> bool`` answers it, and without
    ``confirm`` the run stops there with ``stopped=True``), any other
    :class:`~sgieval.core.RunConfig` field (``allow_self_judge``,
    ``base_url``, ``bootstrap_resamples``, the sampling parameters
    ``temperature`` (targets, default 0), ``judge_temperature`` (judges,
    default 0) and ``reasoning_effort`` (default not sent), ...), and ``metric_options``,
    ``on_progress``, ``tools_pool``, ``sandbox_backend`` for the runtime.

    Raises :class:`~sgieval.core.InputError` for bad input (unknown option or
    model string, missing data, a request that selects nothing).  Works
    inside a running event loop (e.g. Jupyter) by running in a worker thread.
    """
    coro = aevaluate(request, models, judge, **kw)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


# ------------------------------------------------------------- LangGraph Studio
def _configurable(config: Any) -> dict[str, Any]:
    if isinstance(config, dict):
        return dict(config.get("configurable") or {})
    return {}


def evaluation_graph(config: Any = None):
    """LangGraph Studio / ``langgraph dev`` factory for the evaluation graph
    (``langgraph.json`` -> ``sgieval.api:evaluation_graph``).

    The runtime comes from ``config["configurable"]`` (all optional):
    ``request``, ``models``, ``judges``, ``agent_model``, ``benchmarks``,
    ``k``, ``seed``, ``data_dir``, ``out_dir`` (default "runs"), ``yes``
    (default False: the graph pauses at the metric confirmation, which Studio
    shows as an interrupt).  Returns the compiled graph without a
    checkpointer (the LangGraph server provides one).
    """
    from .graphs.evaluate import build_graph, make_runtime, new_run_id

    c = _configurable(config)
    fields = {k_: v for k_, v in c.items() if k_ in RunConfig.model_fields and k_ != "run_id"}
    for key in ("models", "judges", "benchmarks"):
        if isinstance(fields.get(key), str):
            fields[key] = [x.strip() for x in fields[key].split(",") if x.strip()]
    cfg = RunConfig(run_id=c.get("run_id") or new_run_id(fields.get("request", "")), **fields)
    return build_graph(make_runtime(cfg))


def metric_chat_graph(config: Any = None):
    """LangGraph Studio factory for the metric-definition chat of
    ``sgieval metric define`` (``langgraph.json`` ->
    ``sgieval.api:metric_chat_graph``): :func:`sgieval.graphs.metric_chat.build_metric_chat`.

    ``config["configurable"]`` may carry ``agent_model`` (a model string;
    default: the offline drafting path), ``base_url``, ``name`` (the metric's
    name) and ``save_dir`` (default: the user rubric folder).  The graph
    pauses at interrupts for the user's description and change requests.
    """
    from .graphs.metric_chat import build_metric_chat

    c = _configurable(config)
    agent = None
    if c.get("agent_model"):
        from .models.registry import resolve_model

        agent = resolve_model(c["agent_model"], "agent", base_url=c.get("base_url"))
    return build_metric_chat(agent=agent, name=c.get("name"), save_dir=c.get("save_dir"))
