"""The metric registry: every metric, declared once where it is defined with ``@metric`` (a function ``(item, response)
-> MetricResult``, a Metric subclass built per run with ``cls.from_options(options)``, or a built Metric).  Scope
:data:`ALL` offers it to the customisation agent for any benchmark; a benchmark name restricts it to that benchmark's
items (and ``"jsonl:qa"``'s for ``"jsonl"``).  :func:`_discover` finds the declaring modules and entry points."""

from __future__ import annotations

import importlib
import pkgutil
import re
import threading
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

from ..core import InputError, Item, MetricSpec, Response, Score
from .base import FunctionMetric, Metric, ScoringContext

ALL = "*"  # The scope of a metric that applies to the items of every benchmark (its specs' tasks still apply).

MetricKey = tuple[str, str]  # (scope, name): how a plan names a metric

Offer = Callable[[dict | None, Any], str | None]
"""``offer(options, tools)`` -> where the metric can work in this run (a phrase shown to the agent), or None."""

ENTRY_POINTS = "sgieval.metrics"  # entry-point group of installed packages' metric modules

DECLARES = "@metric("  # how :func:`_discover` knows a module of this package declares a metric

T = TypeVar("T")


@dataclass(frozen=True)
class MetricEntry:
    """One declared metric.

    Attributes:
        qualities: quality -> request patterns (case-insensitive regexes on word boundaries), all of which must occur.
        make: ``make(options) -> Metric``.
        offer: when the agent model may choose it (:data:`Offer`); None: always.
        unavailable: why it is not offered when ``offer`` says no.
        origin: ``module.qualname`` of what was declared, to tell a re-declaration from a clash.
    """

    name: str
    scope: str
    specs: tuple[MetricSpec, ...]
    corpus: tuple[MetricSpec, ...]
    qualities: Mapping[str, tuple[str, ...]]
    make: Callable[[dict], Metric]
    offer: Offer | None = None
    unavailable: str = ""
    module: str = ""
    origin: str = ""

    @property
    def key(self) -> MetricKey:
        return (self.scope, self.name)

    @property
    def predefined(self) -> bool:
        """True for a benchmark's metric, False for one the agent may add."""
        return self.scope != ALL

    @property
    def all_specs(self) -> list[MetricSpec]:
        """Per-item specs, then corpus-level specs."""
        return [*self.specs, *self.corpus]

    def asked(self, request: str) -> list[str]:
        """The qualities of this metric that ``request`` names.

        Args:
            request: the request.

        Returns:
            The named qualities, in declaration order.
        """
        return [
            q
            for q, pats in self.qualities.items()
            if pats and all(re.search(rf"\b(?:{p})\b", request or "", flags=re.I) for p in pats)
        ]

    def where(self, options: dict | None, tools: Any = None) -> str | None:
        """:attr:`offer` for this run.

        Args:
            options: the run's metric options.
            tools: the run's tool pool.

        Returns:
            The offer text, "" without a condition, or None when the metric cannot run.
        """
        return "" if self.offer is None else self.offer(options, tools)

    def build(self, options: dict | None = None, item_benchmark: str | None = None) -> Metric:
        """The Metric for a run.

        Args:
            options: the run's metric options.
            item_benchmark: the benchmark whose items it scores (default: the scope; none for :data:`ALL`).

        Returns:
            The Metric (a :class:`Scoped` one when restricted).

        Raises:
            TypeError: the declaration built no Metric, or one of another name.
        """
        m = self.make(options or {})
        if not isinstance(m, Metric) or m.name != self.name:
            raise TypeError(f"metric {self.origin} must build a Metric named {self.name!r}")
        scope = item_benchmark or (None if self.scope == ALL else self.scope)
        return m if scope is None else Scoped(m, scope)


_lock = threading.RLock()
_entries: dict[MetricKey, MetricEntry] = {}
_loaded = False


def _patterns(qualities: Sequence[str] | Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    if isinstance(qualities, Mapping):
        return {str(q): tuple(p) for q, p in qualities.items()}
    return {str(q): (re.escape(str(q)),) for q in qualities}


def _declared(target: Any, specs: Sequence[MetricSpec], corpus: Sequence[MetricSpec]) -> tuple[Any, str]:
    """``(make, origin)`` of a declared function, Metric class or Metric."""
    if isinstance(target, Metric):
        if specs or corpus:
            raise TypeError("a built Metric declares its own specs: pass none to metric()")
        return (lambda options: target), f"{type(target).__module__}.{type(target).__qualname__}"
    if not specs:
        raise TypeError(f"metric() needs the specs {getattr(target, '__qualname__', target)!r} scores")
    origin = f"{target.__module__}.{target.__qualname__}"
    if isinstance(target, type) and issubclass(target, Metric):
        target.specs, target.corpus_specs = list(specs), list(corpus)
        return target.from_options, origin
    if corpus or not callable(target):
        raise TypeError(f"{origin}: a function metric has no corpus specs; declare a Metric class for them")
    return (lambda options: FunctionMetric(list(specs), target)), origin


def metric(
    *specs: MetricSpec,
    corpus: Sequence[MetricSpec] = (),
    scope: str = ALL,
    qualities: Sequence[str] | Mapping[str, Sequence[str]] = (),
    offer: Offer | None = None,
    unavailable: str = "",
) -> Callable[[T], T]:
    """Declare the decorated function, Metric class or built Metric as a metric, returned unchanged (a class gets the
    declared ``specs`` and ``corpus_specs``).

    Args:
        specs: the per-item specs it scores (none for a built Metric).
        corpus: the specs of its corpus-level scores.
        scope: :data:`ALL` or one benchmark name.
        qualities: the qualities a request names it by, or quality -> request patterns.
        offer, unavailable: see :class:`MetricEntry`.

    Returns:
        The decorator.

    Raises:
        InputError: another metric of that name is declared in that scope.
        TypeError: specs missing for a function or class, given for a built Metric, or corpus specs for a function.
    """

    def register(target: T) -> T:
        make, origin = _declared(target, specs, corpus)
        own = (target.specs, target.corpus_specs) if isinstance(target, Metric) else (specs, corpus)
        entry = MetricEntry(
            name=own[0][0].name,
            scope=scope,
            specs=tuple(own[0]),
            corpus=tuple(own[1]),
            qualities=_patterns(qualities),
            make=make,
            offer=offer,
            unavailable=unavailable,
            module=target.__module__,
            origin=origin,
        )
        with _lock:
            old = _entries.get(entry.key)
            if old is not None and old.origin != entry.origin:
                raise InputError(
                    f"metric {entry.name!r} (scope {scope!r}) is registered twice ({old.origin} and {origin})",
                    what="metric registry",
                    fix="give one of the metrics another name",
                )
            _entries[entry.key] = entry
        return target

    return register


def unregister(key: MetricKey) -> None:
    """Forget the metric ``key``; no error when unknown."""
    with _lock:
        _entries.pop(tuple(key), None)  # type: ignore[arg-type]


def unregister_scope(scope: str) -> None:
    """Forget every metric of ``scope``.

    Args:
        scope: a benchmark name.
    """
    with _lock:
        for key in [k for k in _entries if k[0] == scope]:
            del _entries[key]


def _discover() -> None:
    """Import every module of this package that declares a metric, then those of installed entry points."""
    root = importlib.import_module(__package__)
    for info in pkgutil.walk_packages(root.__path__, f"{__package__}."):
        path = Path(getattr(info.module_finder, "path", "")) / info.name.rsplit(".", 1)[-1]
        source = path / "__init__.py" if info.ispkg else path.with_suffix(".py")
        if source.is_file() and DECLARES in source.read_text(encoding="utf-8", errors="replace"):
            importlib.import_module(info.name)
    for ep in metadata.entry_points(group=ENTRY_POINTS):
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


def entries() -> list[MetricEntry]:
    """Every declared metric, in declaration order (:func:`_discover` runs on the first call).

    Returns:
        The entries.

    Raises:
        InputError: an installed package's metric module cannot be imported.
    """
    global _loaded
    with _lock:
        if not _loaded:
            _discover()
            _loaded = True
        return list(_entries.values())


def find(key: MetricKey) -> MetricEntry | None:
    """The metric ``key`` (``(scope, name)``), or None."""
    entries()
    return _entries.get(tuple(key))  # type: ignore[arg-type]


def applicable(items: Iterable[Item], options: dict | None = None) -> list[tuple[MetricEntry, Metric]]:
    """The declared metrics the agent may add (:data:`ALL`) that apply to at least one of ``items`` (a benchmark's
    own metrics are built by ``sgieval.benchmarks.registry.predefined_metrics``).

    Args:
        items: the run's items.
        options: the run's metric options.

    Returns:
        ``(entry, Metric)`` pairs.
    """
    items = list(items)
    built = [(e, e.build(options)) for e in entries() if not e.predefined]
    return [(e, m) for e, m in built if any(m.applies(i) for i in items)]


@dataclass
class Scoped(Metric):
    """``inner`` restricted to the items of one benchmark (``Item.benchmark == scope``)."""

    inner: Metric
    scope: str
    specs: list = field(init=False)
    corpus_specs: list = field(init=False)

    def __post_init__(self) -> None:
        self.specs, self.corpus_specs = list(self.inner.specs), list(self.inner.corpus_specs)

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
    """The key of a built Metric.

    Args:
        m: a built Metric.

    Returns:
        ``(scope, name)``.
    """
    return m.key if isinstance(m, Scoped) else (ALL, m.name)
