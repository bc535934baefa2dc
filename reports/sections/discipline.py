"""By discipline: the ranking metric per discipline of the scored items (none when they share one)."""

from __future__ import annotations

from ..blocks import Section
from ..breakdown import facet_section
from ..context import ReportContext
from . import section


@section("discipline", title="By discipline", after="criteria")
def discipline_section(ctx: ReportContext) -> Section | None:
    """The ranking metric by discipline (None when the items share one discipline)."""
    return facet_section(ctx, "discipline")
