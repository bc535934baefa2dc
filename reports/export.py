"""Export a run's records as tables: ``sgieval export``.

Three tables, one file each, in parquet, JSONL or CSV, so a run goes into
pandas, a notebook or a HuggingFace dataset (``datasets.load_dataset("parquet",
data_files=...)``):

- ``items``: one row per item: ``item_id`` and the facets (``benchmark``,
  ``task``, ``discipline``, ``direction``, ``type``), ``prompt``, ``reference``,
  ``metadata``;
- ``responses``: one row per (item, target model): the item's facets,
  ``model``, ``text``, ``answer``, ``status``, ``error``, ``latency_s``,
  ``tokens_input``, ``tokens_output``, ``cost`` (USD);
- ``scores``: one row per score with the item's facets: ``metric``, ``value``
  (the metric's native scale), ``status``, ``judge``, ``rationale``, ``error``,
  ``evidence``, ``details``.  Corpus-level scores (item ``*``) have empty facets.

Nested values (``reference``, ``metadata``, ``answer``, ``evidence``,
``details``) are JSON text in every format (``null`` when absent), so the three
formats hold the same rows; strings stay strings.  Missing numbers are null
(empty in CSV).  A non-finite number inside a nested value is ``null`` in its
JSON text.

Safe to open:

- CSV: a text cell beginning with ``=``, ``+``, ``-``, ``@``, a tab or a
  carriage return is written with a leading apostrophe (``'=HYPERLINK(...)``),
  so a spreadsheet shows it as text instead of evaluating it as a formula
  (OWASP "CSV injection"); numbers are written as numbers;
- JSONL: every line is valid JSON: a NaN or infinite number is ``null`` and the
  row gets a ``nonfinite`` field naming the column and what it held
  (``{"value": "NaN"}``);
- parquet: every table is built before anything is written; a value a column
  cannot hold (an integer beyond 64 bits) stops the export with one line naming
  the table, the column and the row, and no file is written.

Every file is written whole or not at all, following no link inside the run
folder (or inside ``--dest``).
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any, Iterable

from ..core import InputError, Item, Response, Score, escape_control_chars
from ..core import write_bytes_in

FORMATS = ("parquet", "jsonl", "csv")
FACETS = ("benchmark", "task", "discipline", "direction", "type")
COLUMNS: dict[str, list[tuple[str, str]]] = {
    "items": [
        ("item_id", "string"),
        *((f, "string") for f in FACETS),
        ("prompt", "string"),
        ("reference", "json"),
        ("metadata", "json"),
    ],
    "responses": [
        ("item_id", "string"),
        *((f, "string") for f in FACETS),
        ("model", "string"),
        ("text", "string"),
        ("answer", "json"),
        ("status", "string"),
        ("error", "string"),
        ("latency_s", "float"),
        ("tokens_input", "int"),
        ("tokens_output", "int"),
        ("cost", "float"),
    ],
    "scores": [
        ("item_id", "string"),
        *((f, "string") for f in FACETS),
        ("model", "string"),
        ("metric", "string"),
        ("value", "float"),
        ("status", "string"),
        ("judge", "string"),
        ("rationale", "string"),
        ("error", "string"),
        ("evidence", "json"),
        ("details", "json"),
    ],
}
"""Column name and type per table ("json": JSON text of a nested value)."""


def _finite(x: Any) -> Any:
    """``x`` with every NaN or infinite float (at any depth) replaced by None."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def _json(x: Any) -> str:
    try:
        return json.dumps(x, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except ValueError:  # a NaN or an infinity: not JSON
        return json.dumps(_finite(x), ensure_ascii=False, sort_keys=True)


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What a CSV text cell may not begin with: a spreadsheet would evaluate it (written with a leading ``'``)."""


def csv_cell(v: Any) -> Any:
    """A CSV cell: None -> ``""``; text beginning with one of :data:`FORMULA_START` gets a leading apostrophe
    (a spreadsheet shows it as text), and its terminal escapes and other control characters are shown as
    ``\\xNN`` (:func:`~sgieval.core.escape_control_chars`: a CSV printed on a terminal cannot rewrite it);
    numbers as they are.

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


def jsonl_row(row: dict[str, Any]) -> str:
    """One JSONL line (valid JSON, with its newline) for ``row``: a NaN or infinite number becomes null and the
    row gets ``nonfinite``: {column: "NaN" | "Infinity" | "-Infinity"}."""
    flags = {}
    out = dict(row)
    for k, v in row.items():
        if isinstance(v, float) and not math.isfinite(v):
            flags[k] = "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
            out[k] = None
    if flags:
        out["nonfinite"] = flags
    return json.dumps(out, ensure_ascii=False, allow_nan=False) + "\n"


def _facets(items: dict[str, Item], item_id: str) -> dict[str, str]:
    it = items.get(item_id)
    return {f: (getattr(it, f) if it is not None else "") for f in FACETS}


def run_tables(
    items: Iterable[Item], responses: Iterable[Response], scores: Iterable[Score]
) -> dict[str, list[dict[str, Any]]]:
    """The three tables as lists of row dicts (columns: :data:`COLUMNS`), rows in record order."""
    items = list(items)
    by_id = {i.id: i for i in items}
    out: dict[str, list[dict[str, Any]]] = {"items": [], "responses": [], "scores": []}
    for i in items:
        out["items"].append(
            {
                "item_id": i.id,
                **_facets(by_id, i.id),
                "prompt": i.prompt,
                "reference": _json(i.reference),
                "metadata": _json(i.metadata),
            }
        )
    for r in responses:
        tok = r.tokens or {}
        out["responses"].append(
            {
                "item_id": r.item_id,
                **_facets(by_id, r.item_id),
                "model": r.model,
                "text": r.text,
                "answer": _json(r.answer),
                "status": r.status,
                "error": r.error,
                "latency_s": r.latency_s,
                "tokens_input": tok.get("input"),
                "tokens_output": tok.get("output"),
                "cost": r.cost,
            }
        )
    for s in scores:
        out["scores"].append(
            {
                "item_id": s.item_id,
                **_facets(by_id, s.item_id),
                "model": s.model,
                "metric": s.metric,
                "value": s.value,
                "status": s.status,
                "judge": s.judge,
                "rationale": s.rationale,
                "error": s.error,
                "evidence": _json([e.model_dump(mode="json") for e in s.evidence]),
                "details": _json(s.details),
            }
        )
    return out


def _arrow_schema(table: str) -> Any:
    import pyarrow as pa

    types = {"string": pa.string(), "json": pa.string(), "float": pa.float64(), "int": pa.int64()}
    return pa.schema([(name, types[t]) for name, t in COLUMNS[table]])


def _arrow_table(name: str, rows: list[dict[str, Any]]) -> Any:
    """The table ``name`` as a pyarrow Table; raises InputError naming the column and the row of the first
    value its column cannot hold."""
    import pyarrow as pa

    schema = _arrow_schema(name)
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
        return "".join(jsonl_row(r) for r in rows).encode("utf-8")
    if fmt == "csv":
        buf = io.StringIO(newline="")
        w = csv.DictWriter(buf, fieldnames=cols)
        w.writeheader()
        w.writerows({k: csv_cell(v) for k, v in r.items()} for r in rows)
        return buf.getvalue().encode("utf-8")
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = _arrow_table(name, rows)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def export_run(run_dir: str | Path, fmt: str, dest: str | Path | None = None) -> list[Path]:
    """Write ``items``, ``responses`` and ``scores`` of the run folder
    ``run_dir`` as ``<dest>/<table>.<fmt>`` (default dest: ``run_dir/export``).

    The records are those the report counts (:meth:`~sgieval.core.RunStore.read`:
    a repeated identical record once).  All three files are encoded before the
    first is written; each is written whole, following no link below the run
    folder (or below ``dest`` when it lies outside the run).

    Args:
        run_dir: the run folder.
        fmt: ``parquet``, ``jsonl`` or ``csv``.
        dest: the output folder (created when missing).

    Returns:
        The three paths, in the order items, responses, scores.

    Raises:
        InputError: an unknown ``fmt``; a link in the run folder or on the
            way; a value parquet cannot type (nothing written); two different
            records of one key in the run.
    """
    from ..core import RunStore

    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}", what="--format", fix=f"use one of {', '.join(FORMATS)}")
    run_dir = Path(run_dir)
    store = RunStore(run_dir, read_only=True)  # read as data: only the export folder is written
    tables = run_tables(store.read("items"), store.read("responses"), store.read("scores"))
    dest = Path(dest) if dest is not None else run_dir / "export"
    root = dest
    if dest == run_dir or run_dir in dest.parents:
        root = run_dir
    else:
        try:  # the run's own folder given another way (absolute, through the run folder's link)
            dest = run_dir / dest.resolve().relative_to(run_dir.resolve())
            root = run_dir
        except (ValueError, OSError):
            pass
    encoded = {name: _encode(name, fmt, rows) for name, rows in tables.items()}  # every table, before any write
    return [write_bytes_in(root, dest / f"{name}.{fmt}", data) for name, data in encoded.items()]
