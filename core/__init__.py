"""core: shared records, errors, the run store and settings (DESIGN.md "Layout").

Imports nothing of ours; every other folder may import what is listed in ``__all__``.
"""

from __future__ import annotations

from .errors import (
    CacheCorruptError,
    CredentialsError,
    RunStoppedError,
    DataNotFoundError,
    FieldProblem,
    InputError,
    TamperedFileError,
    ModelCallError,
    OfflineError,
    ParseError,
    SandboxUnavailableError,
    SgievalError,
    ToolError,
    problem_to_input_error,
)
from .files import (
    atomic_write_text,
    disk_error,
    escape_control_chars,
    is_disk_full,
    json_loads_strict,
    plain_name,
    slug_name,
)
from .secrets import redact_secrets, redact_url
from .modelref import ModelRef, same_model
from .records import (
    CORPUS,
    DEEP_RESEARCH,
    DRY_EXPERIMENT,
    EXECUTORS,
    EXPERIMENTAL_REASONING,
    FEASIBILITY,
    GENERIC,
    IDEA_GENERATION,
    OPEN_CREATIVITY,
    SANDBOX_BACKENDS,
    SGI_TASKS,
    TOOL_NAMES,
    WET_EXPERIMENT,
    EVIDENCE_KINDS,
    Criterion,
    Evidence,
    Item,
    JudgeReplyEvidence,
    MetricKind,
    MetricSpec,
    Response,
    RetrievalEvidence,
    Rubric,
    RunConfig,
    SandboxRunEvidence,
    Score,
    Label,
    Status,
    ToolCallEvidence,
    as_evidence,
    criterion_key,
)
from .options import RUN_RECORD, Option, RunOption, option_names, run_options
from .replies import final_text, join_reasoning, reply_status, split_reasoning
from .store import BUDGET_STOP_NOTE, REPORT_PENDING, RUN_LOCK, RunStore, check_state_file, run_holder, sync_open_stores

__all__ = [
    "RUN_RECORD",
    "Option",
    "RunOption",
    "option_names",
    "run_options",
    "BUDGET_STOP_NOTE",
    "CORPUS",
    "DEEP_RESEARCH",
    "DRY_EXPERIMENT",
    "EXECUTORS",
    "EXPERIMENTAL_REASONING",
    "FEASIBILITY",
    "GENERIC",
    "IDEA_GENERATION",
    "OPEN_CREATIVITY",
    "SANDBOX_BACKENDS",
    "SGI_TASKS",
    "TOOL_NAMES",
    "WET_EXPERIMENT",
    "Criterion",
    "DataNotFoundError",
    "FieldProblem",
    "Settings",
    "InputError",
    "TamperedFileError",
    "Item",
    "MetricKind",
    "MetricSpec",
    "ModelRef",
    "ModelCallError",
    "OfflineError",
    "ParseError",
    "Response",
    "Rubric",
    "RunConfig",
    "RunStore",
    "SandboxUnavailableError",
    "Score",
    "Label",
    "SgievalError",
    "Status",
    "ToolError",
    "final_text",
    "join_reasoning",
    "reply_status",
    "split_reasoning",
    "sync_open_stores",
    "current_settings",
    "get_logger",
    "load_settings",
    "run_logging",
    "use_settings",
    "problem_to_input_error",
    "CacheCorruptError",
    "CredentialsError",
    "RunStoppedError",
    "redact_secrets",
    "redact_url",
    "same_model",
    "json_loads_strict",
    "atomic_write_text",
    "disk_error",
    "escape_control_chars",
    "is_disk_full",
    "plain_name",
    "slug_name",
    "REPORT_PENDING",
    "RUN_LOCK",
    "run_holder",
    "check_state_file",
    "criterion_key",
    "EVIDENCE_KINDS",
    "Evidence",
    "JudgeReplyEvidence",
    "RetrievalEvidence",
    "SandboxRunEvidence",
    "ToolCallEvidence",
    "as_evidence",
]

_LAZY = {
    "Settings": "settings",
    "current_settings": "settings",
    "load_settings": "settings",
    "use_settings": "settings",
    "get_logger": "logs",
    "run_logging": "logs",
}
"""Names that load on first use (pydantic-settings and structlog are slow to import)."""


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
