"""The metric registry: the metrics a run may choose beyond its benchmarks' predefined ones, each registered with
a decorator that declares its scope and the qualities it measures (as inspect_ai's ``@scorer``).

A new metric is one module with one decorated factory; importing the module registers it::

    from sgieval.metric_pool.base import FunctionMetric, MetricResult
    from sgieval.metric_pool.registry import metric

    @metric(qualities={"conciseness": (r"concise(?:ness)?|brief",)})
    def brevity(options=None):
        return FunctionMetric(SPEC, lambda item, response: MetricResult(value=..., rationale=...))

An installed package adds its metric modules under the entry-point group ``sgieval.metrics``.  The customisation
agent sees every registered metric that applies to the selected items (scope ``"*"``, or the
benchmark of some of them) and chooses one when the request names a quality it measures.  A run's plan names every
metric by its key ``(scope, name)``: a benchmark's predefined metrics have that benchmark's item name as scope
(``"sgi-bench"``, ``"jsonl:qa"``) and score its items only, so two benchmarks that both define ``exact_match``
each score their own items (:class:`Scoped`).
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
"""Modules of ``sgieval.metric_pool`` whose registrations are loaded on the registry's first use."""

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
        factory: ``factory(options) -> Metric`` (``options``: this metric's entry of the run's metric options).
        offer: when the agent model may choose it (:data:`Offer`); None: always.
        unavailable: why it is not offered when ``offer`` says no (shown in the plan's notes), e.g.
            "retrieval novelty needs --corpus <folder> or the search tool".
        module: the module that registered it.
    """

    name: str
    scope: str
    qualities: Mapping[str, tuple[str, ...]]
    factory: Callable[[dict | None], Metric]
    offer: Offer | None = None
    unavailable: str = ""
    module: str = ""

    @property
    def key(self) -> MetricKey:
        return (self.scope, self.name)

    def asked(self, request: str) -> list[str]:
        """The qualities of this metric that ``request`` names, in declaration order."""
        return [
            q
            for q, pats in self.qualities.items()
            if pats and all(re.search(rf"\b(?:{p})\b", request or "", flags=re.I) for p in pats)
        ]

    def where(self, options: dict | None, tools: Any = None) -> str | None:
        """:attr:`offer` for this run; "" when the metric declares no condition."""
        return "" if self.offer is None else self.offer(options, tools)

    def build(self, options: dict | None = None) -> Metric:
        """The Metric (restricted to the scope's items unless the scope is :data:`ALL`).

        Raises:
            TypeError: the factory returned no Metric, or one of another name.
        """
        m = self.factory((options or {}).get(self.name))
        if not isinstance(m, Metric) or m.name != self.name:
            raise TypeError(f"metric factory {self.module}.{self.name} must return a Metric named {self.name!r}")
        return m if self.scope == ALL else Scoped(m, self.scope)


_lock = threading.Lock()
_entries: dict[MetricKey, MetricEntry] = {}
_loaded = False


def metric(
    *,
    scope: str = ALL,
    qualities: Sequence[str] | Mapping[str, Sequence[str]] = (),
    offer: Offer | None = None,
    unavailable: str = "",
) -> Callable[[Callable[[dict | None], Metric]], Callable[[dict | None], Metric]]:
    """Register the decorated factory ``f(options) -> Metric`` as a metric; the factory is returned unchanged.

    Args:
        scope: :data:`ALL` (default: any benchmark's items its specs' tasks apply to) or one item benchmark name.
        qualities: the qualities it measures (``("conciseness",)``), or quality -> request patterns.
        offer, unavailable: see :class:`MetricEntry`.

    Returns:
        The decorator.  The metric's name is the factory's name.

    Raises:
        InputError: another module already registered a metric of that name in that scope.
    """
    quals = (
        {str(q): tuple(p) for q, p in qualities.items()}
        if isinstance(qualities, Mapping)
        else {str(q): (re.escape(str(q)),) for q in qualities}
    )

    def register(factory: Callable[[dict | None], Metric]) -> Callable[[dict | None], Metric]:
        entry = MetricEntry(
            name=factory.__name__,
            scope=scope,
            qualities=quals,
            factory=factory,
            offer=offer,
            unavailable=unavailable,
            module=factory.__module__,
        )
        with _lock:
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


ENTRY_POINTS = "sgieval.metrics"
"""Entry-point group of installed packages' metric modules: each entry names a module whose ``@metric`` factories
register on the registry's first use (``[project.entry-points."sgieval.metrics"] brevity = "mypkg.brevity"``)."""


def entries() -> list[MetricEntry]:
    """Every registered metric: the built-in modules' first, then those of installed packages
    (:data:`ENTRY_POINTS`), then the rest in registration order.

    Raises:
        InputError: an installed package's metric module cannot be imported (naming the package and module).
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


def applicable(items: Iterable[Item], options: dict | None = None) -> list[tuple[MetricEntry, Metric]]:
    """The registered metrics that apply to at least one of ``items`` (within their scope), with their Metric."""
    items = list(items)
    out = []
    for e in entries():
        own = items if e.scope == ALL else [i for i in items if i.benchmark == e.scope]
        if not own:
            continue
        m = e.build(options)
        if any(m.applies(i) for i in own):
            out.append((e, m))
    return out


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
    """The key of a built Metric: its scope (a :class:`Scoped` one's benchmark, else :data:`ALL`) and its name."""
    return m.key if isinstance(m, Scoped) else (ALL, m.name)
