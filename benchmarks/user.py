r"""A user benchmark written as a small YAML definition (``sgieval ask -b my.yaml``; paths relative to the YAML)::

    name: capitals                      # required: the benchmark name (Item.benchmark)
    files: [capitals.jsonl]             # required: generic-JSONL files (sgieval.benchmarks.jsonl)
    description: Capital cities of Europe
    prompt: "Answer with the city only.\n{prompt}"  # template over {prompt} and metadata; default "{prompt}"
    facets: {task: qa, discipline: geography}   # defaults for records without them
    metrics: [exact_match, exact_match_normalised]  # reference metrics or rubrics (need --judge); default these two
    primary: exact_match                # default the first metric
    vocabulary:                         # request words for the offline questioning agent
      {names: ["capitals?"], disciplines: {geography: [geography]}, words: {geography: ["geograph\w*"]}, tasks: {}}

Items get ``id = "<name>/<record id>"``; the record's own prompt stays in ``metadata["question"]``; ``facets`` fill a
task left ``generic`` and empty discipline, direction and type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..core import GENERIC, DataNotFoundError, InputError, Item, load_yaml
from ..metric_pool import Metric, NumericMatch, ReferenceMatch, RubricMetric, load_rubric, metric, unregister_scope
from .base import Benchmark, Vocabulary
from .jsonl import input_error_from_validation, load_jsonl

DEFAULT_METRICS = ("exact_match", "exact_match_normalised")
REFERENCE_METRICS = ("exact_match", "exact_match_normalised", "numeric_match")


class VocabularySpec(BaseModel):
    """The ``vocabulary`` block (:class:`~sgieval.benchmarks.base.Vocabulary`, lists for tuples)."""

    model_config = ConfigDict(extra="forbid")

    names: list[str] = Field(default_factory=list, description="a list of patterns naming the benchmark")
    disciplines: dict[str, list[str]] = Field(
        default_factory=dict, description="a mapping concept -> list of discipline values"
    )
    words: dict[str, list[str]] = Field(default_factory=dict, description="a mapping concept -> list of patterns")
    tasks: dict[str, list[str]] = Field(default_factory=dict, description="a mapping task -> list of patterns")


class BenchmarkSpec(BaseModel):
    """A YAML benchmark definition (module docstring)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="a benchmark name such as capitals")
    description: str = Field(default="", description="a string")
    files: list[str] = Field(min_length=1, description="a list of JSONL file paths (relative to the YAML file)")
    prompt: str = Field(default="{prompt}", description="a template string containing {prompt}")
    facets: dict[str, str] = Field(
        default_factory=dict, description="a mapping with some of task, discipline, direction, type"
    )
    metrics: list[str] = Field(
        default_factory=lambda: list(DEFAULT_METRICS),
        description="a list of metric names (exact_match, exact_match_normalised, numeric_match, rubric names)",
    )
    primary: str | None = Field(default=None, description="one of the listed metrics")
    vocabulary: VocabularySpec = Field(default_factory=VocabularySpec, description="a mapping (see the README)")

    @field_validator("files", mode="before")
    @classmethod
    def _one_file(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("facets")
    @classmethod
    def _facets(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [k for k in v if k not in ("task", "discipline", "direction", "type")]
        if bad:
            raise ValueError(f"unknown facet {bad[0]!r} (facets: task, discipline, direction, type)")
        return v


def _fill(template: str, item: Item, where: str) -> str:
    fields = {k: v for k, v in item.metadata.items() if isinstance(k, str)}
    fields["prompt"] = item.metadata.get("question", item.prompt)
    try:
        return template.format_map(fields)
    except KeyError as e:
        raise InputError(
            f"prompt template names {{{e.args[0]}}}, which record {item.metadata.get('native_id')!r} does not have",
            what=where,
            fix="use {prompt} or a field every record has under 'metadata' (write {{ and }} for braces)",
        ) from None
    except (ValueError, IndexError) as e:
        raise InputError(
            f"prompt template is not a valid format string ({e})",
            what=where,
            fix="use {prompt} and {metadata field} placeholders; write {{ and }} for literal braces",
        ) from None


def _items(spec: BenchmarkSpec, base: Path, where: str) -> list[Item]:
    items: list[Item] = []
    seen: dict[str, str] = {}
    for f in spec.files:
        path = (base / f).expanduser() if not Path(f).expanduser().is_absolute() else Path(f).expanduser()
        for it in load_jsonl(path, benchmark=spec.name):
            if it.id in seen:
                raise InputError(
                    f"duplicate id {it.metadata.get('native_id')!r} (also in {seen[it.id]})",
                    what=str(path),
                    fix="give every record of the benchmark's files a unique 'id'",
                )
            seen[it.id] = str(path)
            update: dict[str, Any] = {"prompt": _fill(spec.prompt, it, f"{where}: prompt")}
            if "task" in spec.facets and it.task == GENERIC:
                update["task"] = spec.facets["task"]
            for facet in ("discipline", "direction", "type"):
                if facet in spec.facets and not getattr(it, facet):
                    update[facet] = spec.facets[facet]
            items.append(it.model_copy(update=update))
    return items


def _register_metrics(spec: BenchmarkSpec, where: str) -> tuple[str, ...]:
    """Declare the reference metrics, then rubrics, scoped to the benchmark (an earlier load's dropped); their names.
    InputError for a rubric not in the library."""
    reference = [m for m in spec.metrics if m in DEFAULT_METRICS]
    rubrics = []
    for name in (m for m in spec.metrics if m not in REFERENCE_METRICS):
        try:
            rubrics.append(load_rubric(name))
        except InputError as e:
            raise InputError(
                f"metrics: {e.message}",
                what=where,
                fix=f"list exact_match, exact_match_normalised, numeric_match or a rubric name; {e.fix}",
            ) from None
    unregister_scope(spec.name)
    built: list[Metric] = [ReferenceMatch(benchmark=spec.name, names=reference)] if reference else []
    if "numeric_match" in spec.metrics:
        built.append(NumericMatch(benchmark=spec.name))
    built += [RubricMetric(rubric) for rubric in rubrics]
    for m in built:
        metric(scope=spec.name)(m)
    return tuple(m.name for m in built)


def load_yaml_benchmark(path: str | Path) -> Benchmark:
    """The :class:`~sgieval.benchmarks.base.Benchmark` a YAML file defines (module docstring); its loader reads the
    listed JSONL files. InputError naming file, field and fix for bad YAML or a bad field; DataNotFoundError for a
    missing file."""
    p = Path(path).expanduser()
    where = str(p)
    if not p.is_file():
        raise DataNotFoundError(
            "no such benchmark definition file",
            what=where,
            fix="give the path of a YAML benchmark definition (README: \"Your own benchmark\")",
        )
    data = load_yaml(p, what=where, fix='write the definition as YAML (README: "Your own benchmark")')
    if not isinstance(data, dict):
        raise InputError(
            f"top level is a {type(data).__name__}, expected a mapping",
            what=where,
            fix="start the file with 'name: ...' and 'files: [...]'",
        )
    try:
        spec = BenchmarkSpec.model_validate(data)
    except ValidationError as e:
        raise input_error_from_validation(
            e,
            where=where,
            model=BenchmarkSpec,
            label="benchmark definition",
            schema_ref="README \"Your own benchmark\"",
        ) from None
    if spec.primary is not None and spec.primary not in spec.metrics:
        raise InputError(
            f"primary metric {spec.primary!r} is not one of the listed metrics {spec.metrics}",
            what=f"{where}: primary",
            fix="name one of the listed metrics, or leave primary out",
        )
    if not spec.metrics:
        raise InputError(
            "lists no metric",
            what=f"{where}: metrics",
            fix="list exact_match (needs a reference in every record) or a rubric name",
        )
    v = spec.vocabulary
    base = p.resolve().parent
    tasks = (spec.facets.get("task", GENERIC),)

    def loader(_folder: Path | None = None) -> list[Item]:  # the definition knows its own files
        return _items(spec, base, where)

    from . import registry

    if spec.name in registry.builtin_names():
        raise InputError(
            f"benchmark {spec.name!r} is built in", what=f"{where}: name", fix="give your benchmark another name"
        )
    metrics = _register_metrics(spec, where)

    return Benchmark(
        name=spec.name,
        description=spec.description or f"user benchmark defined in {p.name}",
        loader=loader,
        data_root=False,
        source=str(p.resolve()),
        tasks=tasks,
        facets=dict(spec.facets),
        vocabulary=Vocabulary(
            disciplines={c: tuple(x.lower() for x in vals) for c, vals in v.disciplines.items()},
            words={c: tuple(w) for c, w in v.words.items()},
            tasks=tuple((t, tuple(ps)) for t, ps in v.tasks.items()),
            names=tuple(v.names),
        ),
        prompts={t: spec.prompt for t in tasks},
        metrics=metrics,
        primary={"*": spec.primary or spec.metrics[0]},
    )
