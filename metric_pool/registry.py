"""Which predefined metrics apply to which benchmark.

Each benchmark module exposes ``metrics(options: dict | None = None) -> list[Metric]``.
"""

from __future__ import annotations

import importlib
from typing import Iterable

from ..core import InputError, Item
from .base import Metric

PREDEFINED_MODULES: dict[str, str] = {
    "sciaidanbench": "sgieval.metric_pool.aidanbench",
    "aidanbench": "sgieval.metric_pool.aidanbench",
    "sgi-bench": "sgieval.metric_pool.sgi",
    "sfbench": "sgieval.metric_pool.sfbench",
    "jsonl": "sgieval.metric_pool.generic",
}


def predefined_metrics(benchmarks: Iterable[str], items: Iterable[Item] = (), options: dict | None = None) -> list[Metric]:
    """The predefined metrics of ``benchmarks`` that apply to at least one of
    ``items`` (all of them when ``items`` is empty).  Raises InputError for an
    unknown benchmark name."""
    items = list(items)
    out: list[Metric] = []
    seen: set[str] = set()
    for b in dict.fromkeys(benchmarks):
        mod_name = PREDEFINED_MODULES.get(b) or (PREDEFINED_MODULES["jsonl"] if b.startswith("jsonl") else None)
        if mod_name is None:
            raise InputError(f"no predefined metrics for benchmark {b!r}", what="benchmark",
                             fix=f"use one of {sorted(PREDEFINED_MODULES)}")
        mod = importlib.import_module(mod_name)
        for m in mod.metrics(options):
            if m.name in seen:
                continue
            if items and not any(m.applies(i) for i in items if i.benchmark == b or b.startswith("jsonl")):
                continue
            seen.add(m.name)
            out.append(m)
    return out
