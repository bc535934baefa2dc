"""The Python API: run sgieval from code (:func:`evaluate`, the graph of ``sgieval ask``) and get the run's records
back (:class:`RunRecords`, :func:`load_run`); compare runs, read human-label agreement; and the LangGraph Studio
factories of ``langgraph.json`` (:func:`evaluation_graph`, :func:`metric_chat_graph`)."""

from __future__ import annotations

import hashlib
import inspect
import shutil
import typing
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Sequence, TypedDict, Union, Unpack

from .core import InputError, Item, Label, MetricSpec, Response, RunConfig, RunStore, Score, json_loads_strict
from .core import option_names, read_bytes_in, read_text_in, run_options
from .models import NamedModel, Role, resolve_model, sampling_for_role
from .scoring import MetricArg, ModelArg, Models, ascore, score, split_models, synchronous

__all__ = [
    "MetricArg",
    "RunOptions",
    "RunRecords",
    "aevaluate",
    "agreement",
    "ascore",
    "compare",
    "config_from",
    "evaluate",
    "load_run",
    "options_signature",
    "ppi",
    "run_metric_specs",
    "score",
]


class RunOptions(TypedDict, total=False):
    """The run options of :func:`evaluate` as typed keywords, one per RunConfig field (a type may be wider here)."""

    models: Models
    judge: Models
    agent_model: ModelArg | None
    benchmark: str | Path | Sequence[str | Path] | None
    k: int | None
    seed: int
    run_id: str | None
    base_url: str | None
    data_dir: str | Path | None
    out_dir: str | Path
    tools: str | Sequence[str]
    sandbox: str
    unsafe_local_exec: bool
    allow_self_judge: bool
    yes: bool
    dry_run: bool
    max_concurrency: int
    use_cache: bool
    budget_usd: float | None
    metric: str | None
    rank_all: bool
    prices: list[str] | dict[str, tuple[float, float]]
    timeout: float
    corpus: str | Path | None
    recheck: bool
    judge_repeats: int
    executor: str
    bootstrap_resamples: int
    temperature: float | None
    judge_temperature: float | None
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high"] | None
    batch: bool
    until_settled: bool
    into: str | Path | None


@dataclass
class RunRecords:
    """What a run produced: its records (values on each metric's native scale); ``report`` is None when the run stopped
    at the metric confirmation (then ``stopped``); ``state`` is the final graph state."""

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
    config: RunConfig | None = None
    estimate: dict[str, Any] | None = None
    """The estimate before calls (:class:`sgieval.models.estimate.Estimate`)."""
    labels: list[Label] = field(default_factory=list)
    """The human labels of ``labels.jsonl`` in file order (the latest per unit and labeller counts)."""
    added_judge_scores: list[Score] = field(default_factory=list)
    """Scores of judges added to the finished run (``evaluate(judge=J, into=run)``)."""

    def values(self, metric: str, model: str | None = None) -> list[Score]:
        """The ok item-level Scores of ``metric``.

        Args:
            metric: a metric name of the run.
            model: one target model's name; None: every target model.

        Returns:
            The Scores, in record order.
        """
        return [
            s
            for s in self.scores
            if s.metric == metric and s.ok and s.item_id != "*" and (model is None or s.model == model)
        ]

    def totals(self, metric: str) -> dict[str, float]:
        """Sum of ``metric`` over the selected items per target model (ok scores only).

        Args:
            metric: a metric name of the run.

        Returns:
            Target model -> total, on the metric's native scale.
        """
        out: dict[str, float] = {}
        for s in self.values(metric):
            out[s.model] = out.get(s.model, 0.0) + float(s.value or 0.0)  # ok scores have a value
        return out

    def means(self, metric: str) -> dict[str, float]:
        """Mean of ``metric`` per item per target model (ok scores only).

        Args:
            metric: a metric name of the run.

        Returns:
            Target model -> mean, on the metric's native scale (``MetricSpec.range``).
        """
        n = Counter(s.model for s in self.values(metric))
        return {m: t / n[m] for m, t in self.totals(metric).items()}

    def to_pandas(self, records: Literal["scores", "responses", "items"] = "scores"):
        """The records as a ``pandas.DataFrame``, one row per record.

        Args:
            records: ``"scores"`` or ``"responses"`` (plus the item's facets) or ``"items"``.

        Returns:
            The table.

        Raises:
            InputError: for another ``records`` value.
        """
        import pandas as pd

        facets = ("benchmark", "task", "discipline", "direction", "type")
        if records == "items":
            return pd.DataFrame([i.model_dump() for i in self.items], columns=list(Item.model_fields))
        if records not in ("scores", "responses"):
            raise InputError(
                f"unknown records {records!r}", what="to_pandas", fix="use 'scores', 'responses' or 'items'"
            )
        rows_of, cls = (self.scores, Score) if records == "scores" else (self.responses, Response)
        by_id = {i.id: i for i in self.items}
        rows = [{**r.model_dump(), **{f: getattr(by_id.get(r.item_id), f, "") for f in facets}} for r in rows_of]
        return pd.DataFrame(rows, columns=[*cls.model_fields, *facets])


def _resolve(strings: list[str], objects: list[NamedModel], role: Role, config: RunConfig) -> list[NamedModel] | None:
    """None when only strings were given (make_runtime resolves them); else every model as a NamedModel."""
    if not objects:
        return None
    from .agents import resolve_run_model

    return [
        resolve_run_model(
            s, role, base_url=config.base_url, data_dir=config.data_dir, **sampling_for_role(config, role)
        )
        for s in strings
    ] + objects


def options_signature(config_cls: type[RunConfig], afn: Callable[..., Any]) -> inspect.Signature:
    """The signature :func:`evaluate` shows: ``request``, one keyword per run option, then ``afn``'s keyword-only ones.

    Args:
        config_cls: RunConfig or a subclass.
        afn: the function whose own keyword-only parameters follow the run options.

    Returns:
        The signature, without ``**options``.
    """
    types_ = typing.get_type_hints(RunOptions)
    params = [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, default="", annotation=str)]
    for o in run_options(config_cls):
        if o.api and not o.positional:
            default = None if o.field == "run_id" else o.api_default
            kw_type = types_.get(o.keyword, o.annotation)
            params.append(
                inspect.Parameter(o.keyword, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kw_type)
            )
    options = {p.name for p in params} | set(types_)  # afn's signature may already be this one
    own = [p for p in inspect.signature(afn).parameters.values() if p.kind is p.KEYWORD_ONLY and p.name not in options]
    return inspect.Signature([*params, *own], return_annotation=inspect.signature(afn).return_annotation)


def config_from(
    config_cls: type[RunConfig], request: str, options: dict[str, Any], *, function: str = "evaluate"
) -> tuple[RunConfig, list[NamedModel], list[NamedModel], NamedModel | None]:
    """The validated run configuration of ``evaluate(request, **options)`` and the model objects given.

    Args:
        config_cls: RunConfig or a subclass.
        request: the question in plain language.
        options: run-option keywords (:class:`RunOptions`).
        function: the function named in a TypeError.

    Returns:
        (config, target model objects, judge model objects, agent model object or None).

    Raises:
        TypeError: a keyword that is no run option.
        InputError: a bad value, naming the keyword and the fix.
    """
    from .graphs import new_run_id

    by_keyword = {o.keyword: o for o in run_options(config_cls) if o.api and not o.positional}
    for name in options:
        if name not in by_keyword:
            raise TypeError(f"{function}() got an unexpected keyword argument {name!r}")
    fields = {o.field: options[kw] if kw in options else o.api_default for kw, o in by_keyword.items()}
    fields["models"], t_obj = split_models(fields.get("models"))
    fields["judges"], j_obj = split_models(fields.get("judges"))
    agent_model = fields.get("agent_model")
    if agent_model is not None and not isinstance(agent_model, (str, NamedModel)):
        raise InputError(
            f"agent_model {agent_model!r} is neither a model string nor a NamedModel",
            what="agent_model",
            fix="pass a model string such as 'openai:gpt-4.1-mini', a NamedModel, or None (offline agents)",
        )
    fields["agent_model"] = agent_model if isinstance(agent_model, str) else None
    fields["run_id"] = fields.get("run_id") or new_run_id(request)
    config = config_cls.checked(option_names(config_cls, "api"), request=request, **fields)
    return config, t_obj, j_obj, agent_model if isinstance(agent_model, NamedModel) else None


async def aevaluate(
    request: str = "",
    *,
    confirm: Callable[[dict], bool] | None = None,
    metric_options: dict[str, Any] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    tools_pool: Any = None,
    sandbox_backend: Any = None,
    **options: Unpack[RunOptions],
) -> RunRecords:
    """Run the evaluation graph of ``sgieval ask`` on ``request``; :func:`evaluate` is the synchronous form.

    Args:
        request: the question in plain language ("" = the whole catalog).
        confirm: ``confirm(payload) -> bool`` answers the metric confirmation when ``yes=False`` (without it the run
            stops there, ``stopped=True``) and a misspelt request word first (payload ``{"kind": "did_you_mean",
            "question", "request"}``: True runs the corrected request, False raises the InputError).
        metric_options: options handed to the metrics (name -> value).
        on_progress: progress callback ``(done, total)``, in units of work.
        tools_pool, sandbox_backend: a ready ToolPool and Sandbox instead of the ones the options name.
        **options: the run options (below); ``models``, ``judge`` and ``agent_model`` also take NamedModel objects.

    Returns:
        The run's records.

    Raises:
        InputError: bad input (option value, model string, missing data, a request selecting nothing), with the fix.
        TypeError: an unknown keyword.
    """
    from .graphs import execute, into_run, make_runtime

    config, t_obj, j_obj, agent_obj = config_from(RunConfig, request, dict(options), function="aevaluate")
    run_dir = None
    if config.into:  # add to an existing run: its config with this call's additions, in its folder
        by_keyword = {o.keyword: o.field for o in run_options(RunConfig) if o.api}
        given = [by_keyword[k] for k in options if k in by_keyword and k != "into"]
        given += ["models"] * bool(t_obj) + ["judges"] * bool(j_obj) + ["request"] * bool(request)
        config, run_dir = await into_run(config, given, side="api")
    yes = config.yes
    rt = make_runtime(
        config,
        run_dir=run_dir,
        invocation_kind="into" if run_dir is not None else "",
        read_only=run_dir is not None and config.dry_run,  # an --into dry run reads the run folder only
        targets=_resolve(list(config.models), t_obj, "target", config),
        judges=_resolve(list(config.judges), j_obj, "judge", config),
        option_names=option_names(RunConfig, "api"),
        agent=agent_obj,
        metric_options=dict(metric_options or {}),
        on_progress=on_progress,
        tools=tools_pool,
        sandbox=sandbox_backend,
    )
    state = await execute(rt, confirm=confirm if confirm is not None else (lambda payload: True) if yes else None)
    targets = set(state.get("targets") or [])
    records = _run_records(
        rt.store,
        config,
        state,
        keep=lambda rs: [r for r in rs if not targets or r.model in targets],
        report=Path(state["report"]) if state.get("report") else None,
        stopped="__interrupt__" in state or state.get("confirmed") is False or not state.get("report"),
        estimate=state.get("estimate") or rt.estimate,
    )
    if config.dry_run and rt.store.created and not rt.store.read("responses"):
        rt.store.close()  # as `sgieval ask --dry-run`: no run folder kept (a folder this call did not make stays)
        shutil.rmtree(rt.store.root, ignore_errors=True)
    return records


def _run_records(
    store: RunStore, config: RunConfig, state: dict[str, Any], keep: Callable[[list], list] = list, **more: Any
) -> RunRecords:
    """The records of ``store``'s run in ``state`` (items of its selection; ``keep`` filters responses and scores)."""
    ids = set((state.get("selection") or {}).get("item_ids") or [])
    items = store.read("items")
    return RunRecords(
        run_id=config.run_id,
        run_dir=store.root,
        items=[i for i in items if i.id in ids] if ids else items,
        responses=keep(store.read("responses")),
        scores=keep(store.read("scores")),
        added_judge_scores=keep(store.read("added_judge_scores")),
        selection=dict(state.get("selection") or {}),
        metric_plan=dict(state.get("metric_plan") or {}),
        state=dict(state),
        config=config,
        **more,
    )


aevaluate.__signature__ = options_signature(RunConfig, aevaluate)  # type: ignore[attr-defined]
aevaluate.__doc__ = (
    (aevaluate.__doc__ or "")
    + "\n    Run options:\n"
    + "".join(f"        {o.keyword}: {o.help}\n" for o in run_options(RunConfig) if o.api and not o.positional)
)

evaluate = synchronous(aevaluate, "evaluate")
"""The synchronous :func:`aevaluate` (in a worker thread inside a running event loop)."""


# ------------------------------------------------------------------ load_run
def load_run(path: str | Path) -> RunRecords:
    """The records of a finished (or stopped) run folder, as :func:`evaluate` returns them.

    Args:
        path: the run folder, or a file in it (its ``report.md`` or ``config.json``).

    Returns:
        The records; ``selection``, ``metric_plan`` and ``state`` from the last checkpoint (empty without one).

    Raises:
        InputError: when ``path`` holds no run (no ``config.json``) or its config is unreadable.
    """
    p = Path(path).expanduser()
    root = p if (p / "config.json").is_file() else p.parent if (p.parent / "config.json").is_file() else None
    if root is None:
        raise InputError(
            "no run here (no config.json)", what=str(p), fix="give a run folder (runs/<run_id>) or its report.md"
        )
    store = RunStore(root, read_only=True)  # a run folder is data: nothing in it is made or changed
    try:
        config = store.read_config()
    except (ValueError, OSError) as e:
        raise InputError(
            f"unreadable run config ({str(e).splitlines()[0]})",
            what=str(root / "config.json"),
            fix="restore the file, or start a new run",
        ) from e
    from .graphs import read_state

    state = read_state(root / "state.sqlite", config.run_id)  # {} without a checkpoint
    report = root / "report.md"
    return _run_records(
        store,
        config,
        state,
        labels=store.read("labels"),
        report=report if report.is_file() else None,
        stopped=not report.is_file(),
    )


# ------------------------------------------------------------------- compare
RunArg = Union[str, Path, RunRecords]
"""A run: its folder (or a file in it) or the :class:`RunRecords` of :func:`load_run`."""


def _compare_input(records: RunRecords, label: str) -> Any:
    """The ``RunInput`` of a loaded run, labelled ``label``."""
    from .agents import RunInput
    from .reports import additions_text, read_run

    report: dict[str, Any] = {}
    try:
        r = json_loads_strict(read_text_in(records.run_dir, records.run_dir / "report.json"))
        report = r if isinstance(r, dict) else {}
    except FileNotFoundError:
        pass
    except (ValueError, OSError) as e:
        raise InputError(
            f"unreadable report data ({e})",
            what=str(records.run_dir / "report.json"),
            fix=f"re-render it with `sgieval report {records.run_dir}`",
        ) from e
    specs = {
        d["name"]: (bool(d.get("hib", True)), str(d.get("scale", "")))
        for d in report.get("metric_specs") or []
        if isinstance(d, dict) and isinstance(d.get("name"), str)
    }
    if not specs:  # a run reported before report.json listed its metrics, or not reported yet
        specs = {n: (s.higher_is_better, s.scale_label) for n, s in run_metric_specs(records).items()}
    header = report["header"] if isinstance(report.get("header"), dict) else {}
    primary = str(records.metric_plan.get("primary") or header.get("primary") or "")
    entry = read_run(records.run_dir)
    models = [str(m) for m in records.state.get("targets") or []]
    if not models:
        models = list(dict.fromkeys([*(r.model for r in records.responses), *(s.model for s in records.scores)]))
    return RunInput(
        run_id=label,
        path=records.run_dir,
        config=records.config or RunConfig(run_id=records.run_id),
        items=records.items,
        scores=records.scores,
        models=models,
        primary=primary,
        specs=specs,
        metric_plan=dict(records.metric_plan),
        started=entry.started,
        added=additions_text(entry.added, judges=False),
        added_judges=additions_text(entry.added, judges=True),
        rubrics=_rubric_versions(records.run_dir),
    )


def _rubric_versions(run_dir: Path) -> dict[str, str]:
    """``rubrics/*.yaml`` of a run folder -> the SHA-256 (hex) of each file's bytes."""
    found = sorted((run_dir / "rubrics").glob("*.yaml"))  # none without the folder
    return {p.name: hashlib.sha256(read_bytes_in(run_dir, p)).hexdigest() for p in found}


def compare(*runs: RunArg, metric: str | None = None, n_resamples: int = 10000, seed: int = 0) -> Any:
    """Compare finished runs: items matched by id, models by name. The same model in two runs gets, per shared metric,
    the mean difference (second minus first) with its 95% paired bootstrap CI and a two-sided paired permutation test
    (:func:`sgieval.metric_pool.stats.paired_test`); all models are ranked together on the items every run shares.

    Args:
        *runs: two or more runs (folders, files in them, or :class:`RunRecords`), the first the baseline.
        metric: the ranking metric (default: the first one every run scored).
        n_resamples: resamples of the permutation tests and bootstrap CIs.
        seed: their random seed.

    Returns:
        :class:`sgieval.reports.compare.Comparison` (``to_markdown()``, ``to_pandas(table)``, ``write(folder)``).

    Raises:
        InputError: fewer than two runs, the same run twice, no run at a path, no shared item, or a ranking metric
            not scored in every run.
    """
    from .agents import compare_runs

    loaded = [r if isinstance(r, RunRecords) else load_run(r) for r in runs]
    seen: dict[Path, int] = {}
    labels: list[str] = []
    for k, rec in enumerate(loaded):
        where = Path(rec.run_dir).resolve()
        if where in seen:  # every model would be compared with itself: "no change" by construction
            raise InputError(
                f"the same run is given twice (runs {seen[where] + 1} and {k + 1})",
                what=str(rec.run_dir),
                fix="give two different runs (e.g. the run before and after a change; `sgieval runs` lists them)",
            )
        seen[where] = k
        label, n = (rec.run_id if rec.run_id not in labels else rec.run_dir.name), 2
        while label in labels:
            label, n = f"{rec.run_dir.name}#{n}", n + 1
        labels.append(label)
    inputs = [_compare_input(rec, lab) for rec, lab in zip(loaded, labels)]
    return compare_runs(inputs, metric=metric, n_resamples=n_resamples, seed=seed)


# -------------------------------------------------------------------- labels
def run_metric_specs(records: RunRecords) -> dict[str, MetricSpec]:
    """The specs of the metrics a run applied, by name; no model is resolved.

    Args:
        records: the run (:func:`load_run`).

    Returns:
        {metric name: MetricSpec}; {} when the run has not chosen its metrics.

    Raises:
        InputError: when the run's items are neither stored in the run nor in the benchmark files.
    """
    from .graphs import make_runtime, metric_specs

    if records.config is None:
        return {}
    config = records.config.model_copy(update={"agent_model": None})
    rt = make_runtime(config, run_dir=records.run_dir, targets=[], judges=[], read_only=True)
    return {s.name: s for s in metric_specs(rt, records.state)}


def _label_estimates(run: "str | Path | RunRecords", metric: str, selection: str | None) -> Any:
    from .metric_pool import label_estimates

    records = run if isinstance(run, RunRecords) else load_run(run)
    specs = run_metric_specs(records)
    if metric not in specs:
        raise InputError(
            f"the run has no metric {metric!r}",
            what=str(records.run_dir),
            fix=f"use one of {', '.join(sorted(specs)) or '(none: the run has not chosen its metrics)'}",
        )
    return label_estimates(records.scores, records.labels, specs[metric], selection=selection)


def agreement(run: "str | Path | RunRecords", metric: str, *, selection: str | None = None) -> Any:
    """How each judge (and the panel) agrees with the run's human labels on ``metric``.

    Args:
        run: a run folder (or a file in it) or its :class:`RunRecords`.
        metric: the metric name (a rubric's criteria are included).
        selection: ``random`` or ``disagreement``; None: ``disagreement`` when any label was drawn so.

    Returns:
        :class:`sgieval.metric_pool.labels.AgreementResult` (per judge and criterion; ``to_pandas()``).

    Raises:
        InputError: no run there, or the run has no metric ``metric``.
    """
    return _label_estimates(run, metric, selection).agreement()


def ppi(run: "str | Path | RunRecords", metric: str, *, selection: str | None = None) -> Any:
    """Prediction-powered means of ``metric`` per target model from the run's human labels and judge scores.

    Args:
        run: a run folder (or a file in it) or its :class:`RunRecords`.
        metric: the metric name.
        selection: as for :func:`agreement`.

    Returns:
        :class:`sgieval.metric_pool.labels.LabelEstimates`: PPI++, judge-only and labels-only means with 95% intervals.

    Raises:
        InputError: no run there, or the run has no metric ``metric``.
    """
    return _label_estimates(run, metric, selection)


# ------------------------------------------------------------- LangGraph Studio
def _configurable(config: Any) -> dict[str, Any]:
    return dict(config.get("configurable") or {}) if isinstance(config, dict) else {}


def evaluation_graph(config: Any = None):
    """LangGraph Studio factory for the evaluation graph: ``config["configurable"]`` may hold RunConfig fields; the
    graph has no checkpointer (the LangGraph server provides one)."""
    from .graphs import build_graph, make_runtime, new_run_id

    c = _configurable(config)
    fields = {k_: v for k_, v in c.items() if k_ in RunConfig.model_fields and k_ != "run_id"}
    cfg = RunConfig(run_id=c.get("run_id") or new_run_id(fields.get("request", "")), **fields)
    return build_graph(make_runtime(cfg))


def metric_chat_graph(config: Any = None):
    """LangGraph Studio factory for the chat of ``sgieval metric define``: ``config["configurable"]`` may carry
    ``agent_model`` (default: offline drafting), ``base_url``, ``name`` and ``save_dir``."""
    from .graphs import build_metric_chat

    c = _configurable(config)
    agent = resolve_model(c["agent_model"], "agent", base_url=c.get("base_url")) if c.get("agent_model") else None
    return build_metric_chat(agent=agent, name=c.get("name"), save_dir=c.get("save_dir"))
