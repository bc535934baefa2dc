"""What a report is built from: one :class:`ReportContext` (the run's records and report settings, and the statistics
the reporting agent computed), read by every section builder and the Answer; metric-pool functions a section
calls are reached through :class:`Statistics`, so ``reports/`` imports only ``core``."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from ..core import Item, MetricSpec, Response, Score, submit_to_worker
from .blocks import Block, Figure
from .ranking import Coverage, ModelStat, SgiRow, by_metric, tie_groups


@dataclass
class RecheckResult:
    """Stored judgements re-decided (``--recheck``): one ``metric_pool.recheck.RecheckRow`` per target model and the
    ranking by accepted answers, stored and re-decided."""

    embedder: str
    rows: list[Any]
    stored: list[str]
    ours: list[str]
    changed: bool


class Statistics(Protocol):
    """The metric-pool computations a section or the Answer calls, each the ``metric_pool`` function of its name
    (``agents.reporting.POOL`` provides them); ``recheck`` is None without stored SciAidanBench records."""

    facets: Sequence[str]  # metric_pool.differences.FACETS
    power_method: str  # metric_pool.stats.METHOD

    def facet_winners(
        self,
        values: dict[str, dict[str, float]],
        facet_of: dict[str, str],
        facet: str,
        *,
        higher_is_better: bool,
        n_resamples: int,
        seed: int,
    ) -> list[Any]: ...

    def lead_sources(
        self, values: dict[str, dict[str, float]], facet_of: dict[str, str], facet: str, a: str, b: str
    ) -> list[Any]: ...

    def order_departures(
        self, values: dict[str, dict[str, float]], overall: dict[str, float], *, higher_is_better: bool, limit: int
    ) -> list[Any]: ...

    def items_to_separate(self, diffs: list[float]) -> Any: ...

    def paired_test(self, a: dict[str, float], b: dict[str, float], *, n_resamples: int, seed: int) -> Any: ...

    def holm(self, p_values: Sequence[float]) -> list[float]: ...

    def label_estimates(self, scores: list[Score], labels: list[Any], spec: MetricSpec) -> Any: ...

    def recheck(self, responses: list[Response], embedding_model: str) -> RecheckResult | None: ...


@dataclass
class ReportContext:
    """Everything a report is built from.

    The caller gives the run's records and settings: ``header`` (the Run table), ``primary`` (the ranking metric),
    ``custom`` (custom rubric metrics), ``warnings`` (stated at the top), ``focus`` (the one model asked about),
    ``stand_in`` (why the ranking metric stands in for the asked quality), ``settled`` (``--until-settled``'s stop).
    The reporting agent then sets the statistics: ``stats`` (ranking order), ``pairs`` (adjacent
    :func:`~.ranking.pair_entry`), ``leader_tests`` (the leader against each model tied for second), ``sgi`` (None
    without SGI-Bench items) and ``pool``.  ``notes`` collects Limitations lines builders add."""

    run_dir: Path
    header: dict[str, Any]
    items: list[Item]
    responses: list[Response]
    scores: list[Score]
    specs: list[MetricSpec]
    primary: str
    models: list[str]
    custom: set[str] = field(default_factory=set)
    judges: list[str] = field(default_factory=list)
    allow_self_judge: bool = False
    warnings: list[str] = field(default_factory=list)
    n_resamples: int = 10000
    seed: int = 0
    usage: dict[str, Any] | None = None
    focus: str | None = None
    stand_in: str = ""
    recheck: bool = False
    embedding_model: str = "minilm"
    settled: dict[str, Any] | None = None
    added_judges: list[str] = field(default_factory=list)
    added_scores: list[Score] = field(default_factory=list)
    stats: list[ModelStat] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)
    leader_tests: dict[str, dict[str, Any]] = field(default_factory=dict)
    coverage: Coverage | None = None
    ranking_scores: list[Score] = field(default_factory=list)
    sgi: list[SgiRow] | None = None
    reliability: list[dict[str, Any]] = field(default_factory=list)
    usage_estimate: list[Block] = field(default_factory=list)
    pool: Statistics | None = None
    notes: list[str] = field(default_factory=list)
    _pending: list[tuple[Figure, Callable[[], Any]]] = field(default_factory=list, repr=False)

    @functools.cached_property
    def spec(self) -> MetricSpec:
        """The ranking metric's spec (``primary``, else the first of ``specs``)."""
        return next((s for s in self.specs if s.name == self.primary), None) or self.specs[0]

    @property
    def request(self) -> str:
        """The researcher's request ("" for none)."""
        return str(self.header.get("request", "") or "")

    @property
    def ranked(self) -> list[ModelStat]:
        """The models with a valid score for the ranking metric, in ranking order."""
        return [s for s in self.stats if s.summary is not None]

    @property
    def groups(self) -> list[list[ModelStat]]:
        """The ranked models in groups that share a rank, best first."""
        return tie_groups(self.ranked, self.pairs)

    @property
    def model_order(self) -> list[str]:
        """Every target model in ranking order (unscored ones last)."""
        return [s.model for s in self.stats]

    @functools.cached_property
    def by_id(self) -> dict[str, Item]:
        """The items by id."""
        return {i.id: i for i in self.items}

    @functools.cached_property
    def grouped(self) -> dict[str, list[Score]]:
        """The scores grouped by metric name."""
        return dict(by_metric(self.scores))

    def figure(self, rel: str, alt: str, draw: Callable[..., Any], *args: Any, **kw: Any) -> Figure:
        """Start drawing ``draw(run_dir / rel, *args, root=run_dir, **kw)`` (in the warm worker when there is one).

        Args:
            rel: the figure's path below the run folder.
            alt: its alt text.
            draw: the chart function.
            args: its arguments.
            kw: its keyword arguments.

        Returns:
            The Figure block (:meth:`finish_figures` waits for its file).
        """
        fig = Figure(rel, alt)
        try:
            pending = submit_to_worker(draw, self.run_dir / rel, *args, root=self.run_dir, **kw)
        except Exception as e:  # noqa: BLE001 - a failed chart must not lose the report
            pending = functools.partial(_reraise, e)
        self._pending.append((fig, pending))
        return fig

    def finish_figures(self) -> set[int]:
        """Wait for the figures of :meth:`figure` in start order, noting each one whose drawing raised.

        Returns:
            The ids of the Figure blocks whose file was not written.
        """
        missing: set[int] = set()
        for fig, pending in self._pending:
            try:
                path = pending()
            except Exception as e:  # noqa: BLE001 - a failed chart must not lose the report
                self.notes.append(f"Figure {fig.path} could not be drawn: {type(e).__name__}: {e}")
                path = None
            if path is None or not Path(path).is_file():
                missing.add(id(fig))
        self._pending.clear()
        return missing


def _reraise(e: Exception) -> Any:
    raise e
