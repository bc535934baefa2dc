"""The benchmark catalog: every loaded Item, with facets (benchmark, task, discipline, direction, type)."""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..core import DataNotFoundError, InputError, Item
from .base import FACET_NAMES as FACETS


@dataclass
class Catalog:
    """All items of the loaded benchmarks; per benchmark, ``unavailable`` why it is not loaded, ``sources`` where its
    items came from, ``skipped`` the files of its data folder its loader left out."""

    items: list[Item]
    unavailable: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_id = {i.id: i for i in self.items}
        if len(self.by_id) != len(self.items):
            dup = [k for k, v in Counter(i.id for i in self.items).items() if v > 1][:3]
            raise InputError(f"duplicate item ids {dup}", what="catalog", fix="give every item a unique id")

    def counts(self, facet: str, items: Iterable[Item] | None = None) -> Counter:
        """How many items have each value of ``facet``.

        Args:
            facet: a facet name (:data:`FACETS`).
            items: the items counted (default: the whole catalog).

        Returns:
            A Counter: facet value -> number of items.
        """
        if facet not in FACETS:
            raise InputError(f"unknown facet {facet!r}", what="catalog", fix=f"use one of {FACETS}")
        return Counter(getattr(i, facet) for i in (self.items if items is None else items))

    def values(self, facet: str) -> list[str]:
        """The values ``facet`` takes in the catalog.

        Args:
            facet: a facet name.

        Returns:
            The distinct non-empty values, sorted.
        """
        return sorted(v for v in self.counts(facet) if v)

    def filter(self, filters: dict[str, list[str]] | None = None) -> list[Item]:
        """The items whose facet values are in each filter's list (case-insensitive).

        Args:
            filters: facet -> accepted values; an empty or missing filter keeps everything.

        Returns:
            The matching items, in catalog order.
        """
        filters = {k: v for k, v in (filters or {}).items() if v}
        for k in filters:
            if k not in FACETS:
                raise InputError(f"unknown facet {k!r}", what="filter", fix=f"use one of {FACETS}")
        wanted = {k: {x.lower() for x in v} for k, v in filters.items()}
        return [i for i in self.items if all(getattr(i, k).lower() in v for k, v in wanted.items())]

    def search(self, text: str, items: Iterable[Item] | None = None, limit: int = 20) -> list[Item]:
        """The items whose prompt contains every word of ``text`` (case-insensitive).

        Args:
            text: the words looked for.
            items: the items searched (default: the whole catalog).
            limit: most items returned.

        Returns:
            The matching items, most word hits first.
        """
        words = [w for w in re.findall(r"\w+", text.lower()) if len(w) > 2]
        found = [
            i for i in (self.items if items is None else items) if words and all(w in i.prompt.lower() for w in words)
        ]
        found.sort(key=lambda i: (-sum(i.prompt.lower().count(w) for w in words), i.id))
        return found[:limit]

    def sample(self, items: list[Item], k: int | None, seed: int = 0) -> list[Item]:
        """``k`` items stratified by (discipline, task), deterministic for a seed: proportional allocation (largest
        remainder), at least one per stratum while ``k`` allows.

        Args:
            items: the items sampled from.
            k: how many; None: all.

        Returns:
            The sample; all of ``items`` when ``k`` is None or >= ``len(items)``.
        """
        if k is None or k >= len(items):
            return list(items)
        strata: dict[tuple[str, str], list[Item]] = {}
        for i in items:
            strata.setdefault((i.discipline, i.task), []).append(i)
        keys = sorted(strata)
        n = len(items)
        quota = {s: k * len(strata[s]) / n for s in keys}
        alloc = {s: int(quota[s]) for s in keys}
        rest = k - sum(alloc.values())
        for s in sorted(keys, key=lambda s: (-(quota[s] - alloc[s]), s))[:rest]:
            alloc[s] += 1
        rng = random.Random(seed)
        chosen: set[str] = set()
        for s in keys:
            stratum = sorted(strata[s], key=lambda i: i.id)
            chosen.update(i.id for i in rng.sample(stratum, min(alloc[s], len(stratum))))
        return [i for i in items if i.id in chosen]


def load_catalog(benchmarks: list[str] | None = None, data_dir: str | Path | None = None) -> Catalog:
    """Load the named benchmarks into one catalog.

    Args:
        benchmarks: benchmark names, or paths to a JSONL file or a YAML definition; None: every registered benchmark
            whose data is found, in registry order.
        data_dir: the data folder to look in first (``--data-dir``).

    Returns:
        The catalog: its items, where each benchmark's came from, and the files it could not read.

    Raises:
        DataNotFoundError: a benchmark asked for by name has no data.
    """
    from . import load_benchmark, registry

    names = benchmarks or [d.name for d in registry.with_data()]
    if data_dir is not None and not Path(data_dir).expanduser().exists():
        raise DataNotFoundError(
            "folder does not exist",
            what=f"--data-dir {data_dir}",
            fix=f"point --data-dir at a folder holding {_folders()}, or run `sgieval data pull sciaidanbench`",
        )
    items: list[Item] = []
    unavailable: dict[str, str] = {}
    sources: dict[str, str] = {}
    skipped: dict[str, list[str]] = {}
    for b in names:
        try:
            its, src = load_benchmark(b, data_dir)
        except DataNotFoundError:
            if benchmarks:
                raise
            from .data import how_to_get

            unavailable[b] = f"no local data ({how_to_get(b)})"
            continue
        items += its
        defn = registry.find(b)
        left_out = defn.skipped(Path(src)) if defn is not None and defn.skipped and Path(src).is_dir() else []
        for name in dict.fromkeys([b, *(i.benchmark for i in its)]):  # "my.jsonl" loads items of "jsonl:my"
            sources[name] = src
            if left_out:
                skipped[name] = left_out
    if not items:
        from .data import describe_folder, named_root

        named = named_root(data_dir)
        if named is not None:  # the folder the user named is the only one looked in: say what it holds
            from .layouts import LAYOUTS

            root, label = named
            raise DataNotFoundError(
                f"{root} holds no benchmark sgieval recognises (looked for: {'; '.join(LAYOUTS)}; "
                f"found: {describe_folder(root)})",
                what=label,
                fix=f"point it at a folder holding {_folders()} or an upstream clone, or leave it out to use the "
                "default data folders (`sgieval data where`; `sgieval data pull sciaidanbench` fills one)",
            )
        raise DataNotFoundError(
            "no benchmark data found in any lookup location",
            what="catalog",
            fix="run `sgieval data pull sciaidanbench` when online, or pass --data-dir / set "
            f"SGIEVAL_DATA to a folder holding {_folders()}",
        )
    return Catalog(items=items, unavailable=unavailable, sources=sources, skipped=skipped)


def _folders() -> str:
    """ "sciaidanbench/, sgi-bench/ or sfbench/": the data folders of the registered benchmarks."""
    from . import registry

    subs = [f"{d.data_folder}/" for d in registry.with_data()]
    return ", ".join(subs[:-1]) + f" or {subs[-1]}" if len(subs) > 1 else "".join(subs)


def stored_responses(
    catalog: Catalog, data_dir: str | Path | None = None
) -> tuple[dict[str, dict[str, int]], dict[str, str]]:
    """Which models have stored responses, per benchmark (what ``replay:<name>`` serves without a call); only
    SciAidanBench ships them (``<data>/sciaidanbench/responses/<model>.json``).

    Args:
        catalog: the catalog whose items are counted.
        data_dir: the data folder to look in first.

    Returns:
        ``({benchmark: {stored model name: items of catalog it answers}}, {file: why it could not be read})``.
    """
    from .data import find_benchmark_dir
    from .sciaidanbench import BENCHMARK, list_response_files, load_stored_answers

    out: dict[str, dict[str, int]] = {}
    problems: dict[str, str] = {}
    questions = {i.metadata.get("question", i.prompt) for i in catalog.items if i.benchmark == BENCHMARK}
    if not questions:
        return out, problems
    try:
        folder = find_benchmark_dir(BENCHMARK, data_dir, required=False)
    except DataNotFoundError:
        return out, problems
    for path in list_response_files(folder) if folder else []:
        try:
            stores = load_stored_answers(path)
        except InputError as e:
            problems[str(path)] = e.message
            continue
        for st in stores:
            out.setdefault(BENCHMARK, {})[st.model] = sum(1 for q in st.by_question if q in questions)
    return out, problems
