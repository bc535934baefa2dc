"""Benchmark loaders and the catalog.

``load_benchmark(name, data_dir)`` -> (items, source description) for
``sciaidanbench``, ``sgi-bench``, ``sfbench`` or a path to a JSONL file.
"""

from __future__ import annotations

from pathlib import Path

from ..core import InputError, Item
from .catalog import FACETS, Catalog, load_catalog  # noqa: F401
from .data import data_roots, find_benchmark_dir, pull  # noqa: F401

KNOWN = ("sciaidanbench", "sgi-bench", "sfbench")


def load_benchmark(name: str, data_dir: str | Path | None = None) -> tuple[list[Item], str]:
    """Items of benchmark ``name`` and where they came from."""
    if name == "sciaidanbench":
        from .sciaidanbench import load_questions

        folder = find_benchmark_dir(name, data_dir)
        return load_questions(folder), str(folder)
    if name == "sgi-bench":
        folder = find_benchmark_dir(name, data_dir)
        from .sgi import load_sgi_bench

        return load_sgi_bench(folder), str(folder)
    if name == "sfbench":
        folder = find_benchmark_dir(name, data_dir)
        from .sfbench import load_sfbench

        files = sorted(p for p in folder.iterdir() if p.suffix in (".json", ".jsonl"))
        items: list[Item] = []
        for f in files:
            items += load_sfbench(f)
        return items, str(folder)
    p = Path(name)
    if p.suffix == ".jsonl":
        if not p.is_file():
            raise InputError("file not found", what=str(p), fix="give the path of a JSONL benchmark file")
        from .jsonl import load_jsonl

        return load_jsonl(p), str(p)
    raise InputError(f"unknown benchmark {name!r}", what="--benchmark",
                     fix=f"use one of {', '.join(KNOWN)} or a path to a .jsonl file")
