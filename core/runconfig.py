"""Run options: :class:`RunConfig`, the one declaration of a run's options (a field's docstring is its help, its type
and default the option's), and :func:`run_options`, from which the ``sgieval ask`` options and the ``sgieval.evaluate``
keywords come."""

from __future__ import annotations

import math
import os
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticUndefined

from .errors import FieldProblem, problem_to_input_error
from .files import PLAIN_NAME
from .records import _Record


SANDBOX_BACKENDS = ("auto", "bubblewrap", "bwrap", "e2b", "unsafe-local", "local")
"""``RunConfig.sandbox`` values (``--sandbox``); ``tools.sandbox.get_sandbox`` accepts exactly these."""
TOOL_NAMES = ("search", "pdf", "python")
"""``RunConfig.tools`` names (``--tools``); the keys of ``tools.pool.TOOL_GROUPS``."""
EXECUTORS = ("local", "ray")
"""``RunConfig.executor`` values (``--executor``); ``agents.executors.EXECUTORS``."""

_UNSET: Any = object()


@dataclass(frozen=True)
class Option:
    """How one RunConfig field is spelled as a run option (``Annotated`` metadata; default: ``--<field-name>`` and the
    field name): a ``flag`` of a bool defaulting to True switches it off (``off_help`` is its help); ``cli``/``api``
    False keep it off that side; ``positional``: the ``ask`` argument and ``evaluate``'s first parameter."""

    flag: str = ""
    short: str = ""
    keyword: str = ""
    cli: bool = True
    api: bool = True
    positional: bool = False
    api_default: Any = _UNSET
    off_help: str = ""


RUN_RECORD = Option(cli=False, api=False)
"""Marks a RunConfig field the run fills (the parameters sent, the settings): no option on either side."""


@dataclass(frozen=True, kw_only=True)
class RunOption(Option):
    """One run option as both sides see it (:func:`run_options`): its :class:`Option` with ``flag``, ``keyword`` and
    ``api_default`` filled in; ``help`` is the field's docstring."""

    field: str
    help: str
    annotation: Any
    default: Any

    @property
    def cli_help(self) -> str:
        """The ``ask`` flag's help: :attr:`Option.off_help` for a switch-off flag, else :attr:`help`."""
        return " ".join(self.off_help.split()) if self.switches_off else self.help

    @property
    def scalar(self) -> Any:
        """The option's value type without ``None``, a ``Literal`` as its values' type (``int | None`` -> ``int``)."""
        t = self.annotation
        if typing.get_origin(t) in (Union, types.UnionType):
            args = [a for a in typing.get_args(t) if a is not type(None)]
            t = args[0] if len(args) == 1 else t
        return type(typing.get_args(t)[0]) if typing.get_origin(t) is Literal else t

    @property
    def is_list(self) -> bool:
        """Whether the option takes several values (repeated, or comma-separated)."""
        return typing.get_origin(self.scalar) is list

    @property
    def switches_off(self) -> bool:
        """Whether the ``ask`` flag sets a bool field whose default is True to False (``--no-cache``)."""
        return self.scalar is bool and self.default is True


def run_options(config_cls: type[BaseModel]) -> list[RunOption]:
    """The run options of ``config_cls`` (RunConfig or a subclass), in field order.

    Args:
        config_cls: a pydantic model class whose fields are run options.

    Returns:
        One :class:`RunOption` per field not marked :data:`RUN_RECORD`.

    Raises:
        TypeError: an option field without help text, or a switch-off ``ask`` flag without ``off_help``.
    """
    out = []
    for name, info in config_cls.model_fields.items():
        meta = next((m for m in info.metadata if isinstance(m, Option)), Option())
        if not (meta.cli or meta.api):
            continue
        if not (info.description or "").strip():
            raise TypeError(
                f"{config_cls.__name__}.{name} has no help text: write a docstring under the field (it is the "
                "option's help on the command line and in the Python API)"
            )
        default = info.get_default(call_default_factory=True)
        default = None if default is PydanticUndefined else default
        filled = {
            "flag": meta.flag or "--" + name.replace("_", "-"),
            "keyword": meta.keyword or name,
            "api_default": default if meta.api_default is _UNSET else meta.api_default,
        }
        help_text = " ".join(info.description.split())  # type: ignore[union-attr]
        o = RunOption(
            **{**vars(meta), **filled}, field=name, help=help_text, annotation=info.annotation, default=default
        )
        if o.switches_off and o.cli and not o.off_help.strip():
            raise TypeError(
                f"{config_cls.__name__}.{name} is switched off by its ask flag, which has no help text: give its "
                'Option an off_help saying what the flag does (e.g. "Do not use the model-call cache: ...")'
            )
        out.append(o)
    return out


def option_names(config_cls: type[BaseModel], side: Literal["cli", "api"]) -> dict[str, str]:
    """RunConfig field -> how an error names the option on ``side`` (the ``names`` of :meth:`RunConfig.checked`).

    Args:
        config_cls: the config class (:class:`RunConfig`).
        side: ``"cli"`` (``--max-concurrency``) or ``"api"`` (``max_concurrency``).

    Returns:
        field -> option name.
    """
    opts = run_options(config_cls)
    if side == "cli":
        return {o.field: o.flag for o in opts if o.cli}
    # a bool that is off by default is named as it is switched on: unsafe_local_exec=True
    return {o.field: o.keyword + "=True" * (o.scalar is bool and o.default is False) for o in opts if o.api}


MAX_JUDGE_REPEATS = 20
"""Upper bound of ``RunConfig.judge_repeats`` (each repeat is a full judge call)."""

REPEAT_JUDGE_TEMPERATURE = 0.7
"""Judge temperature of a run with ``judge_repeats`` > 1 and judge temperature 0 (test-retest agreement needs sampling)."""


PRICE_FIX = (
    "give --price MODEL=IN,OUT with IN and OUT in USD per 1M input and output tokens, e.g. openai:o1-pro=150,600"
)


def parse_price(value: str) -> tuple[str, tuple[float, float]]:
    """One price as ``--price`` takes it.

    Args:
        value: ``MODEL=IN,OUT``: IN and OUT in USD per 1M input and output tokens (finite, >= 0).

    Returns:
        (MODEL, (IN, OUT)).

    Raises:
        FieldProblem: naming the value and the form expected.
    """
    model, sep, rest = str(value).rpartition("=")
    parts = rest.split(",")
    if not sep or not model.strip() or len(parts) != 2:
        raise FieldProblem(f"not MODEL=IN,OUT: {value!r}", PRICE_FIX)
    try:
        pin, pout = float(parts[0]), float(parts[1])
    except ValueError:
        raise FieldProblem(f"prices are not numbers: {value!r}", PRICE_FIX) from None
    if not (0 <= pin < math.inf and 0 <= pout < math.inf):
        raise FieldProblem(f"prices must be finite and >= 0: {value!r}", PRICE_FIX)
    return model.strip(), (pin, pout)


_CHECKS: dict[str, tuple[Callable[[Any], bool], str, str]] = {
    "k": (
        lambda v: v >= 1,
        "must be a positive integer (number of items to sample), got {v}",
        "pass {k} 1 or more, or leave {k} out to evaluate every matching item",
    ),
    "judge_repeats": (
        lambda v: 1 <= v <= MAX_JUDGE_REPEATS,
        f"must be an integer from 1 to {MAX_JUDGE_REPEATS} (times each judge is asked per item), got {{v}}",
        "pass {judge_repeats} 2 or more for test-retest agreement, or leave it out to ask each judge once",
    ),
    "max_concurrency": (
        lambda v: v >= 1,
        "must be a positive integer (model calls in flight), got {v}",
        "pass {max_concurrency} 1 or more (default 16)",
    ),
    "timeout_s": (
        lambda v: 0 < v < math.inf,  # NaN fails too
        "must be a positive number of seconds, got {v}",
        "pass {timeout_s} greater than 0 (default 300)",
    ),
    "budget_usd": (
        lambda v: v >= 0,  # NaN fails too
        "must be >= 0 USD, got {v}",
        "pass a non-negative amount in USD, or leave {budget_usd} out for no limit",
    ),
    "sandbox": (
        lambda v: v.lower() in SANDBOX_BACKENDS,
        "unknown sandbox backend {r}",
        f"use one of {', '.join(SANDBOX_BACKENDS)}",
    ),
    "executor": (lambda v: v in EXECUTORS, "unknown executor {r}", f"use one of {', '.join(EXECUTORS)}"),
    "run_id": (  # one plain folder name: a shared config.json may say "../victim"
        lambda v: PLAIN_NAME.fullmatch(v) is not None and ".." not in v,
        "run_id {r} is not a plain name (letters, digits, '.', '_', '-'; no '/' or '..')",
        "use a run id such as 20260101-120000-chemistry-ab12cd34",
    ),
}
"""Field -> (whether a value is in range, the problem with ``{v}``/``{r}`` for the value/its repr, the fix)."""


class RunConfig(_Record):
    """Everything that defines a run; printed in the report header. Each field is an ``sgieval ask`` option and an
    ``sgieval.evaluate`` keyword, its docstring the help of both; the :data:`RUN_RECORD` fields are filled by the run."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    request: Annotated[str, Option(positional=True)] = ""
    """The question, in plain language. Empty: evaluate everything."""
    models: Annotated[list[str], Option(short="-m")] = Field(default_factory=list)
    """Target models (comma-separated or repeated): replay:<name|path>, openai:<model>, local:smollm2,
    provider:model. Default for SciAidanBench: every stored model."""
    judges: Annotated[list[str], Option(flag="--judge", short="-j", keyword="judge")] = Field(default_factory=list)
    """Judge model(s). Default: none (judge metrics are reported as not run)."""
    agent_model: str | None = None
    """Planning model for the agents. Default: offline agent paths."""
    benchmarks: Annotated[list[str], Option(flag="--benchmark", short="-b", keyword="benchmark")] = Field(
        default_factory=list
    )
    """sciaidanbench, sgi-bench, sfbench, a .jsonl path or a .yaml benchmark definition (repeatable). Default:
    every benchmark with data."""
    k: int | None = None
    """Number of items (stratified sample). Default: all matches."""
    seed: int = 0
    """Random seed of the item sample and the bootstrap CIs."""
    run_id: Annotated[str, Option(cli=False)]
    """The run's id and folder name (default: the start time and the request's first words)."""
    base_url: str | None = None
    """Base URL of the OpenAI-compatible server of openai: models (default $OPENAI_BASE_URL); a model on a server
    of its own is openai-api:<service>/<model> with <SERVICE>_BASE_URL set."""
    data_dir: str | None = None
    """Data folder, the only one looked in when given (default: $SGIEVAL_DATA, else ../shared/data, then the user
    cache)."""
    out_dir: Annotated[str, Option(flag="--out")] = "runs"
    """Folder for run folders."""
    tools: list[str] = Field(default_factory=lambda: ["search", "pdf", "python"])
    """Tool pool for agents and judges: comma-separated search, pdf, python (empty: none)."""
    sandbox: str = "auto"
    """auto | bubblewrap (bwrap) | e2b | unsafe-local (with --unsafe-local-exec)"""
    unsafe_local_exec: bool = False
    """Run model code without a sandbox (stated in the report)."""
    allow_self_judge: bool = False
    """Let a judge score its own responses (off by default: a judge that is also a target skips them; the
    report says so)."""
    yes: Annotated[bool, Option(short="-y", api_default=True)] = False
    """Do not pause to confirm the metrics."""
    dry_run: bool = False
    """Stop after the estimate: print, per model and role, the calls, input and output tokens and USD the run
    would take, make no target or judge call, and keep no run folder (exit 0)."""
    max_concurrency: int = 16
    """Model calls in flight (>= 1)."""
    use_cache: Annotated[
        bool,
        Option(
            flag="--no-cache",
            off_help="Do not use the model-call cache: every call goes to the model and nothing is stored.",
        ),
    ] = True
    """Use the model-call cache (False: every call goes to the model and nothing is stored)."""
    budget_usd: Annotated[float | None, Option(flag="--budget")] = None
    """Stop cleanly when this many USD are spent (every model called needs a known price: genai-prices' list
    price of its exact name, or --price)."""
    prices: Annotated[list[str], Option(flag="--price")] = Field(default_factory=list)
    """Price of a model as MODEL=IN,OUT, USD per 1M input and output tokens (repeatable), used instead of the
    list price of genai-prices; needed for --budget with a model it does not list."""
    metric: str | None = None
    """The ranking metric: a predefined metric, a variant (e.g. exact_match_normalised) or a saved rubric. Default: the
    metric the request names, else the one measuring the quality it asks about, else the benchmark's primary metric."""
    rank_all: Annotated[bool, Option(flag="--all")] = False
    """Rank every item the request's understood words select even when other words of it match no facet,
    quality, metric or model (without it such a request stops, saying what was understood)."""
    timeout_s: Annotated[float, Option(flag="--timeout", keyword="timeout")] = 300.0
    """Seconds one attempt of a model call may take (default 300); the attempts of one call together get at
    most twice this (10 minutes by default), then the call is recorded as failed with its reason."""
    corpus: str | None = None
    """Folder of papers (PDF, Markdown, text, JSONL) searched offline by the retrieval-novelty metric (every paper
    ranked by embedding similarity fused with BM25) and by web_search (BM25) ("novel compared with my papers")."""
    recheck: bool = False
    """Re-decide the stored SciAidanBench acceptances with this run's embedder (MiniLM) and report the
    agreement with the stored text-embedding-3-large decisions."""
    judge_repeats: int = 1
    """Ask each judge this many times per judged item (1-20; 2 or more: test-retest agreement per judge in the Judge
    reliability section; a judge temperature of 0 becomes 0.7). The score uses each judge's mean over its repeats."""
    executor: str = "local"
    """local | ray"""
    bootstrap_resamples: int = 10000
    """Resamples of the bootstrap confidence intervals."""
    until_settled: bool = False
    """Evaluate the items in a seeded random order, in chunks, and stop as soon as the ranking metric's leader is ahead
    of every other model by an anytime-valid 95% confidence sequence (hedged-capital betting CS of Waudby-Smith & Ramdas
    2023, sampling without replacement, Bonferroni over the K-1 comparisons; needs a bounded per-item ranking metric and
    two or more targets); the report states the items used, the calls saved and the intervals."""
    into: str | None = None
    """Add to an existing run (its id under --out, or its folder): the given target models, judge(s) or ranking
    metric join the run's; every response and score already there is reused (no call, no score recomputed), and
    the report is rewritten. An added judge scores the run's judge and rubric metrics on the stored responses
    beside the run's judges (the ranking stays on the run's judges); the run's items stay."""
    temperature: float | None = Field(default=0.0, ge=0.0, le=2.0)
    """Sampling temperature of the target models (0-2; families that reject it, e.g. o-series, gpt-5,
    deepseek-reasoner, do not get it)."""
    judge_temperature: float | None = Field(default=0.0, ge=0.0, le=2.0)
    """Sampling temperature of the judges (0-2; same family rules)."""
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high"] | None = None
    """none | minimal | low | medium | high, sent to reasoning models (default: not sent)."""
    batch: bool = False
    """Send the target and judge calls through the provider's batch API (OpenAI files + batches, Anthropic
    message batches) at the batch price (half the list price), waiting for each batch; a killed run resumes
    polling its batches and submits nothing twice. Other providers are refused before any call."""
    added_judges: Annotated[list[str], RUN_RECORD] = Field(default_factory=list)
    """Judges added to the finished run by ``ask --into RUN --judge J``: each scores the run's judge and rubric
    metrics on the stored responses into ``added_judge_scores.jsonl``, beside the run's own judges (``judges``),
    whose scores the ranking, the Answer and the tables keep using (filled by the run)."""
    sent_params: Annotated[dict[str, dict[str, Any]], RUN_RECORD] = Field(default_factory=dict)
    """Model -> the sampling parameters actually sent (filled by the run)."""
    dropped_params: Annotated[dict[str, dict[str, str]], RUN_RECORD] = Field(default_factory=dict)
    """Model -> parameter -> why it was not sent (filled by the run)."""
    settings: Annotated[dict[str, Any], RUN_RECORD] = Field(default_factory=dict)
    """The ``SGIEVAL_*`` settings the run started with (``Settings.shown()``: secrets masked); filled at the start."""

    @field_validator("models", "judges", "benchmarks", "tools", mode="before")
    @classmethod
    def _comma_lists(cls, v: Any) -> Any:
        """A list option from a string or sequence, each string split at commas (``""`` -> none); paths as strings."""
        if isinstance(v, (str, os.PathLike)):
            v = [v]
        if isinstance(v, (list, tuple)):
            return [s.strip() for x in v for s in os.fspath(x).split(",") if s.strip()]
        return v

    @field_validator("prices", mode="before")
    @classmethod
    def _price_list(cls, v: Any) -> Any:
        """``--price`` values (a string, strings, or a dict ``{model: (IN, OUT)}``) as checked ``MODEL=IN,OUT`` strings."""
        if isinstance(v, str):
            v = [v]
        if isinstance(v, dict):
            try:
                v = [f"{m}={float(p[0])},{float(p[1])}" for m, p in v.items()]
            except (TypeError, ValueError, IndexError, KeyError):
                raise FieldProblem(f"not a map of model -> (IN, OUT): {v!r}", PRICE_FIX) from None
        if isinstance(v, (list, tuple)):
            for x in v:
                parse_price(x)
            return [str(x).strip() for x in v]
        return v

    def price_table(self) -> dict[str, tuple[float, float]]:
        """The run's ``--price`` values as a table, later values winning.

        Returns:
            {model: (USD per 1M input tokens, USD per 1M output tokens)}.
        """
        return dict(parse_price(x) for x in self.prices)

    @field_validator("data_dir", "out_dir", "corpus", "into", mode="before")
    @classmethod
    def _path_text(cls, v: Any, info: ValidationInfo) -> Any:
        """A folder option given as a path is kept as its text; "" for an optional folder is none."""
        v = os.fspath(v) if isinstance(v, os.PathLike) else v
        return None if v == "" and info.field_name != "out_dir" else v

    @field_validator("corpus")
    @classmethod
    def _absolute_corpus(cls, v: str | None) -> str | None:
        """The corpus folder as an absolute path, so ``resume`` and ``report`` find it from any folder."""
        return str(Path(v).expanduser().resolve()) if v else None

    @field_validator("benchmarks")
    @classmethod
    def _absolute_benchmark_files(cls, v: list[str]) -> list[str]:
        """A benchmark given as an existing file's path is kept absolute, so ``resume`` and ``report`` work anywhere."""
        files = (".jsonl", ".json", ".parquet", ".yaml", ".yml")
        return [str(p.resolve()) if (p := Path(b).expanduser()).suffix in files and p.is_file() else b for b in v]

    @classmethod
    def checked(cls, names: dict[str, str] | None = None, **fields: Any) -> "RunConfig":
        """A validated RunConfig: the one validation path of the CLI and the Python API.

        Args:
            names: field -> how the caller spells the option; default the field name.
            fields: the RunConfig fields.

        Returns:
            The config.

        Raises:
            InputError: naming the option as the caller spells it, with the reason and the fix.
        """
        try:
            return cls(**fields)
        except ValidationError as e:
            raise problem_to_input_error(e, names, default_what="options") from None

    @field_validator(*_CHECKS)
    @classmethod
    def _in_range(cls, v: Any, info: ValidationInfo) -> Any:
        """The checks of :data:`_CHECKS`: a value outside its range names the value and the fix."""
        ok, problem, fix = _CHECKS[str(info.field_name)]
        if v is not None and not ok(v):
            raise FieldProblem(problem.format(v=v, r=repr(v)), fix)
        return v

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, v: list[str]) -> list[str]:
        unknown = [t for t in v if t.lower() not in TOOL_NAMES]
        if unknown:
            raise FieldProblem(
                f"unknown tool(s) {', '.join(map(repr, unknown))}",
                f"give a comma-separated list of {', '.join(TOOL_NAMES)} (e.g. {{tools}} search,pdf)",
            )
        return v

    @model_validator(mode="after")
    def _across_fields(self) -> "RunConfig":
        """The unsafe local backend needs its consent; repeated judges at temperature 0 sample at 0.7."""
        if self.sandbox.lower() in ("unsafe-local", "local") and not self.unsafe_local_exec:
            raise FieldProblem(
                "the unsafe local backend runs model code without isolation",
                "add {unsafe_local_exec} to allow it explicitly",
                field="sandbox",
                value=self.sandbox,
            )
        if self.judge_repeats > 1 and self.judge_temperature == 0.0:
            self.judge_temperature = REPEAT_JUDGE_TEMPERATURE
        return self
