"""core: shared records, errors, the run store and settings (DESIGN.md "Layout"); imports nothing of ours."""

from __future__ import annotations

from .errors import CacheCorruptError, CredentialsError, DataNotFoundError, FieldProblem, InputError, ModelCallError
from .errors import validation_errors_text
from .errors import OfflineError, problem_to_input_error, RunStoppedError, SandboxUnavailableError
from .errors import SgievalError, TamperedFileError, ToolError
from .files import atomic_write_text, disk_error, escape_control_chars, is_disk_full, json_loads_strict, lone_surrogate
from .files import read_bytes_in, read_text_in, slug_name, split_jsonl, write_bytes_in
from .files import find_links, open_append_in, replace_dir_in, write_text_in
from .secrets import redact_secrets, redact_url, SecretValues, url_secrets
from .modelref import add_prefix, known_prefixes, ModelRef, same_model
from .prompts import prompt_hash, prompt_record
from .yamlfile import load_yaml
from .records import as_evidence, CORPUS, DEEP_RESEARCH
from .records import DRY_EXPERIMENT, Evidence, EVIDENCE_KINDS, EXPERIMENTAL_REASONING, FEASIBILITY, GENERIC
from .records import IDEA_GENERATION, Item, JudgeReplyEvidence, Label, MetricKind, MetricSpec, OPEN_CREATIVITY, Response
from .records import RetrievalEvidence, SandboxRunEvidence, Score, SGI_TASKS, Status, ToolCallEvidence
from .records import WET_EXPERIMENT
from .rubric import Criterion, criterion_key, CRITERION_TOOLS, CriterionTool, Rubric
from .runconfig import EXECUTORS, Option, option_names, run_options, RUN_RECORD, RunConfig, RunOption, SANDBOX_BACKENDS
from .runconfig import parse_price, TOOL_NAMES
from .replies import final_text, join_reasoning, judge_number, refusal_text, reply_status, split_reasoning, verdict_word
from .store import BUDGET_STOP_NOTE, REPORT_PENDING, run_holder, RUN_LOCK, RunStore
from .store import sync_open_stores
from .statefile import check_state_file, read_sqlite
from .lazy import lazy_exports

_LAZY = {
    name: module
    for module, names in {
        "settings": "Settings current_settings load_settings use_settings ENV_NAMES",
        "logs": "get_logger run_logging log_traceback",
        "offload": "call_in_worker worker_active submit_to_worker",
        "startup": "ConsoleProcess run_begins",
        "trust": "FLAGS is_own_run is_trusted remember_run remember sensitive_settings",
        "retry": "RetriesExhausted RetryPolicy aretry backoff_s retry_after_s",
    }.items()
    for name in names.split()
}
"""Names that load on first use (pydantic-settings and structlog are slow to import)."""

__all__ = ["CacheCorruptError", "CredentialsError", "DataNotFoundError", "FieldProblem", "InputError", "ModelCallError"]
__all__ += ["OfflineError", "problem_to_input_error", "RunStoppedError", "SandboxUnavailableError"]
__all__ += ["SgievalError", "TamperedFileError", "ToolError", "atomic_write_text", "disk_error", "escape_control_chars"]
__all__ += ["is_disk_full", "json_loads_strict", "lone_surrogate", "read_bytes_in", "read_text_in"]
__all__ += ["slug_name", "split_jsonl", "write_bytes_in", "write_text_in", "redact_secrets"]
__all__ += ["validation_errors_text"]
__all__ += ["redact_url", "SecretValues", "url_secrets", "ModelRef", "same_model", "prompt_hash", "prompt_record"]
__all__ += ["load_yaml", "as_evidence", "CORPUS", "Criterion", "criterion_key", "CRITERION_TOOLS", "CriterionTool"]
__all__ += ["DEEP_RESEARCH", "DRY_EXPERIMENT", "Evidence", "EVIDENCE_KINDS", "EXPERIMENTAL_REASONING", "FEASIBILITY"]
__all__ += ["GENERIC", "IDEA_GENERATION", "Item", "JudgeReplyEvidence", "Label", "MetricKind", "MetricSpec"]
__all__ += ["OPEN_CREATIVITY", "Response", "RetrievalEvidence", "Rubric", "SandboxRunEvidence", "Score", "SGI_TASKS"]
__all__ += ["Status", "ToolCallEvidence", "WET_EXPERIMENT", "EXECUTORS", "Option", "option_names", "run_options"]
__all__ += ["RUN_RECORD", "RunConfig", "RunOption", "SANDBOX_BACKENDS", "TOOL_NAMES", "final_text", "join_reasoning"]
__all__ += ["judge_number", "refusal_text", "reply_status", "split_reasoning", "verdict_word", "BUDGET_STOP_NOTE"]
__all__ += ["check_state_file", "read_sqlite", "REPORT_PENDING", "run_holder", "RUN_LOCK", "RunStore"]
__all__ += ["sync_open_stores", "Settings", "current_settings", "load_settings", "use_settings", "get_logger"]
__all__ += ["run_logging", "lazy_exports", "call_in_worker", "worker_active", "find_links", "open_append_in"]
__all__ += ["replace_dir_in", "log_traceback", "add_prefix", "known_prefixes", "submit_to_worker", "parse_price"]
__all__ += ["ConsoleProcess", "run_begins", "FLAGS", "is_own_run", "is_trusted", "remember_run", "ENV_NAMES"]
__all__ += ["remember", "sensitive_settings", "RetriesExhausted", "RetryPolicy", "aretry", "backoff_s", "retry_after_s"]

__getattr__ = lazy_exports(__name__, _LAZY)
