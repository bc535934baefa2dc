"""By task: the ranking metric per task of the scored items (none when they share one)."""

from __future__ import annotations

from ..blocks import Section
from ..breakdown import facet_section
from ..context import ReportContext
from . import section


@section("task", title="By task", after="discipline")
def task_section(ctx: ReportContext) -> Section | None:
    """The ranking metric by task (None when the items share one task)."""
    return facet_section(ctx, "task")
