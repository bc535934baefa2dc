"""``sgieval.score``: score given texts with one metric, without a request, a graph or a run folder; and the helpers the
Python API shares (model arguments, the synchronous form of a coroutine function)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
from typing import TYPE_CHECKING, Any, Callable, Coroutine, Literal, ParamSpec, Sequence, TypeVar, Union

from .core import CORPUS, InputError, Item, MetricSpec, Response, Rubric, Score
from .models import NamedModel, prompt_scope, resolve_model

if TYPE_CHECKING:
    from .metric_pool import Metric

__all__ = ["MetricArg", "ModelArg", "Models", "ascore", "score", "split_models", "synchronous"]

ModelArg = Union[str, NamedModel]
"""A model string (``replay:o1-mini``, ``openai:gpt-4.1``, ``local:smollm2``, ...) or a ready NamedModel."""
Models = Union[ModelArg, Sequence[ModelArg], None]
MetricArg = Union[str, "Metric", MetricSpec]
"""A metric: the name of a predefined metric or library rubric, a Rubric, or a Metric."""

P = ParamSpec("P")
R = TypeVar("R")


def split_models(models: Models) -> tuple[list[str], list[NamedModel]]:
    """Model arguments as (model strings, split at commas; ready model objects).

    Args:
        models: a model string or object, a sequence of them, or None.

    Returns:
        (strings, objects).

    Raises:
        InputError: an argument that is neither a string nor a NamedModel.
    """
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
            raise InputError(
                f"model {m!r} is neither a model string nor a NamedModel",
                what="models",
                fix="pass model strings such as 'replay:o1-mini' or 'openai:gpt-4.1', or NamedModel objects",
            )
    return strings, objects


def synchronous(afn: Callable[P, Coroutine[Any, Any, R]], name: str) -> Callable[P, R]:
    """The synchronous form of a coroutine function, with its parameters, type and docstring.

    Args:
        afn: the coroutine function.
        name: the synchronous function's name (named in a TypeError for a bad keyword).

    Returns:
        A function running ``afn`` to its end (in a worker thread when an event loop is running).
    """
    sig = inspect.signature(afn)

    @functools.wraps(afn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            sig.bind(*args, **kwargs)
        except TypeError as e:  # an unknown or missing keyword: TypeError naming this function, before any work
            raise TypeError(f"{name}() {e}") from None
        coro = afn(*args, **kwargs)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as executor:
            return executor.submit(asyncio.run, coro).result()

    run.__name__, run.__qualname__ = name, name
    return run


def _metric_of(metric: MetricArg) -> tuple[Any, str | None, str]:
    """(Metric object, spec name to keep or None for all, benchmark name for built items)."""
    from .benchmarks import registry
    from .metric_pool import ALL, Metric, RubricMetric, Scoped, entries, load_rubric

    if isinstance(metric, Metric):
        return metric, None, ""
    if isinstance(metric, Rubric):
        return RubricMetric(metric), metric.name, ""
    if isinstance(metric, MetricSpec):
        metric = metric.name
    if not isinstance(metric, str) or not metric.strip():
        raise InputError(
            f"metric {metric!r} is not a metric",
            what="sgieval.score",
            fix="pass a metric name (exact_match, em, rigor, ...), a Rubric or a Metric",
        )
    # a predefined or registered metric of that name, else the library rubric of that name
    for defn in registry.definitions():  # the benchmarks' predefined metrics, then the other registered ones
        for m in registry.predefined_metrics([defn.name]):
            if any(s.name == metric for s in m.all_specs):
                return (m.inner if isinstance(m, Scoped) else m), metric, defn.name
    for entry in (e for e in entries() if not e.predefined):
        m = entry.build(None)
        if any(s.name == metric for s in m.all_specs):
            return m, metric, "" if entry.scope == ALL else entry.scope
    try:
        rubric = load_rubric(metric)
    except InputError:
        known = sorted(
            {s.name for d in registry.definitions() for m in registry.predefined_metrics([d.name]) for s in m.all_specs}
        )
        raise InputError(
            f"no predefined metric or rubric called {metric!r}",
            what="sgieval.score",
            fix=f"use a predefined metric ({', '.join(known[:12])}, ...) or a rubric (`sgieval metric list`)",
        ) from None
    return RubricMetric(rubric), rubric.name, ""


def _pairs(
    m: Any, keep: str | None, bench: str, responses: list[Any], model: str, items: Any, references: Any, prompts: Any
) -> tuple[list[Item], list[Response]]:
    """The (item, response) pairs to score: the given items, or an item ``given/<k>`` of the metric's task per text."""
    n = len(responses)
    for name, seq in (("items", items), ("references", references), ("prompts", prompts)):
        if seq is not None and len(seq) != n:
            raise InputError(
                f"{len(seq)} {name} for {n} responses",
                what="sgieval.score",
                fix=f"give one {name[:-1]} per response, in the same order",
            )
    spec = next((s for s in m.all_specs if s.name == keep), m.all_specs[0])
    task = next((t for t in spec.tasks if t != "*"), "generic")
    its: list[Item] = (
        list(items)
        if items is not None
        else [
            Item(
                id=f"given/{k}",
                benchmark=bench or "given",
                task=task,
                prompt=(prompts[k] if prompts is not None else ""),
                reference=None if references is None else {"answer": references[k]},
                metadata={"question": prompts[k] if prompts is not None else ""},
            )
            for k in range(n)
        ]
    )
    rs = [
        r if isinstance(r, Response) else Response(item_id=its[k].id, model=model, text=str(r))
        for k, r in enumerate(responses)
    ]
    for it, r in zip(its, rs):
        if r.item_id != it.id:
            raise InputError(
                f"response for {r.item_id!r} given with item {it.id!r}",
                what="sgieval.score",
                fix="give the items in the order of the responses",
            )
        if not m.applies(it):
            raise InputError(
                f"metric {keep or m.name} does not apply to item {it.id} (task {it.task!r}, "
                f"benchmark {it.benchmark!r}; it scores tasks {spec.tasks})",
                what="sgieval.score",
                fix="pass items of a task the metric scores (items=...), or another metric",
            )
    return its, rs


async def ascore(
    responses: Sequence[str] | Sequence[Response],
    metric: MetricArg,
    *,
    judge: Models = None,
    items: Sequence[Item] | None = None,
    references: Sequence[Any] | None = None,
    prompts: Sequence[str] | None = None,
    model: str = "given",
    allow_self_judge: bool = False,
    options: dict[str, Any] | None = None,
    base_url: str | None = None,
    judge_temperature: float | None = 0.0,
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high"] | None = None,
) -> list[Score]:
    """Score given texts with one metric: no request, no graph, no run folder.

    Args:
        responses: reply texts, or Response records (their ``item_id`` matching ``items``).
        metric: a predefined metric or library rubric name, a Rubric, or a Metric (all its specs).
        judge: judge model(s) for judge and rubric metrics; without one their scores are ``not_run``.
        items: the items answered, one per response; default: an item ``given/<k>`` of the metric's task per text.
        references, prompts: the default items' ``{"answer": references[k]}`` and prompts.
        model: the model name on the Scores of plain texts.
        allow_self_judge, options: as in :class:`~sgieval.metric_pool.base.ScoringContext`.
        base_url, judge_temperature, reasoning_effort: the judges' model options (temperature 0-2), as in evaluate.

    Returns:
        One Score per response (in order), then any corpus-level Scores (``item_id == "*"``); values on the metric's
        native scale. :func:`score` is the synchronous form.

    Raises:
        InputError: an unknown metric, lengths that differ, or an item the metric does not apply to.
    """
    from .metric_pool import ScoringContext, key_of

    m, keep, bench = _metric_of(metric)
    its, rs = _pairs(m, keep, bench, list(responses), model, items, references, prompts)
    j_str, j_obj = split_models(judge)
    judges = [
        resolve_model(s, "judge", base_url=base_url, temperature=judge_temperature, reasoning_effort=reasoning_effort)
        for s in j_str
    ] + list(j_obj)
    ctx = ScoringContext(judges=judges, allow_self_judge=allow_self_judge, options=dict(options or {}))
    out: list[Score] = []
    scope, name = key_of(m)
    with prompt_scope(f"sgieval:{scope}/{name}"):  # one prompt family: a provider may cache the judge prompts' start
        for it, r in zip(its, rs):
            out += await m.score(it, r, ctx)
    out += m.corpus({i.id: i for i in its}, rs, out)
    return sorted((s for s in out if keep is None or s.metric == keep), key=lambda s: s.item_id == CORPUS)


score = synchronous(ascore, "score")
"""The synchronous :func:`ascore`, with the same parameters."""
