"""Export a run's records as tables (issue 16 item 6): ``sgieval export``.

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
(empty in CSV).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterable

from ..core import InputError, Item, Response, Score

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


def _json(x: Any) -> str:
    return json.dumps(x, ensure_ascii=False, sort_keys=True)


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


def export_run(run_dir: str | Path, fmt: str, dest: str | Path | None = None) -> list[Path]:
    """Write ``items``, ``responses`` and ``scores`` of the run folder
    ``run_dir`` as ``<dest>/<table>.<fmt>`` (default dest: ``run_dir/export``);
    returns the three paths.  Raises InputError for an unknown ``fmt``."""
    from ..core import RunStore

    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}", what="--format", fix=f"use one of {', '.join(FORMATS)}")
    run_dir = Path(run_dir)
    store = RunStore(run_dir)
    tables = run_tables(store.read("items"), store.read("responses"), store.read("scores"))
    dest = Path(dest) if dest is not None else run_dir / "export"
    dest.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, rows in tables.items():
        path = dest / f"{name}.{fmt}"
        cols = [c for c, _ in COLUMNS[name]]
        if fmt == "jsonl":
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        elif fmt == "csv":
            with path.open("w", encoding="utf-8", newline="") as f:
                w = csv.DictWriter(f, fieldnames=cols)
                w.writeheader()
                w.writerows({k: ("" if v is None else v) for k, v in r.items()} for r in rows)
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_pylist(rows, schema=_arrow_schema(name)), path)
        paths.append(path)
    return paths
