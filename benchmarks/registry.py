"""The benchmark registry: every :class:`~sgieval.benchmarks.base.Benchmark` sgieval knows; the built-ins are the
definitions ending the modules of :data:`BUILTIN_MODULES` (loaded lazily); a new one is ``register(MY_BENCHMARK)``."""

from __future__ import annotations

import functools
import importlib
import re
from dataclasses import dataclass
from typing import Iterable

from ..core import InputError, Item
from ..metric_pool import ALL, Metric, MetricEntry, entries
from .base import Benchmark

BUILTIN_MODULES = ("sciaidanbench", "sgi", "sfbench", "jsonl")

_user: dict[str, Benchmark] = {}


@functools.cache
def _builtins() -> dict[str, Benchmark]:
    """The built-in definitions by name, their modules imported on first use."""
    defs = (importlib.import_module(f"{__package__}.{mod}").DEFINITION for mod in BUILTIN_MODULES)
    return {d.name: d for d in defs}


def register(defn: Benchmark, *, replace: bool = False) -> Benchmark:
    """Make ``defn`` known (``sgieval ask -b <name>``, the catalog, the agents); registering it again is a no-op.

    Args:
        defn: the definition.
        replace: replace a user definition of the same name (a reloaded YAML benchmark).

    Returns:
        ``defn``.

    Raises:
        InputError: the name is a built-in's, or another definition has it and ``replace`` is False.
    """
    if not isinstance(defn, Benchmark):
        raise InputError(
            f"register() takes a Benchmark, got {type(defn).__name__}",
            what="benchmark registry",
            fix="build the definition with sgieval.benchmarks.base.Benchmark(name=..., loader=...)",
        )
    if not re.fullmatch(r"[A-Za-z0-9][\w.\-]*", defn.name or ""):
        raise InputError(
            f"benchmark name {defn.name!r} is not a plain name",
            what="benchmark registry",
            fix="use letters, digits, '-', '_' or '.' (e.g. my-bench)",
        )
    builtin = _builtins()
    if defn.name in builtin and builtin[defn.name] is not defn:
        raise InputError(
            f"benchmark {defn.name!r} is built in", what="benchmark registry", fix="give your benchmark another name"
        )
    old = _user.get(defn.name)
    if old is not None and old is not defn and old != defn and not replace:
        raise InputError(
            f"another benchmark is already registered as {defn.name!r}",
            what="benchmark registry",
            fix="give it another name, or register(defn, replace=True)",
        )
    if defn.name not in builtin:
        _user[defn.name] = defn
    return defn


def builtin_names() -> list[str]:
    """Names of the built-in benchmarks, which no user benchmark may take."""
    return list(_builtins())


def unregister(name: str) -> None:
    """Forget the user benchmark ``name`` (built-ins stay); no error when unknown."""
    _user.pop(name, None)


def definitions() -> list[Benchmark]:
    """Every benchmark definition.

    Returns:
        The built-ins in :data:`BUILTIN_MODULES` order, then user ones in registration order.
    """
    return [*_builtins().values(), *_user.values()]


def names() -> list[str]:
    return [d.name for d in definitions()]


def find(name: str) -> Benchmark | None:
    """The definition named ``name``, or owning items named ``name`` (``jsonl:qa``); None if none."""
    defs = definitions()
    return next((d for d in defs if d.name == name), None) or next((d for d in defs if d.matches(name)), None)


def get(name: str) -> Benchmark:
    """The definition named ``name`` (:func:`find`).

    Args:
        name: a benchmark name, or the benchmark of items (``jsonl:qa``).

    Returns:
        The definition.

    Raises:
        InputError: naming the known benchmarks when nothing matches.
    """
    defn = find(name)
    if defn is None:
        raise InputError(
            f"unknown benchmark {name!r}",
            what="benchmark",
            fix=f"use one of {', '.join(names())}, or a path to a .jsonl or .yaml benchmark file",
        )
    return defn


def with_data() -> list[Benchmark]:
    """Definitions whose data is a folder in the data roots: the benchmarks a catalog loads when none is named."""
    return [d for d in definitions() if d.data_root]


def for_path(path: str) -> Benchmark | None:
    """The definition that loads ``-b <path>`` by its suffix (``.jsonl``), else None."""
    suffix = "." + path.rsplit(".", 1)[-1].lower() if "." in path else ""
    return next((d for d in definitions() if suffix and suffix in d.path_suffixes), None)


def predefined_metrics(
    benchmarks: Iterable[str], items: Iterable[Item] = (), options: dict | None = None
) -> list[Metric]:
    """The metrics ``benchmarks`` score on every run (``Benchmark.metrics``), each built once per item benchmark of
    ``items`` and scoped to its items, kept when it applies to one of them; without ``items``, all, scoped to the name.

    Args:
        benchmarks: benchmark names or item benchmark names (``"jsonl:qa"``).
        items: the run's items (empty: no filtering).
        options: the run's metric options, handed to each metric.

    Returns:
        The Metrics, benchmark by benchmark, each in the order it names them.

    Raises:
        InputError: an unknown benchmark, or a metric name no declared metric has.
    """
    items = list(items)
    out: list[Metric] = []
    seen: set[tuple[str, str]] = set()
    for b in dict.fromkeys(benchmarks):
        defn = find(b)
        if defn is None:
            raise InputError(
                f"no predefined metrics for benchmark {b!r}", what="benchmark", fix=f"use one of {', '.join(names())}"
            )
        declared = {e.key: e for e in entries()}
        mine = [_named(defn, n, declared) for n in defn.metrics]
        own_items = [i for i in items if i.benchmark == b or defn.matches(i.benchmark)]
        for scope in dict.fromkeys([i.benchmark for i in own_items] if items else [b]):
            own = [i for i in own_items if i.benchmark == scope]
            for e in mine:
                if (scope, e.name) in seen:
                    continue
                m = e.build(options, scope)
                if items and not any(m.applies(i) for i in own):
                    continue
                seen.add((scope, e.name))
                out.append(m)
    return out


def _named(defn: Benchmark, name: str, declared: dict[tuple[str, str], MetricEntry]) -> MetricEntry:
    """The declared metric ``name``: in ``defn``'s scope, else in every benchmark's."""
    entry = declared.get((defn.name, name)) or declared.get((ALL, name))
    if entry is None:
        raise InputError(
            f"benchmark {defn.name!r} names the metric {name!r}, which no module declares",
            what="benchmark metrics",
            fix="declare it with @metric (sgieval.metric_pool.registry) or name a declared metric",
        )
    return entry


@dataclass(frozen=True)
class MergedVocabulary:
    """Every registered benchmark's vocabulary, joined in registry order: ``disciplines`` concept -> (patterns, facet
    values), ``tasks`` (task, patterns), ``benchmarks`` name -> patterns."""

    disciplines: dict[str, tuple[list[str], list[str]]]
    tasks: list[tuple[str, list[str]]]
    benchmarks: dict[str, list[str]]


def vocabulary() -> MergedVocabulary:
    """The offline request vocabulary of every registered benchmark: :data:`~sgieval.benchmarks.base.SCIENCE_WORDS`
    concepts first, then new ones; patterns, values and tasks joined in registry order without repeats. A concept no
    benchmark maps to a value is still listed (the questioning agent then says it is not in the catalog)."""
    from .base import SCIENCE_WORDS

    disc: dict[str, tuple[list[str], list[str]]] = {c: (list(w), []) for c, w in SCIENCE_WORDS.items()}
    tasks: dict[str, list[str]] = {}
    benches: dict[str, list[str]] = {}
    for d in definitions():
        v = d.vocabulary
        for concept in [*v.disciplines, *v.words]:
            pats, values = disc.setdefault(concept, ([], []))
            pats += [p for p in v.words.get(concept, ()) if p not in pats]
            values += [x for x in v.disciplines.get(concept, ()) if x not in values]
        for task, task_pats in v.tasks:
            t0 = tasks.setdefault(task, [])
            t0 += [p for p in task_pats if p not in t0]
        if v.names:
            benches[d.name] = list(v.names)
    return MergedVocabulary(disciplines=disc, tasks=list(tasks.items()), benchmarks=benches)
