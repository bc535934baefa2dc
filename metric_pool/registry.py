"""The metric registry: every metric sgieval knows, each registered with a decorator that declares its scope and
the qualities it measures (as inspect_ai's ``@scorer``).

A new metric is one module with one decorated factory; importing the module registers it::

    from sgieval.metric_pool.base import FunctionMetric, MetricResult
    from sgieval.metric_pool.registry import metric

    @metric(qualities={"conciseness": (r"concise(?:ness)?|brief",)})
    def brevity(options=None):
        return FunctionMetric(SPEC, lambda item, response: MetricResult(value=..., rationale=...))

Two kinds of registration:

- a benchmark's predefined metrics (``@metric(scope="sgi-bench", predefined=True)``): scored on every run over
  that benchmark's items, and on no other benchmark's items.  The benchmark definition names the modules that
  register them (``Benchmark.metric_modules``; the benchmark registry imports them when the benchmark is used).
- a metric the customisation agent may add (``predefined`` False, the default): offered to the agent for the items
  of its scope (``"*"``: every benchmark) and chosen when the request names a quality it measures.

An installed package adds its metric modules under the entry-point group ``sgieval.metrics``.  A run's plan names
every metric by its key ``(scope, name)``: a metric of one benchmark is built once per item benchmark it scores
(``"sgi-bench"``, ``"jsonl:qa"``: the JSONL benchmark's metrics, registered with scope ``"jsonl"``, score each file
on its own) and restricted to its items (:class:`Scoped`), so two benchmarks that both define ``exact_match`` each
score their own items.
"""

from __future__ import annotations

import importlib
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..core import InputError, Item, Response, Score
from .base import Metric, ScoringContext

ALL = "*"
"""The scope of a metric that applies to the items of every benchmark (its specs' tasks still apply)."""

MetricKey = tuple[str, str]
"""``(scope, name)``: how a plan names a metric (scope: an item benchmark name, or :data:`ALL`)."""

BUILTIN_MODULES = ("retrieval_novelty",)
"""Modules of ``sgieval.metric_pool`` with metrics for every benchmark, loaded on the registry's first use (the
modules of a benchmark's predefined metrics load with the benchmark: ``Benchmark.metric_modules``)."""

Offer = Callable[[dict | None, Any], str | None]
"""``offer(options, tools)`` -> where the metric can work in this run (a phrase shown to the agent, e.g.
"searches the papers in ./papers (BM25)"), or None when it cannot (nothing to search)."""


@dataclass(frozen=True)
class MetricEntry:
    """One registered metric.

    Attributes:
        name: the metric's name (its first spec's name, ``Metric.name``).
        scope: :data:`ALL` or the item benchmark name whose items it scores.
        qualities: quality -> the request patterns naming it: regular expressions matched case-insensitively on
            word boundaries, each of which must occur in the request (``("novel\\w*|original", "against (?:the
            )?literature")``: novelty, and a comparison with the literature); by default the quality itself.
        factory: ``factory(options) -> Metric`` (``options``: the run's metric options, option name -> value;
            a metric with options of its own reads them under its name, e.g. ``options["retrieval_novelty"]``).
        offer: when the agent model may choose it (:data:`Offer`); None: always.
        unavailable: why it is not offered when ``offer`` says no (shown in the plan's notes), e.g.
            "retrieval novelty needs --corpus <folder> or the search tool".
        module: the module that registered it.
        predefined: True for a benchmark's predefined metric (scored on every run over its scope's items).
        order: registration order (a benchmark's predefined metrics are listed in this order within a module).
    """

    name: str
    scope: str
    qualities: Mapping[str, tuple[str, ...]]
    factory: Callable[[dict | None], Metric]
    offer: Offer | None = None
    unavailable: str = ""
    module: str = ""
    predefined: bool = False
    order: int = 0

    @property
    def key(self) -> MetricKey:
        return (self.scope, self.name)

    def covers(self, item_benchmark: str) -> bool:
        """Whether items named ``item_benchmark`` (``Item.benchmark``) are within this metric's scope: every item
        for :data:`ALL`, else the scope's own items and those of a name derived from it (``"jsonl:qa"`` for the
        scope ``"jsonl"``).

        Args:
            item_benchmark: an ``Item.benchmark`` value.

        Returns:
            True when those items are in scope.
        """
        return self.scope == ALL or item_benchmark == self.scope or item_benchmark.startswith(self.scope + ":")

    def asked(self, request: str) -> list[str]:
        """The qualities of this metric that ``request`` names, in declaration order.

        Args:
            request: the request.

        Returns:
            The named qualities (empty when none).
        """
        return [
            q
            for q, pats in self.qualities.items()
            if pats and all(re.search(rf"\b(?:{p})\b", request or "", flags=re.I) for p in pats)
        ]

    def where(self, options: dict | None, tools: Any = None) -> str | None:
        """:attr:`offer` for this run; "" when the metric declares no condition.

        Args:
            options: the run's metric options.
            tools: the run's tool pool.

        Returns:
            The offer text, "" without a condition, or None when the metric cannot run in this run.
        """
        return "" if self.offer is None else self.offer(options, tools)

    def build(self, options: dict | None = None, item_benchmark: str | None = None) -> Metric:
        """The Metric, restricted to the items of ``item_benchmark`` (default: the scope itself) unless the scope
        is :data:`ALL`.

        Args:
            options: the run's metric options (option name -> value; e.g. ``{"dr_use_parser": False}``), handed
                to the factory.
            item_benchmark: the ``Item.benchmark`` whose items the Metric scores (:meth:`covers`).

        Raises:
            TypeError: the factory returned no Metric, or one of another name.

        Returns:
            The Metric (a :class:`Scoped` one for a benchmark scope).
        """
        m = self.factory(options or {})
        if not isinstance(m, Metric) or m.name != self.name:
            raise TypeError(f"metric factory {self.module}.{self.name} must return a Metric named {self.name!r}")
        return m if self.scope == ALL else Scoped(m, item_benchmark or self.scope)


_lock = threading.Lock()
_entries: dict[MetricKey, MetricEntry] = {}
_loaded = False
_order = 0


def metric(
    *,
    scope: str = ALL,
    qualities: Sequence[str] | Mapping[str, Sequence[str]] = (),
    predefined: bool = False,
    name: str | None = None,
    offer: Offer | None = None,
    unavailable: str = "",
) -> Callable[[Callable[[dict | None], Metric]], Callable[[dict | None], Metric]]:
    """Register the decorated factory ``f(options) -> Metric`` as a metric; the factory is returned unchanged.

    Args:
        scope: :data:`ALL` (default: any benchmark's items its specs' tasks apply to) or one benchmark name (its
            items, and those of names derived from it: :meth:`MetricEntry.covers`).
        qualities: the qualities it measures (``("conciseness",)``), or quality -> request patterns.  A
            predefined metric may leave them to its specs (``MetricSpec.qualities``, one list per spec).
        predefined: True: one of the benchmark ``scope``'s predefined metrics, scored on every run over its items.
        name: the metric's name (``Metric.name``, its first spec's); default the factory's name.
        offer, unavailable: see :class:`MetricEntry`.

    Returns:
        The decorator.

    Raises:
        InputError: another module already registered a metric of that name in that scope.
    """
    quals = (
        {str(q): tuple(p) for q, p in qualities.items()}
        if isinstance(qualities, Mapping)
        else {str(q): (re.escape(str(q)),) for q in qualities}
    )

    def register(factory: Callable[[dict | None], Metric]) -> Callable[[dict | None], Metric]:
        global _order
        with _lock:
            _order += 1
            entry = MetricEntry(
                name=name or factory.__name__,
                scope=scope,
                qualities=quals,
                factory=factory,
                offer=offer,
                unavailable=unavailable,
                module=factory.__module__,
                predefined=predefined,
                order=_order,
            )
            old = _entries.get(entry.key)
            if old is not None and (old.module, old.factory.__qualname__) != (entry.module, factory.__qualname__):
                raise InputError(
                    f"metric {entry.name!r} (scope {scope!r}) is registered twice ({old.module} and {entry.module})",
                    what="metric registry",
                    fix="give one of the metrics another name",
                )
            _entries[entry.key] = entry
        return factory

    return register


def unregister(key: MetricKey) -> None:
    """Forget the registered metric ``key``; no error when unknown."""
    with _lock:
        _entries.pop(key, None)


def unregister_scope(scope: str, module: str) -> None:
    """Forget every metric of ``scope`` that ``module`` registered (a reloaded YAML benchmark's metrics).

    Args:
        scope: the scope (a benchmark name, or :data:`ALL`).
        module: the module that registered the metrics.
    """
    with _lock:
        for key in [k for k, e in _entries.items() if e.scope == scope and e.module == module]:
            del _entries[key]


ENTRY_POINTS = "sgieval.metrics"
"""Entry-point group of installed packages' metric modules: each entry names a module whose ``@metric`` factories
register on the registry's first use (``[project.entry-points."sgieval.metrics"] brevity = "mypkg.brevity"``)."""


def entries() -> list[MetricEntry]:
    """Every registered metric, in registration order; the modules of :data:`BUILTIN_MODULES` and of installed
    packages (:data:`ENTRY_POINTS`) are imported first.  A benchmark's predefined metrics are here once its
    modules are imported (:func:`sgieval.benchmarks.registry.predefined_metrics` imports them).

    Raises:
        InputError: an installed package's metric module cannot be imported (naming the package and module).

    Returns:
        The entries.
    """
    global _loaded
    if not _loaded:
        from importlib.metadata import entry_points

        for mod in BUILTIN_MODULES:
            importlib.import_module(f"{__package__}.{mod}")
        for ep in entry_points(group=ENTRY_POINTS):
            try:
                ep.load()
            except Exception as e:  # noqa: BLE001 - a broken plug-in is named, with its reason
                dist = getattr(ep.dist, "name", "?")
                raise InputError(
                    f"the metric module {ep.value!r} of the installed package {dist} cannot be imported "
                    f"({type(e).__name__}: {e})",
                    what=f"entry point {ENTRY_POINTS}:{ep.name}",
                    fix=f"fix or uninstall {dist}",
                ) from e
        _loaded = True
    return list(_entries.values())


def applicable(
    items: Iterable[Item], options: dict | None = None, *, predefined: bool | None = False
) -> list[tuple[MetricEntry, Metric]]:
    """The registered metrics that apply to at least one of ``items`` within their scope, each with its Metric:
    one per item benchmark of ``items`` that the scope covers (:meth:`MetricEntry.covers`; one for :data:`ALL`),
    in registration order, then item order.

    Args:
        items: the run's items.
        options: the run's metric options (:meth:`MetricEntry.build`).
        predefined: False (default): the metrics the customisation agent may add; True: benchmarks' predefined
            metrics only; None: both.

    Returns:
        ``(entry, Metric)`` pairs.
    """
    items = list(items)
    benches = list(dict.fromkeys(i.benchmark for i in items))
    out = []
    for e in entries():
        if predefined is not None and e.predefined != predefined:
            continue
        for b in [ALL] if e.scope == ALL else [b for b in benches if e.covers(b)]:
            own = items if b == ALL else [i for i in items if i.benchmark == b]
            m = e.build(options, None if b == ALL else b)
            if any(m.applies(i) for i in own):
                out.append((e, m))
    return out


def module_metrics(module: str, options: dict | None = None) -> list[Metric]:
    """The metrics the module named ``module`` registered, in registration order, built with ``options`` and not
    restricted to a scope (what a metric module's ``metrics(options)`` returns, e.g. for its tests)."""
    with _lock:
        mine = sorted((e for e in _entries.values() if e.module == module), key=lambda e: e.order)
    return [e.factory(options or {}) for e in mine]


def find(key: MetricKey) -> MetricEntry | None:
    """The registered metric ``key``, or None."""
    entries()
    return _entries.get(tuple(key))  # type: ignore[arg-type]


@dataclass
class Scoped(Metric):
    """``inner`` restricted to the items of one benchmark (``Item.benchmark == scope``): a benchmark's predefined
    metric never scores another benchmark's items in the same run, and two benchmarks' metrics of the same name
    are two metrics.  Specs, scores and corpus scores are ``inner``'s."""

    inner: Metric
    scope: str
    specs: list = field(init=False)
    corpus_specs: list = field(init=False)

    def __post_init__(self) -> None:
        self.specs = list(self.inner.specs)
        self.corpus_specs = list(self.inner.corpus_specs)

    @property
    def key(self) -> MetricKey:
        return (self.scope, self.inner.name)

    def applies(self, item: Item) -> bool:
        return item.benchmark == self.scope and self.inner.applies(item)

    async def score(self, item: Item, response: Response, ctx: ScoringContext) -> list[Score]:
        return await self.inner.score(item, response, ctx)

    def corpus(self, items: dict[str, Item], responses: Sequence[Response], scores: Sequence[Score]) -> list[Score]:
        own = {k: i for k, i in items.items() if i.benchmark == self.scope}
        return self.inner.corpus(
            own, [r for r in responses if r.item_id in own], [s for s in scores if s.item_id in own]
        )


def key_of(m: Metric) -> MetricKey:
    """The key of a built Metric: its scope (a :class:`Scoped` one's benchmark, else :data:`ALL`) and its name.

    Args:
        m: a built Metric.

    Returns:
        ``(scope, name)``.
    """
    return m.key if isinstance(m, Scoped) else (ALL, m.name)
