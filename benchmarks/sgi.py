"""SGI-Bench: the five tasks as :class:`~sgieval.core.Item` records (schema: DATASETS.md "SGI-Bench"; prompts:
:mod:`sgieval.benchmarks.prompts`, METRICS.md A.1-A.5). Sources: a folder with one file per task (``.jsonl``,
``.parquet`` or ``.json``, named after the task or its HuggingFace dataset), a sub-folder so named (a hub snapshot), an
``sgi-bench/`` sub-folder, one task file, or None: the HuggingFace hub. Images become base64 PNG strings."""

from __future__ import annotations

import base64
import io
import os
import re
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..core import (
    DEEP_RESEARCH,
    DRY_EXPERIMENT,
    EXPERIMENTAL_REASONING,
    IDEA_GENERATION,
    SGI_TASKS,
    WET_EXPERIMENT,
    DataNotFoundError,
    InputError,
    Item,
    OfflineError,
)
from . import prompts
from .base import Benchmark, Vocabulary, literal
from .jsonl import input_error_from_validation, iter_records


BENCHMARK = "sgi-bench"

HUB_DATASETS: dict[str, str] = {  # Task -> HuggingFace dataset name (DATASETS.md; split ``test``).
    DEEP_RESEARCH: "InternScience/SGI-DeepResearch",
    IDEA_GENERATION: "InternScience/SGI-IdeaGeneration",
    DRY_EXPERIMENT: "InternScience/SGI-DryExperiment",
    WET_EXPERIMENT: "InternScience/SGI-WetExperiment",
    EXPERIMENTAL_REASONING: "InternScience/SGI-Reasoning",
}

FILE_NAMES: dict[str, tuple[str, ...]] = {t: (t, HUB_DATASETS[t].split("/", 1)[1]) for t in SGI_TASKS}
"""Task -> accepted file stems (task constant, HF dataset name)."""

DISCIPLINES = "chemistry physics astronomy life neuroscience earth material energy information mathematics".split()
DATA_SUFFIXES = (".jsonl", ".parquet", ".json")
SCHEMA_REF = "fields of the SGI-Bench {task} dataset card on HuggingFace"
_FIX_DATA_DIR = (
    "run `sgieval data pull sgi-bench` when online, or put the SGI-Bench files in one folder "
    "(deep_research.jsonl, idea_generation.jsonl, dry_experiment.jsonl, wet_experiment.jsonl, "
    "experimental_reasoning.jsonl, or .parquet; fields of the HuggingFace datasets) and pass "
    "--data-dir <folder with deep_research.jsonl ...> (or set SGIEVAL_DATA)"
)


class HubUnavailableError(OfflineError, DataNotFoundError):
    """The HuggingFace hub cannot be reached, or the download failed (CLI exit code 2)."""


def _norm(name: str) -> str:
    s = re.sub(r"[^a-z0-9]", "", name.lower())
    return s[3:] if s.startswith("sgi") else s


_NAME_TO_TASK = {_norm(n): t for t, names in FILE_NAMES.items() for n in names}


def task_of_name(name: str) -> str | None:
    """The SGI task a file/folder stem, ``idx`` prefix or hub cache folder names (case, ``-``/``_`` and ``SGI``
    ignored), else None."""
    if name.startswith("datasets--"):
        name = name.rsplit("--", 1)[-1]
    return _NAME_TO_TASK.get(_norm(name))


_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png_b64_from_bytes(data: bytes) -> str:
    if data.startswith(_PNG_MAGIC):
        return base64.b64encode(data).decode("ascii")
    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as im:
            return to_png_base64(im)
    except Exception as e:
        raise ValueError(f"is not a decodable image ({type(e).__name__})") from e


def to_png_base64(image: Any) -> str:
    """One image (base64 string or ``data:`` URI, bytes, ``{"bytes", "path"}`` dict, PIL image) as a base64 PNG string;
    ValueError for anything that is not a decodable image."""
    if isinstance(image, str):
        s = image.strip()
        if s.startswith("data:"):
            s = s.partition(",")[2]
        try:
            raw = base64.b64decode(s, validate=True)
        except ValueError as e:  # binascii.Error included
            raise ValueError("is not valid base64") from e
        if not raw:
            raise ValueError("is an empty image string")
        return s if raw.startswith(_PNG_MAGIC) else _png_b64_from_bytes(raw)
    if isinstance(image, (bytes, bytearray)):
        return _png_b64_from_bytes(bytes(image))
    if isinstance(image, dict):
        data = image.get("bytes")
        if data:
            return _png_b64_from_bytes(bytes(data))
        path = image.get("path")
        if path and Path(path).is_file():
            return _png_b64_from_bytes(Path(path).read_bytes())
        raise ValueError("is an image dict without bytes or a readable path")
    if hasattr(image, "save") and hasattr(image, "mode"):  # PIL.Image.Image
        buf = io.BytesIO()
        image.save(buf, format="PNG")
        return base64.b64encode(buf.getvalue()).decode("ascii")
    raise ValueError(f"is a {type(image).__name__}, expected a base64 PNG string or an image")


class _SgiRecord(BaseModel):
    """Fields common to all SGI-Bench tasks; extra columns are ignored."""

    model_config = ConfigDict(extra="ignore")

    idx: str = Field(min_length=1, description="a non-empty string such as 'SGI_DeepResearch_0000'")
    question: str = Field(min_length=1, description="a non-empty string")
    discipline: str = Field(default="", description="a string (one of the SGI-Bench disciplines)")
    direction: str = Field(default="", description="a string (research direction slug)")

    @field_validator("discipline", "direction", mode="before")
    @classmethod
    def _none_facet(cls, v: Any) -> Any:
        return "" if v is None else v


class DeepResearchRecord(_SgiRecord):
    steps: list[str] = Field(description="a list of strings (reference reasoning steps)")
    answer: str = Field(description="a string (numeric answers stored as strings, e.g. \"0.25\")")
    type: str = Field(default="", description="a string (Data / Properties / Micro-Experiments / Macro-Experiments)")


class IdeaGenerationRecord(_SgiRecord):
    """(stringified dicts stay raw strings)"""

    related_work: str = Field(description="a string holding a Python-literal dict")
    challenge: str = Field(description="a string")
    limitation: str = Field(description="a string")
    motivation: str = Field(description="a string")
    task_objective: str = Field(description="a string")
    existing_solutions: str = Field(description="a string holding a Python-literal dict")
    keywords: list[str] = Field(description="a list of strings (3-5 expert keywords)")
    core_idea: str = Field(description="a string")
    implementation_steps: str = Field(description="a string holding a Python-literal dict step_id -> text")
    implementation_order: list[str] = Field(description="a list of strings (edges like '1-2')")
    data: str = Field(description="a string")
    evaluation_metrics: str = Field(description="a string holding a Python-literal dict")
    expected_outcome: str = Field(description="a string")
    related_work_test: str = Field(description="a string holding a Python-literal dict")


class DryExperimentRecord(_SgiRecord):
    data_code: str = Field(description="a string (python)")
    main_code: str = Field(description="a string (complete reference python)")
    incomplete_main_code: str = Field(description="a string (python with masked functions)")
    incomplete_functions: list[str] = Field(min_length=1, description="a non-empty list of function names")
    unit_test_0_data: str = Field(description="a string (python that generates test data)")
    unit_test_0_output: str = Field(description="a string (expected stdout)")
    unit_test_1_data: str = Field(description="a string (python that generates test data)")
    unit_test_1_output: str = Field(description="a string (expected stdout)")
    unit_test_2_data: str = Field(description="a string (python that generates test data)")
    unit_test_2_output: str = Field(description="a string (expected stdout)")
    unit_test_3_data: str = Field(description="a string (python that generates test data)")
    unit_test_3_output: str = Field(description="a string (expected stdout)")
    unit_test_4_data: str = Field(description="a string (python that generates test data)")
    unit_test_4_output: str = Field(description="a string (expected stdout)")
    function_type: str = Field(default="", description="a string (masked-function type, paper Table 2)")
    runtime: float | None = Field(default=None, description="a number (reference runtime in seconds) or null")


class WetExperimentRecord(_SgiRecord):
    action_pool: str = Field(min_length=1, description="a non-empty string (the atomic actions)")
    answer: str = Field(
        min_length=1, description="a non-empty string (reference protocol, 'var = <Action>(...)' lines)"
    )


class ExperimentalReasoningRecord(_SgiRecord):
    """(images normalised to base64 PNG)"""

    images: list[str] = Field(
        min_length=1, description="a non-empty list of images (base64 PNG strings or {'bytes','path'} dicts)"
    )
    options: list[str] = Field(min_length=2, description="a list of at least two option strings")
    steps: list[str] = Field(description="a list of strings (reference reasoning steps)")
    step_images: list[str] = Field(
        default_factory=list, description="a list of images (base64 PNG strings or {'bytes','path'} dicts)"
    )
    answer: int = Field(description="an integer: the 0-based index of the correct option")
    image_type: str = Field(
        default="", description="a string (process, observation, experiment, simulation, visualization)"
    )
    type: str = Field(default="", description="a string (reasoning type)")

    @field_validator("images", "step_images", mode="before")
    @classmethod
    def _images(cls, v: Any) -> Any:
        if v is None:
            return []
        if not isinstance(v, (list, tuple)):
            return v
        out = []
        for i, im in enumerate(v):
            try:
                out.append(to_png_base64(im))
            except ValueError as e:
                raise ValueError(f"element {i} {e}") from None
        return out

    @field_validator("answer", mode="before")
    @classmethod
    def _no_bool(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError("must be an integer option index, not a boolean")
        return v

    @model_validator(mode="after")
    def _answer_in_range(self) -> "ExperimentalReasoningRecord":
        if not 0 <= self.answer < len(self.options):
            raise ValueError(
                f"answer index {self.answer} is outside the {len(self.options)} options (0..{len(self.options) - 1})"
            )
        return self


RECORD_MODELS: dict[str, type[_SgiRecord]] = {
    DEEP_RESEARCH: DeepResearchRecord,
    IDEA_GENERATION: IdeaGenerationRecord,
    DRY_EXPERIMENT: DryExperimentRecord,
    WET_EXPERIMENT: WetExperimentRecord,
    EXPERIMENTAL_REASONING: ExperimentalReasoningRecord,
}


def _answer_hint(field: str) -> str | None:
    """The fix for a bad experimental_reasoning ``answer`` (or the whole record)."""
    if field in ("", "answer"):
        ref = SCHEMA_REF.format(task=EXPERIMENTAL_REASONING)
        return f"set 'answer' to the 0-based index of the correct option (0 = A) ({ref})"
    return None


def record_to_item(task: str, rec: _SgiRecord, source: str = "") -> Item:
    """One validated row as an Item: id ``sgi-bench/<idx>``, the task's prompt and reference, the raw question and the
    source in ``metadata``."""
    meta: dict[str, Any] = {"question": rec.question, "idx": rec.idx, "source": source}
    if isinstance(rec, DeepResearchRecord):
        prompt = prompts.deep_research_prompt(rec.question)
        reference: Any = {"answer": rec.answer, "steps": list(rec.steps)}
    elif isinstance(rec, IdeaGenerationRecord):
        prompt = prompts.idea_generation_prompt(rec.question)
        reference = {k: getattr(rec, k) for k in IDEA_REFERENCE}
    elif isinstance(rec, DryExperimentRecord):
        prompt = prompts.dry_experiment_prompt(rec.question)
        reference = {
            "data_code": rec.data_code,
            "main_code": rec.main_code,
            "incomplete_main_code": rec.incomplete_main_code,
            "incomplete_functions": list(rec.incomplete_functions),
            "unit_tests": [
                {"data": getattr(rec, f"unit_test_{i}_data"), "output": getattr(rec, f"unit_test_{i}_output")}
                for i in range(5)
            ],
            "runtime": None if rec.runtime is None else float(rec.runtime),
        }
    elif isinstance(rec, WetExperimentRecord):
        prompt = prompts.wet_experiment_prompt(rec.question)
        reference = {"answer": rec.answer, "action_pool": rec.action_pool}
    else:
        assert isinstance(rec, ExperimentalReasoningRecord)
        prompt = prompts.experimental_reasoning_prompt(rec.question, rec.options)
        reference = {"answer": rec.answer, "options": list(rec.options), "steps": list(rec.steps)}
        meta.update(image_type=rec.image_type, images=list(rec.images), n_step_images=len(rec.step_images))
    return Item(
        id=f"{BENCHMARK}/{rec.idx}",
        benchmark=BENCHMARK,
        task=task,
        discipline=rec.discipline,
        direction=rec.direction,
        type=getattr(rec, "type", getattr(rec, "function_type", "")),  # dry_experiment: its function type
        prompt=prompt,
        reference=reference,
        metadata=meta,
    )


IDEA_REFERENCE = (  # The idea_generation fields kept in ``Item.reference``, in order.
    "core_idea keywords implementation_steps implementation_order data evaluation_metrics expected_outcome "
    "related_work existing_solutions related_work_test challenge limitation motivation task_objective"
).split()


def _items_from_rows(task: str, rows: Iterable[tuple[str, dict]], source: str) -> list[tuple[str, Item]]:
    """(location, Item) pairs of validated rows; InputError on the first bad row."""
    model = RECORD_MODELS[task]
    items: list[tuple[str, Item]] = []
    for where, row in rows:
        try:
            rec = model.model_validate(row)
        except ValidationError as e:
            idx = row.get("idx")
            label = f"SGI-Bench {task} record" + (f" {idx!r}" if isinstance(idx, str) and idx else "")
            hint = _answer_hint if task == EXPERIMENTAL_REASONING else None
            raise input_error_from_validation(
                e, where=where, model=model, label=label, schema_ref=SCHEMA_REF.format(task=task), hint=hint
            ) from None
        items.append((where, record_to_item(task, rec, source)))
    return items


def _task_files(folder: Path, task: str) -> list[Path]:
    """Data files for ``task`` in ``folder`` (module docstring), [] if none."""
    direct = sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and p.suffix.lower() in DATA_SUFFIXES and task_of_name(p.stem) == task
    )
    if len(direct) > 1:
        raise InputError(
            f"several files for SGI-Bench task {task}: {', '.join(p.name for p in direct)}",
            what=str(folder),
            fix="keep exactly one file per task in the folder",
        )
    if direct:
        return direct
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and task_of_name(p.name) == task):
        files = sorted(p for p in sub.rglob("*") if p.is_file() and p.suffix.lower() in (".parquet", ".jsonl"))
        tests = [p for p in files if "test" in p.name.lower()]
        if files:
            return tests or files
    return []


def _check_tasks(tasks: list[str] | None) -> list[str]:
    if tasks is None:
        return list(SGI_TASKS)
    out = []
    for t in tasks:
        tt = task_of_name(t)  # a task constant names itself
        if tt is None:
            raise InputError(f"unknown SGI-Bench task {t!r}", what="tasks", fix=f"use some of {list(SGI_TASKS)}")
        out.append(tt)
    return list(dict.fromkeys(out))


_ON = ("1", "true", "yes", "on")


def _check_hub(timeout_s: float, what: str) -> None:
    """Raise :class:`HubUnavailableError` when the hub is set offline or does not answer within ``timeout_s``."""
    flags = [v for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE") if os.environ.get(v, "").strip().lower() in _ON]
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    if flags:
        reason = f"{flags[0]} is set"
    else:
        try:
            import httpx

            httpx.head(endpoint, timeout=timeout_s, follow_redirects=False)
            return
        except Exception as e:  # any transport error means: not reachable
            reason = f"{endpoint} is unreachable ({type(e).__name__})"
    raise HubUnavailableError(
        f"cannot download SGI-Bench from the HuggingFace hub: {reason}", what=what, fix=_FIX_DATA_DIR
    )


def _hub(task: str, then: Any = None) -> Any:
    """``then(load_dataset(HUB_DATASETS[task], split="test"))`` (the dataset without ``then``), or
    :class:`HubUnavailableError`."""
    name = HUB_DATASETS[task]
    try:
        import datasets

        ds = datasets.load_dataset(name, split="test")
        return ds if then is None else then(ds)
    except Exception as e:
        raise HubUnavailableError(
            f"downloading from the HuggingFace hub failed: {type(e).__name__}: "
            f"{str(e).splitlines()[0] if str(e) else ''}",
            what=f"HuggingFace dataset {name}",
            fix=_FIX_DATA_DIR,
        ) from e


def _file_pairs(src: Path, wanted: list[str], filtered: bool) -> list[tuple[str, Item]]:
    """The items of one task file (its task from its name, else its first ``idx``)."""
    task = task_of_name(src.stem)
    if task is None:  # the prefix of its first idx
        idx = next(iter_records(src), ("", {}))[1].get("idx")
        task = task_of_name(idx.rsplit("_", 1)[0]) if isinstance(idx, str) else None
    if task is None:
        raise InputError(
            "cannot tell which SGI-Bench task this file holds (neither the file name nor the "
            "'idx' prefix names a task)",
            what=str(src),
            fix="name the file after its task, e.g. deep_research.jsonl or SGI-Reasoning.parquet",
        )
    if filtered and task not in wanted:
        raise InputError(
            f"file holds task {task}, but tasks={wanted} were requested",
            what=str(src),
            fix="pass the file of the requested task or drop the task filter",
        )
    return _items_from_rows(task, iter_records(src, kind="SGI-Bench record"), str(src))


def _folder_pairs(folder: Path, wanted: list[str], filtered: bool) -> list[tuple[str, Item]]:
    if not any(_task_files(folder, t) for t in SGI_TASKS):
        folder = next((folder / s for s in ("sgi-bench", "sgi_bench", "SGI-Bench") if (folder / s).is_dir()), folder)
    pairs: list[tuple[str, Item]] = []
    found = 0
    for t in wanted:
        files = _task_files(folder, t)
        if not files and filtered:
            raise DataNotFoundError(
                f"no file for SGI-Bench task {t} (expected {t}.jsonl, {t}.parquet or {FILE_NAMES[t][1]}.parquet)",
                what=str(folder),
                fix=_FIX_DATA_DIR,
            )
        found += bool(files)
        for f in files:
            pairs += _items_from_rows(t, iter_records(f, kind="SGI-Bench record"), str(f))
    if not found:
        raise DataNotFoundError("folder holds no SGI-Bench task file", what=str(folder), fix=_FIX_DATA_DIR)
    return pairs


def load_sgi_bench(
    source: str | Path | None = None, tasks: list[str] | None = None, *, hub_timeout_s: float = 3.0
) -> list[Item]:
    """Load SGI-Bench items, in ``SGI_TASKS`` order, rows in file order.

    Args:
        source: a folder, a task file, or None for the HuggingFace hub (module docstring).
        tasks: the tasks to load (constants or file-style names such as ``"SGI-Reasoning"``); None: every task found.
        hub_timeout_s: how long the hub probe waits.

    Returns:
        The items.

    Raises:
        DataNotFoundError: ``source`` does not exist, holds no task file, or a requested task has no file.
        HubUnavailableError: no ``source`` and the hub is unreachable or the download failed.
        InputError: a bad record (file, line, field and fix), an unknown task, a file of no telling task, or a duplicate
            ``idx``.
    """
    wanted = _check_tasks(tasks)
    pairs: list[tuple[str, Item]] = []
    if source is None:
        for t in wanted:
            name = HUB_DATASETS[t]
            _check_hub(hub_timeout_s, f"HuggingFace dataset {name}")
            rows = ((f"HuggingFace dataset {name} row {n}", dict(r)) for n, r in enumerate(_hub(t), 1))
            pairs += [(f"hub {name}", it) for _, it in _items_from_rows(t, rows, source=f"hf:{name}")]
    else:
        src = Path(source).expanduser()
        if not src.exists():
            raise DataNotFoundError("no such file or folder", what=str(src), fix=_FIX_DATA_DIR)
        pairs = (
            _file_pairs(src, wanted, tasks is not None)
            if src.is_file()
            else _folder_pairs(src, wanted, tasks is not None)
        )
    seen: dict[str, str] = {}
    for where, it in pairs:
        if it.id in seen:
            raise InputError(
                f"duplicate idx {it.metadata['idx']!r} (first at {seen[it.id]})",
                what=where,
                fix="give every SGI-Bench record a unique 'idx'",
            )
        seen[it.id] = where
    return [it for _, it in pairs]


def pull_sgi_bench(dest: str | Path, tasks: list[str] | None = None, *, hub_timeout_s: float = 3.0) -> Path:
    """Download SGI-Bench from the HuggingFace hub into ``dest``, one ``<task>.parquet`` per task (images as ``{"bytes",
    "path"}`` structs).

    Args:
        dest: the folder.
        tasks: as in :func:`load_sgi_bench` (None: all five).
        hub_timeout_s: how long the hub probe waits.

    Returns:
        ``dest``.

    Raises:
        HubUnavailableError: the hub is unreachable (or ``HF_HUB_OFFLINE`` is set), or a download fails (files already
            downloaded are kept).
    """
    dest = Path(dest).expanduser()
    wanted = _check_tasks(tasks)
    _check_hub(hub_timeout_s, f"data pull sgi-bench -> {dest}")
    dest.mkdir(parents=True, exist_ok=True)
    for t in wanted:
        _hub(t, lambda ds, t=t: ds.to_parquet(str(dest / f"{t}.parquet")))
    return dest


DEFINITION = Benchmark(
    name=BENCHMARK,
    description="SGI-Bench: deep research, idea generation, dry and wet experiments, experimental reasoning "
    "(arXiv 2512.16969).",
    loader=load_sgi_bench,
    pull=pull_sgi_bench,
    source="HuggingFace " + ", ".join(HUB_DATASETS.values()) + " (split test)",
    tasks=tuple(SGI_TASKS),
    facets={
        "discipline": "one of the ten SGI-Bench disciplines (astronomy, chemistry, earth, ...)",
        "direction": "research direction slug",
        "type": "target category / function type / reasoning type",
    },
    vocabulary=Vocabulary(
        disciplines={c: (c,) for c in DISCIPLINES},
        tasks=(
            (
                IDEA_GENERATION,
                (
                    r"idea generation",
                    r"ideation",
                    r"generat\w* (research )?ideas?",
                    r"research ideas?",
                    r"hypothesis generation",
                ),
            ),
            (
                DEEP_RESEARCH,
                (r"deep research", r"literature (search|review)", r"research questions?", r"multi-step research"),
            ),
            (
                DRY_EXPERIMENT,
                (
                    r"dry (lab|experiments?)",
                    r"computational experiments?",
                    r"scientific code",
                    r"coding",
                    r"code completion",
                ),
            ),
            (
                WET_EXPERIMENT,
                (r"wet (lab|experiments?)", r"(laboratory|lab|experimental) protocols?", r"protocol design"),
            ),
            (
                EXPERIMENTAL_REASONING,
                (
                    r"experimental reasoning",
                    r"multimodal reasoning",
                    r"multiple[- ]choice",
                    r"(figures?|images?|plots?) reasoning",
                ),
            ),
        ),
        names=(r"sgi[- ]?bench", r"sgi"),
    ),
    prompts={
        DEEP_RESEARCH: "{question}" + literal(prompts.DEEP_RESEARCH_INSTRUCTIONS),
        IDEA_GENERATION: "{question}" + literal(prompts.IDEA_GENERATION_INSTRUCTIONS),
        DRY_EXPERIMENT: "{question}" + literal(prompts.DRY_EXPERIMENT_INSTRUCTIONS),
        WET_EXPERIMENT: "{question}" + literal(prompts.WET_EXPERIMENT_INSTRUCTIONS),
        EXPERIMENTAL_REASONING: literal(prompts.EXPERIMENTAL_REASONING_INSTRUCTIONS) + "\n\nQuestion:\n{question}\n\n"
        "Options:\n{options}\n",
    },
    metrics=(
        "em",
        "sla",
        "idea_effectiveness_obj",
        "dry_passall_1",
        "wet_sequence_similarity",
        "mca",
        "reasoning_validity",
    ),
    primary={
        DEEP_RESEARCH: "em",
        IDEA_GENERATION: "idea_final_score",
        DRY_EXPERIMENT: "dry_passall_5",
        WET_EXPERIMENT: "wet_final_score",
        EXPERIMENTAL_REASONING: "mca",
    },
    prefer={
        "accuracy": ("em", "mca", "dry_passall_5", "wet_final_score"),
        "creativity": ("idea_novelty", "idea_final_score"),
        "novelty": ("idea_novelty",),
        "feasibility": ("idea_feasibility",),
    },
)
