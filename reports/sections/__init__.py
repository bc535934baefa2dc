"""The report's sections, one module per section in this package, each declaring its builder with :func:`section`::

    @section("my_section", title="My section", before="criteria")
    def my_section(ctx: ReportContext) -> Section | None:
        return Section("my_section", "My section", [Text("One sentence.")])

A builder returns a Section, a list of them, or None; one that raises loses only its own section.  A section is
placed directly ``after`` (or ``before``) the section it names, first when it names none; two sections cannot take
the same place (to go between ``a`` and the ``b`` after it, name ``before="b"``)."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable, Sequence, Union

from ..blocks import Section
from ..context import ReportContext

Built = Union[Section, Sequence[Section], None]


@dataclass(frozen=True)
class SectionBuilder:
    """A declared section, built from the context and placed directly ``after`` or ``before`` another."""

    name: str
    title: str
    build: Callable[[ReportContext], Built]
    after: str = ""
    before: str = ""


def section(name: str, *, title: str, after: str = "", before: str = "") -> Callable[[Callable], SectionBuilder]:
    """Declare the decorated function as the builder of section ``name``.

    Args:
        name: the section's unique name (its key in ``report.json``).
        title: what the section shows, in a few words.
        after: the section it comes directly after.
        before: the section it comes directly before (instead of ``after``).

    Returns:
        A decorator that returns the :class:`SectionBuilder`.

    Raises:
        ValueError: both ``after`` and ``before`` are given, or no title.
    """
    if after and before:
        raise ValueError(f"report section {name!r}: give after= or before=, not both")
    if not title:
        raise ValueError(f"report section {name!r} needs a title")

    def deco(fn: Callable[[ReportContext], Built]) -> SectionBuilder:
        return SectionBuilder(name, title, fn, after, before)

    return deco


def builders() -> list[SectionBuilder]:
    """Every section declared by a module of this package, in report order.

    Returns:
        The builders.

    Raises:
        ValueError: two sections share a name or a place, a neighbour is not a section, or the places form a cycle.
    """
    found: dict[str, SectionBuilder] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for b in vars(module).values():
            if isinstance(b, SectionBuilder) and found.setdefault(b.name, b) is not b:
                raise ValueError(
                    f"report section {b.name!r} is declared twice ({module.__name__}); choose another name"
                )
    return _placed(found)


def _placed(found: dict[str, SectionBuilder]) -> list[SectionBuilder]:
    """``found`` in the order its neighbours declare."""
    next_to: dict[tuple[str, str], SectionBuilder] = {}
    roots = []
    for b in sorted(found.values(), key=lambda b: b.name):
        side, anchor = ("after", b.after) if b.after else ("before", b.before)
        if not anchor:
            roots.append(b)
            continue
        if anchor not in found:
            raise ValueError(f"report section {b.name!r} is placed {side} {anchor!r}, which is not a report section")
        taken = next_to.setdefault((side, anchor), b)
        if taken is not b:
            raise ValueError(
                f"report sections {taken.name!r} and {b.name!r} are both placed directly {side} {anchor!r}; "
                f"place {b.name!r} {'before' if side == 'after' else 'after'} {taken.name!r} instead"
            )
    out: list[SectionBuilder] = []

    def place(b: SectionBuilder) -> None:
        if ("before", b.name) in next_to:
            place(next_to[("before", b.name)])
        out.append(b)
        if ("after", b.name) in next_to:
            place(next_to[("after", b.name)])

    for b in roots:
        place(b)
    if len(out) != len(found):
        raise ValueError(f"report sections placed in a cycle: {sorted(set(found) - {b.name for b in out})}")
    return out


def build_sections(ctx: ReportContext) -> list[Section]:
    """Run every section's builder on ``ctx`` in report order; one that raises adds a note to ``ctx.notes`` instead.

    Args:
        ctx: the report context.

    Returns:
        The sections in display order.
    """
    out: list[Section] = []
    for b in builders():
        try:
            got = b.build(ctx)
        except Exception as e:  # noqa: BLE001 - one failed section must not lose the report
            ctx.notes.append(f"Report section {b.name} could not be built: {type(e).__name__}: {e}")
            continue
        if got is not None:
            out.extend([got] if isinstance(got, Section) else list(got))
    missing = ctx.finish_figures()
    for sec in out:
        sec.blocks = [b for b in sec.blocks if id(b) not in missing]
    return out
