"""core: shared records, errors, the run store and settings (DESIGN.md "Layout").

Imports nothing of ours; every other folder may import what is listed in ``__all__``.
"""

from __future__ import annotations

from .errors import (
    DataNotFoundError,
    InputError,
    ModelCallError,
    OfflineError,
    ParseError,
    SandboxUnavailableError,
    SgievalError,
    ToolError,
)
from .records import (
    CORPUS,
    DEEP_RESEARCH,
    DRY_EXPERIMENT,
    EXPERIMENTAL_REASONING,
    FEASIBILITY,
    GENERIC,
    IDEA_GENERATION,
    OPEN_CREATIVITY,
    SGI_TASKS,
    WET_EXPERIMENT,
    Criterion,
    Item,
    MetricKind,
    MetricSpec,
    Response,
    Rubric,
    RunConfig,
    Score,
    Status,
)
from .replies import final_text, join_reasoning, reply_status, split_reasoning
from .store import BUDGET_STOP_NOTE, RunStore, sync_open_stores

__all__ = [
    "BUDGET_STOP_NOTE", "CORPUS", "DEEP_RESEARCH", "DRY_EXPERIMENT", "EXPERIMENTAL_REASONING", "FEASIBILITY", "GENERIC",
    "IDEA_GENERATION", "OPEN_CREATIVITY", "SGI_TASKS", "WET_EXPERIMENT",
    "Criterion", "DataNotFoundError", "InputError", "Item", "MetricKind", "MetricSpec", "ModelCallError",
    "OfflineError", "ParseError", "Response", "Rubric", "RunConfig", "RunStore", "SandboxUnavailableError",
    "Score", "SgievalError", "Status", "ToolError",
    "final_text", "join_reasoning", "reply_status", "split_reasoning", "sync_open_stores",
]
