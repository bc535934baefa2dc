"""Generic JSONL benchmark loader (``-b <file.jsonl>``, docs/data.md): items ``jsonl:<file stem>/<id>``; and the record
readers the SGI-Bench and SFBench loaders share (:func:`iter_records`, :func:`input_error_from_validation`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..core import GENERIC, DataNotFoundError, InputError, Item, json_loads_strict, lone_surrogate, split_jsonl
from .base import Benchmark


def _plain(value: Any) -> Any:
    """Numpy / pyarrow scalars (e.g. float16 ``runtime``) as Python values."""
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return _plain(tolist())
    return value


def _parquet_rows(p: Path) -> Iterator[tuple[str, dict]]:
    """``(location, row)`` of a parquet file's rows; InputError for an unreadable file."""
    try:
        import pyarrow.parquet as pq

        rows = pq.read_table(p).to_pylist()
    except Exception as e:  # pyarrow raises several error types for a bad file
        raise InputError(
            f"cannot read parquet: {str(e).splitlines()[0]}",
            what=str(p),
            fix="re-download the file, or convert it to JSONL with one record per line",
        ) from e
    for n, row in enumerate(rows, 1):
        yield f"{p} row {n}", _plain(row)


def iter_records(path: str | Path, *, kind: str = "record") -> Iterator[tuple[str, dict]]:
    """``(location, record)`` for every record of a ``.jsonl`` (``"<path> line N"``, blank lines skipped), ``.json`` (a
    list of objects, ``"<path> record N"``) or ``.parquet`` (``"<path> row N"``) file. DataNotFoundError for a missing
    file; InputError naming file, line and fix for an unreadable file, a bad JSON line or a non-object record."""
    p = Path(path)
    if not p.is_file():
        raise DataNotFoundError(
            f"no such {kind} file", what=str(p), fix="check the path, or pass --data-dir <folder holding the files>"
        )
    suffix = p.suffix.lower()
    if suffix == ".parquet":
        yield from _parquet_rows(p)
        return
    try:
        text = p.read_text(encoding="utf-8-sig")  # a byte-order mark (Windows editors) is not data
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read file: {e}", what=str(p), fix="save the file as UTF-8 text") from e
    if suffix == ".json":
        try:
            data = json_loads_strict(text)
        except json.JSONDecodeError as e:
            raise InputError(
                f"is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}",
                what=str(p),
                fix="write a JSON list of objects, or one JSON object per line in a .jsonl file",
            ) from e
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list):
            raise InputError(
                f"top-level JSON value is a {type(data).__name__}, expected a list of objects",
                what=str(p),
                fix="write a JSON list of objects ([{...}, {...}])",
            )
        records: Iterator[tuple[str, Any]] = ((f"{p} record {n}", rec) for n, rec in enumerate(data, 1))
        fix = "make every element of the list a JSON object {...}"
    else:  # JSONL (any other suffix is read as JSONL)
        records = _jsonl_records(p, text)
        fix = "write exactly one JSON object {...} per line (JSONL)"
    for where, rec in records:
        if not isinstance(rec, dict):
            raise InputError(f"{kind} is a {type(rec).__name__}, expected a JSON object", what=where, fix=fix)
        _refuse_lone_surrogates(rec, where)
        yield where, rec


def _jsonl_records(p: Path, text: str) -> Iterator[tuple[str, Any]]:
    for n, line in enumerate(split_jsonl(text), 1):  # on "\n" only: U+2028 inside a string stays in it
        if not line.strip():
            continue
        try:
            rec = json_loads_strict(line)
        except json.JSONDecodeError as e:
            raise InputError(
                f"is not valid JSON: {e.msg} (column {e.colno})",
                what=f"{p} line {n}",
                fix="write exactly one complete JSON object per line (JSONL)",
            ) from e
        yield f"{p} line {n}", rec


def _lone_surrogate_at(value: Any, path: str = "") -> tuple[str, str] | None:
    """(field path, ``\\uXXXX``) of the first string in ``value`` holding a lone surrogate."""
    if isinstance(value, str):
        at = lone_surrogate(value)
        return (path, f"\\u{ord(value[at]):04x}") if at is not None else None
    if isinstance(value, dict):
        kids = [(f"{path}.{k}" if path else str(k), v) for k, v in value.items()]
    else:
        kids = [(f"{path}[{j}]", v) for j, v in enumerate(value)] if isinstance(value, list) else []
    return next((hit for at, v in kids if (hit := _lone_surrogate_at(v, at))), None)


def _refuse_lone_surrogates(rec: dict, where: str) -> None:
    """InputError naming ``where`` and the field when a string of ``rec`` holds a lone surrogate (valid JSON, but no
    character)."""
    hit = _lone_surrogate_at(rec)
    if hit:
        raise InputError(
            f"field {hit[0]!r} holds a lone surrogate ({hit[1]}), which is no character",
            what=where,
            fix=f"replace the escape {hit[1]} by the character it stands for (a surrogate pair, or the character)",
        )


def _type_phrase(model: type[BaseModel], field: str) -> str:
    """The field's description (every record field that can fail validation has one)."""
    info = model.model_fields.get(field)
    return (info.description if info is not None else None) or "the documented type"


def input_error_from_validation(
    err: ValidationError,
    *,
    where: str,
    model: type[BaseModel],
    label: str,
    schema_ref: str,
    hint: Callable[[str], str | None] | None = None,
) -> InputError:
    """One-line :class:`InputError` for the first problem in ``err``: ``where`` the file and line, ``label`` the record,
    ``schema_ref`` the schema document quoted in the fix; ``hint(field)`` may give a field-specific fix."""
    errors = err.errors()
    e = errors[0]
    loc = [str(x) for x in e.get("loc", ())]
    field = loc[0] if loc else ""
    path = ".".join(loc)
    others = [
        f"'{'.'.join(str(x) for x in o.get('loc', ())) or 'record'}' {o.get('type', 'invalid')}" for o in errors[1:4]
    ]
    n = len(errors)
    more = (
        f" (and {n - 1} more problem(s) in this record: {', '.join(others)}{', ...' if n > 4 else ''})" if n > 1 else ""
    )
    text = e.get("msg", "invalid value").removeprefix("Value error, ")
    if not loc:  # a whole-record check (model validator)
        msg = f"{label}: {text}{more}"
    elif e.get("type") == "missing":
        msg = f"{label}: field '{path}' is missing{more}"
    elif e.get("type") == "extra_forbidden":
        msg = f"{label}: unknown field '{path}'{more}"
    else:
        got = repr(e.get("input"))
        got_s = got if len(got) <= 60 else got[:57] + "..."
        msg = f"{label}: field '{path}': {text[0].lower() + text[1:]} (got {got_s}){more}"
    fix = hint(field) if hint else None
    if fix is None:
        if not field:
            fix = f"correct the record ({schema_ref})"
        elif e.get("type") == "extra_forbidden":
            fix = f"remove the field '{field}' or move it under 'metadata' ({schema_ref})"
        else:
            fix = f"give every record the field '{field}' as {_type_phrase(model, field)} ({schema_ref})"
    return InputError(msg, what=where, fix=fix)


class GenericRecord(BaseModel):
    """One record of a generic JSONL benchmark."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="a string or integer, unique in the file")
    prompt: str = Field(min_length=1, description="a non-empty string (the text the target model sees)")
    reference: Any = None
    task: str = Field(default=GENERIC, min_length=1, description="a non-empty string such as \"generic\"")
    discipline: str = Field(default="", description="a string")
    direction: str = Field(default="", description="a string")
    type: str = Field(default="", description="a string")
    metadata: dict[str, Any] = Field(default_factory=dict, description="a JSON object")
    options: list[str] | dict[str, str] | None = Field(
        default=None, description="a list of option texts or an object letter -> text"
    )

    @field_validator("options")
    @classmethod
    def _options(cls, v: Any) -> Any:
        if v is not None and len(v) == 0:
            raise ValueError("must hold at least one option")
        if isinstance(v, list) and len(v) > 26:
            raise ValueError("at most 26 options (letters A-Z)")
        if isinstance(v, dict) and any(len(k) != 1 or not k.isascii() or not k.isalpha() for k in v):
            raise ValueError("option keys must be single letters A-Z")
        return v

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, v: Any) -> Any:
        if isinstance(v, bool):
            return v
        if isinstance(v, int):
            return str(v)
        if isinstance(v, str) and not v.strip():
            raise ValueError("must not be empty")
        return v

    @field_validator("discipline", "direction", "type", mode="before")
    @classmethod
    def _facet(cls, v: Any) -> Any:
        return "" if v is None else v


def load_jsonl(path: str | Path, benchmark: str | None = None) -> list[Item]:
    """Items of a generic JSONL benchmark: ``benchmark`` (default ``"jsonl:<file stem>"``), id ``"<benchmark>/<id>"``,
    reference ``{"answer": reference}`` (None without one), metadata the record's plus ``source``, ``native_id`` and
    ``question`` (the prompt unless set). DataNotFoundError for a missing file; InputError naming ``<file> line N``, the
    field and the fix for a bad line or field, a duplicate id or an empty file."""
    p = Path(path)
    bench = benchmark or f"jsonl:{p.stem}"
    items: list[Item] = []
    seen: dict[str, str] = {}
    for where, rec in iter_records(p, kind="JSONL record"):
        try:
            r = GenericRecord.model_validate(rec)
        except ValidationError as e:
            rid = rec.get("id")
            label = f"JSONL record {rid!r}" if rid is not None else "JSONL record"
            raise input_error_from_validation(
                e, where=where, model=GenericRecord, label=label, schema_ref="generic JSONL format: id, prompt required"
            ) from None
        if r.id in seen:
            raise InputError(
                f"duplicate id {r.id!r} (first at {seen[r.id]})", what=where, fix="give every record a unique 'id'"
            )
        seen[r.id] = where
        items.append(
            Item(
                id=f"{bench}/{r.id}",
                benchmark=bench,
                task=r.task,
                discipline=r.discipline,
                direction=r.direction,
                type=r.type,
                prompt=shown_prompt(r.prompt, r.options),
                reference=None
                if "reference" not in rec
                else {"answer": r.reference, **({"options": r.options} if r.options is not None else {})},
                metadata={"question": r.prompt, **r.metadata, "source": str(p), "native_id": r.id},
            )
        )
    if not items:
        raise InputError(
            "contains no records", what=str(p), fix="write one JSON object per line with at least 'id' and 'prompt'"
        )
    return items


# added under options the prompt does not show (what the generic metrics read, README)
MCQ_ANSWER_FORMAT = "Answer with the letter of the correct option as \\boxed{X} or on a final line 'ANSWER: X'."


def shown_prompt(prompt: str, options: list[str] | dict[str, str] | None) -> str:
    """What the target sees for a generic record: ``prompt``, plus (when some option is not in it) a blank line, one
    ``"A. <text>"`` line per option (list order, or the object's sorted letters) and :data:`MCQ_ANSWER_FORMAT`."""
    if not options:
        return prompt
    labelled = (
        [(chr(ord("A") + i), text) for i, text in enumerate(options)]
        if isinstance(options, list)
        else sorted((k.upper(), v) for k, v in options.items())
    )
    if all(str(text) in prompt for _, text in labelled):
        return prompt
    lines = [f"{letter}. {text}" for letter, text in labelled]
    return prompt.rstrip() + "\n\n" + "\n".join(lines) + "\n\n" + MCQ_ANSWER_FORMAT


DEFINITION = Benchmark(
    name="jsonl",
    description="A user benchmark in one JSONL file (-b questions.jsonl): id, prompt, optional reference and facets.",
    loader=load_jsonl,
    data_root=False,
    path_suffixes=(".jsonl",),
    owns=lambda name: name.startswith("jsonl"),
    source="the user's file",
    tasks=(GENERIC,),
    facets={
        "benchmark": "jsonl:<file stem>",
        "task": "the record's task (default generic)",
        "discipline": "the record's discipline",
        "direction": "the record's direction",
        "type": "the record's type",
    },
    prompts={GENERIC: "{prompt}"},
    metrics=("exact_match", "numeric_match"),
    primary={"*": "exact_match"},
    prefer={"accuracy": ("exact_match", "exact_match_normalised")},
)
