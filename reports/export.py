"""Export a run's records as tables (``sgieval export``): ``items``, ``responses`` and ``scores`` (:data:`COLUMNS`,
with each row's item facets), one file each in parquet, JSONL or CSV.  Nested values are JSON text in every format;
a CSV text cell that a spreadsheet would evaluate gets a leading apostrophe (OWASP "CSV injection"); a non-finite
number is JSONL ``null`` named in ``nonfinite``; files are written whole or not at all, following no link."""

from __future__ import annotations

import csv
import io
import json
import math
from contextlib import suppress
from pathlib import Path
from typing import Any, Iterable

from ..core import InputError, Item, Response, RunStore, Score, escape_control_chars, write_bytes_in
from .render import jsonable

FORMATS = ("parquet", "jsonl", "csv")
FACETS = ("benchmark", "task", "discipline", "direction", "type")


def _columns(spec: str) -> list[tuple[str, str]]:
    """``item_id``, the facets, then the ``name[:type]`` words of ``spec`` (type ``string`` when not given)."""
    named = [(w.partition(":")[0], w.partition(":")[2] or "string") for w in spec.split()]
    return [("item_id", "string"), *((f, "string") for f in FACETS), *named]


COLUMNS: dict[str, list[tuple[str, str]]] = {
    "items": _columns("prompt reference:json metadata:json"),
    "responses": _columns(
        "model text answer:json status error latency_s:float tokens_input:int tokens_output:int cost:float"
    ),
    "scores": _columns("model metric value:float status judge rationale error evidence:json details:json"),
}
"""Column name and type per table ("json": JSON text of a nested value)."""


def _json(x: Any) -> str:
    try:
        return json.dumps(x, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except ValueError:  # a NaN or an infinity: not JSON
        return json.dumps(jsonable(x), ensure_ascii=False, sort_keys=True)


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(v: Any) -> Any:
    """A CSV cell: None -> ``""``; text starting with :data:`FORMULA_START` gets a leading apostrophe, its control
    characters shown as ``\\xNN``; numbers as they are.

    Args:
        v: a value.

    Returns:
        The cell value.
    """
    if v is None:
        return ""
    if isinstance(v, str):
        v = escape_control_chars(v)
        if v.startswith(FORMULA_START):
            return "'" + v
    return v


def _jsonl_row(row: dict[str, Any]) -> str:
    """One JSONL line for ``row``: a NaN or infinite number is null and named in the row's ``nonfinite``."""
    flags = {}
    out = dict(row)
    for k, v in row.items():
        if isinstance(v, float) and not math.isfinite(v):
            flags[k] = "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
            out[k] = None
    if flags:
        out["nonfinite"] = flags
    return json.dumps(out, ensure_ascii=False, allow_nan=False) + "\n"


def _row(table: str, rec: Item | Response | Score, by_id: dict[str, Item], **special: Any) -> dict[str, Any]:
    """One row of ``table`` from ``rec`` (or ``special[column]``), nested values as JSON, with its item's facets."""
    item_id = rec.id if isinstance(rec, Item) else rec.item_id
    it = by_id.get(item_id)
    out = {"item_id": item_id, **{f: (getattr(it, f) if it is not None else "") for f in FACETS}}
    for name, kind in COLUMNS[table][1 + len(FACETS) :]:
        v = special[name] if name in special else getattr(rec, name)
        out[name] = _json(v) if kind == "json" else v
    return out


def _run_tables(
    items: Iterable[Item], responses: Iterable[Response], scores: Iterable[Score]
) -> dict[str, list[dict[str, Any]]]:
    """The three tables as lists of row dicts, rows in record order."""
    items = list(items)
    by_id = {i.id: i for i in items}
    return {
        "items": [_row("items", i, by_id) for i in items],
        "responses": [
            _row(
                "responses",
                r,
                by_id,
                tokens_input=(r.tokens or {}).get("input"),
                tokens_output=(r.tokens or {}).get("output"),
            )
            for r in responses
        ],
        "scores": [_row("scores", s, by_id, evidence=[e.model_dump(mode="json") for e in s.evidence]) for s in scores],
    }


def _arrow_table(name: str, rows: list[dict[str, Any]]) -> Any:
    """The table ``name`` as a pyarrow Table; InputError naming the column and row of a value it cannot hold."""
    import pyarrow as pa  # loaded for a parquet export only

    types = {"string": pa.string(), "json": pa.string(), "float": pa.float64(), "int": pa.int64()}
    schema = pa.schema([(col, types[t]) for col, t in COLUMNS[name]])
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowException, OverflowError, TypeError, ValueError) as e:
        for field in schema:
            for n, r in enumerate(rows, 1):
                try:
                    pa.array([r.get(field.name)], type=field.type)
                except (pa.ArrowException, OverflowError, TypeError, ValueError):
                    v = repr(r.get(field.name))
                    raise InputError(
                        f"{name} row {n} (item {r.get('item_id')!r}), column {field.name!r}: {v[:60]} is not a "
                        f"{field.type} value; nothing was written",
                        what="--format parquet",
                        fix="export as jsonl or csv (they hold any number), or correct that record",
                    ) from None
        raise InputError(
            f"{name}: {str(e).splitlines()[0][:200]}; nothing was written",
            what="--format parquet",
            fix="export as jsonl or csv",
        ) from None


def _encode(name: str, fmt: str, rows: list[dict[str, Any]]) -> bytes:
    """The file content of table ``name`` with ``rows`` in ``fmt``."""
    cols = [c for c, _ in COLUMNS[name]]
    if fmt == "jsonl":
        return "".join(_jsonl_row(r) for r in rows).encode("utf-8")
    if fmt == "csv":
        buf = io.StringIO(newline="")
        w = csv.DictWriter(buf, fieldnames=cols)
        w.writeheader()
        w.writerows({k: csv_cell(v) for k, v in r.items()} for r in rows)
        return buf.getvalue().encode("utf-8")
    import pyarrow as pa  # loaded for a parquet export only
    import pyarrow.parquet as pq

    table = _arrow_table(name, rows)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def export_run(run_dir: str | Path, fmt: str, dest: str | Path | None = None) -> list[Path]:
    """Write the run's ``items``, ``responses`` and ``scores`` as ``<dest>/<table>.<fmt>``, encoded before any write.

    Args:
        run_dir: the run folder.
        fmt: ``parquet``, ``jsonl`` or ``csv``.
        dest: the output folder (default ``run_dir/export``; created when missing).

    Returns:
        The three paths, in the order items, responses, scores.

    Raises:
        InputError: an unknown ``fmt``; a link on the way; a value parquet cannot type; conflicting records.
    """
    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}", what="--format", fix=f"use one of {', '.join(FORMATS)}")
    run_dir = Path(run_dir)
    store = RunStore(run_dir, read_only=True)  # read as data: only the export folder is written
    tables = _run_tables(store.read("items"), store.read("responses"), store.read("scores"))
    dest = Path(dest) if dest is not None else run_dir / "export"
    root = dest
    if dest == run_dir or run_dir in dest.parents:
        root = run_dir
    else:
        with suppress(ValueError, OSError):  # the run's own folder given another way (absolute, through its link)
            dest = run_dir / dest.resolve().relative_to(run_dir.resolve())
            root = run_dir
    encoded = {name: _encode(name, fmt, rows) for name, rows in tables.items()}  # every table, before any write
    return [write_bytes_in(root, dest / f"{name}.{fmt}", data) for name, data in encoded.items()]
