"""Report sections as typed plug-ins: a :class:`Section` (title, then an ordered list of blocks: sentences,
sub-headings, typed tables, figures) made by a registered builder.

A new section is one builder function and one registration::

    @report_section("my_section", order=75)
    def my_section(ctx: ReportContext) -> Section | None:
        return Section("my_section", "My section", [Text("One sentence."), Table(["model", "x"], [["m", "1"]])])

Every registered builder runs in ``order`` (ties by name) when a report is built; what it returns (a Section, a
list of them, or None for "nothing to show") is rendered by the Markdown template, written to ``report.json``
(:meth:`Section.to_dict`), shown by the HTML viewer, and read by the narrative's fact check
(:meth:`Section.text`).  A builder that raises loses only its own section: the report says which one failed and
why (:func:`build_sections`).

The anchor is pydantic_evals' ``ReportEvaluator`` / ``TableResult``: a section is data, rendered elsewhere.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence, Union

from ..core import Item, MetricSpec, Response, Score
from ..core import submit_to_worker
from .render import markdown_table

if TYPE_CHECKING:
    from .build import ModelStat

__all__ = [
    "ANSWER_PARTS",
    "Figure",
    "Heading",
    "ReportContext",
    "Section",
    "SectionBuilder",
    "Table",
    "Text",
    "build_sections",
    "register_section",
    "registered_sections",
    "report_section",
    "unregister_section",
]


# ----------------------------------------------------------------------------- blocks
@dataclass
class Text:
    """A paragraph of full sentences (Markdown inline marks allowed: ``**bold**``, ``code``)."""

    text: str
    kind: str = field(default="text", init=False)

    def markdown(self) -> str:
        """The paragraph as Markdown.

        Returns:
            ``text`` as it is.
        """
        return self.text


@dataclass
class Heading:
    """A sub-heading inside a section (rendered ``### text``)."""

    text: str
    kind: str = field(default="heading", init=False)

    def markdown(self) -> str:
        """``### text``.

        Returns:
            The heading line.
        """
        return f"### {self.text}"


@dataclass
class Table:
    """A typed table: ``headers`` (column names) and ``rows`` (one list of cells per row, each cell the text the
    report prints, e.g. ``"0.60"``, ``"2="``, ``"n/a"``); ``name`` a stable id for tests and the viewer."""

    headers: list[str]
    rows: list[list[Any]]
    name: str = ""
    kind: str = field(default="table", init=False)

    def __post_init__(self) -> None:
        for k, r in enumerate(self.rows):
            if len(r) != len(self.headers):
                raise ValueError(
                    f"table {self.name or self.headers!r}: row {k} has {len(r)} cells for {len(self.headers)} columns"
                )

    def markdown(self) -> str:
        """The table as GitHub Markdown (:func:`~sgieval.reports.render.markdown_table`).

        Returns:
            The table text.
        """
        return markdown_table(self.headers, self.rows)


@dataclass
class Figure:
    """A figure file under the run folder (``path`` relative to it, e.g. ``figures/ranking.png``)."""

    path: str
    alt: str
    kind: str = field(default="figure", init=False)

    def markdown(self) -> str:
        """``![alt](path)``.

        Returns:
            The image line.
        """
        return f"![{self.alt}]({self.path})"


Block = Union[Text, Heading, Table, Figure]

ANSWER_PARTS = ("how_sure", "where", "caveats")
"""The Answer's list items a section may add sentences to (besides the fixed verdict)."""


@dataclass
class Section:
    """One section of the report.

    ``key``: stable id (``"ranking"``, ``"metrics"``, ``"usage"``...); ``title``: the ``##`` heading;
    ``blocks``: its content in order; ``answer``: sentences the section adds to the Answer, by part of
    :data:`ANSWER_PARTS` (``{"caveats": ["..."]}``); ``leads``: the request asked what this section answers, so
    its "where" sentences come right after the Answer's verdict."""

    key: str
    title: str
    blocks: list[Block] = field(default_factory=list)
    answer: dict[str, list[str]] = field(default_factory=dict)
    leads: bool = False

    def __post_init__(self) -> None:
        bad = set(self.answer) - set(ANSWER_PARTS)
        if bad:
            raise ValueError(f"section {self.key!r}: unknown Answer part(s) {sorted(bad)}; use {ANSWER_PARTS}")

    @property
    def tables(self) -> list[Table]:
        """The section's tables, in order."""
        return [b for b in self.blocks if isinstance(b, Table)]

    @property
    def figures(self) -> list[Figure]:
        """The section's figures, in order."""
        return [b for b in self.blocks if isinstance(b, Figure)]

    @property
    def sentences(self) -> list[str]:
        """The section's paragraphs, in order."""
        return [b.text for b in self.blocks if isinstance(b, Text)]

    def table(self, name: str) -> Table | None:
        """The table named ``name``, or None.

        Args:
            name: a table name.

        Returns:
            The table, or None.
        """
        return next((t for t in self.tables if t.name == name), None)

    def markdown(self) -> str:
        """The section as Markdown: ``## title`` then every block, separated by blank lines.

        Returns:
            The Markdown text.
        """
        return "\n\n".join([f"## {self.title}", *(b.markdown() for b in self.blocks)])

    def text(self) -> str:
        """Everything the section states (title, sentences, tables; not the figures), for the fact check.

        Returns:
            The text.
        """
        return "\n".join([self.title, *(b.markdown() for b in self.blocks if not isinstance(b, Figure))])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``report.json``, the template, the viewer): ``{"key", "title", "blocks": [{"kind",
        ...fields}], "answer"}``.

        Returns:
            The dict.
        """
        blocks = []
        for b in self.blocks:
            if isinstance(b, Table):
                blocks.append({"kind": "table", "name": b.name, "headers": list(b.headers), "rows": b.rows})
            elif isinstance(b, Figure):
                blocks.append({"kind": "figure", "path": b.path, "alt": b.alt})
            else:
                blocks.append({"kind": b.kind, "text": b.text})
        return {"key": self.key, "title": self.title, "blocks": blocks, "answer": self.answer, "leads": self.leads}


# ----------------------------------------------------------------------------- what a builder reads
@dataclass
class ReportContext:
    """What a section builder reads: the run's records, the ranking and its statistics, and ``options``
    (builder-specific inputs handed in by the caller, e.g. ``"usage"``: the ledger summary, ``"sgi"``: SGI-Score
    rows, ``"seed"``, ``"n_resamples"``).  ``notes`` collects Limitations lines a builder adds (a figure that
    could not be drawn)."""

    run_dir: Path
    header: dict[str, Any]
    items: list[Item]
    responses: list[Response]
    scores: list[Score]
    specs: list[MetricSpec]
    spec: MetricSpec
    stats: list[ModelStat]
    pairs: list[dict[str, Any]] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    custom: set[str] = field(default_factory=set)
    judges: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    _pending: list[tuple[Figure, Callable[[], Any]]] = field(default_factory=list, repr=False)

    def figure(self, rel: str, alt: str, draw: Callable[..., Any], *args: Any, **kw: Any) -> Figure:
        """Start drawing ``draw(run_dir / rel, *args, root=run_dir, **kw)`` (no link followed below the run folder;
        in the warm worker when there is one, so it draws
        while the other sections are built) and return its :class:`Figure` block.  :func:`build_sections` waits
        for every started figure and drops the block of one whose file was not written, with a note when drawing
        raised (a failed chart must not lose the report).

        Args:
            rel: the figure's path below the run folder.
            alt: its alt text.
            draw: the chart function.
            args: its arguments.
            kw: its keyword arguments.

        Returns:
            The Figure block.
        """
        fig = Figure(rel, alt)
        try:
            pending = submit_to_worker(draw, self.run_dir / rel, *args, root=self.run_dir, **kw)
        except Exception as e:  # noqa: BLE001 - a failed chart must not lose the report
            pending = functools.partial(_reraise, e)
        self._pending.append((fig, pending))
        return fig

    def finish_figures(self) -> set[int]:
        """Wait for the figures started with :meth:`figure` (in start order); returns the ids of the Figure
        blocks whose file was not written, and notes each one whose drawing raised.

        Returns:
            The ids of the Figure blocks without a file.
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

    @functools.cached_property
    def by_id(self) -> dict[str, Item]:
        """The items by id."""
        return {i.id: i for i in self.items}

    @functools.cached_property
    def grouped(self) -> dict[str, list[Score]]:
        """The scores grouped by metric name (one pass)."""
        out: dict[str, list[Score]] = {}
        for s in self.scores:
            out.setdefault(s.metric, []).append(s)
        return out

    @property
    def ranked(self) -> list[ModelStat]:
        """The models with a valid score for the ranking metric, in ranking order."""
        return [s for s in self.stats if s.summary is not None]

    @property
    def model_order(self) -> list[str]:
        """Every target model in ranking order (unscored ones last)."""
        return [s.model for s in self.stats]


Built = Union["Section", Sequence["Section"], None]


@dataclass(frozen=True)
class SectionBuilder:
    """A registered builder: ``name`` (unique), ``order`` (sections are built and shown by ascending order, ties
    by name), ``build`` (``ReportContext -> Section | list[Section] | None``)."""

    name: str
    order: float
    build: Callable[[ReportContext], Built]


_BUILDERS: dict[str, SectionBuilder] = {}
"""The section registry (declarations filled at import time, like the benchmark registry; no run state)."""


def register_section(name: str, build: Callable[[ReportContext], Built], *, order: float) -> SectionBuilder:
    """Register ``build`` as the builder of section ``name``, shown at position ``order``.

    Built-in orders: ranking 10, coverage 12, who wins where 15, SGI-Score 20, all metrics 30, rubric breakdowns 40, by discipline 50, by task
    60, cost and usage 70, judge reliability 80, retrieved works 90, stored judgements rechecked 100, metric
    definitions 110.

    Args:
        name: unique builder name.
        build: the builder.
        order: position; lower is earlier.

    Returns:
        The registered :class:`SectionBuilder`.

    Raises:
        ValueError: ``name`` is already registered to another function (re-registering the same function, e.g.
            on a module reload, replaces it).
    """
    old = _BUILDERS.get(name)
    if old is not None and getattr(old.build, "__qualname__", None) != getattr(build, "__qualname__", None):
        raise ValueError(f"report section {name!r} is already registered by {old.build!r}; choose another name")
    if not math.isfinite(order):
        raise ValueError(f"report section {name!r}: order must be a finite number, got {order!r}")
    _BUILDERS[name] = SectionBuilder(name, float(order), build)
    return _BUILDERS[name]


def report_section(name: str, *, order: float) -> Callable[[Callable[[ReportContext], Built]], Callable]:
    """Decorator form of :func:`register_section`; returns the function unchanged.

    Args:
        name: the section's key.
        order: its place among the sections (lower first).

    Returns:
        The decorator.
    """

    def deco(fn: Callable[[ReportContext], Built]) -> Callable[[ReportContext], Built]:
        register_section(name, fn, order=order)
        return fn

    return deco


def unregister_section(name: str) -> None:
    """Remove the builder ``name`` (no error when absent).

    Args:
        name: the section's key.
    """
    _BUILDERS.pop(name, None)


def registered_sections() -> list[SectionBuilder]:
    """Every registered builder, in the order their sections appear.

    Returns:
        The builders.
    """
    return sorted(_BUILDERS.values(), key=lambda b: (b.order, b.name))


def build_sections(ctx: ReportContext) -> list[Section]:
    """Run every registered builder on ``ctx`` in order and collect their sections.

    A builder that raises adds a note to ``ctx.notes`` naming the section and the error, and the report goes on
    without that section (a failed section must not lose the report).

    Returns:
        The sections in display order.
    """
    out: list[Section] = []
    for b in registered_sections():
        try:
            got = b.build(ctx)
        except Exception as e:  # noqa: BLE001 - one failed section must not lose the report
            ctx.notes.append(f"Report section {b.name} could not be built: {type(e).__name__}: {e}")
            continue
        if got is None:
            continue
        out.extend([got] if isinstance(got, Section) else list(got))
    missing = ctx.finish_figures()
    for sec in out:
        sec.blocks = [b for b in sec.blocks if id(b) not in missing]
    return out


def _reraise(e: Exception) -> Any:
    raise e
