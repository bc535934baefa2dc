"""Model strings -> chat models by role; replay of stored responses; model calls (cache, retries, ledger,
run-scoped call context).

What other folders may use (DESIGN.md "Adding things"); names beyond ``NamedModel``, ``Role`` and the
registry load lazily from their modules on first use.
"""

from __future__ import annotations

from ..core import lazy_exports

from .base import NamedModel, Role  # noqa: F401
from .registry import resolve_model, resolve_replay  # noqa: F401

_PUBLIC: dict[str, str] = {
    name: module
    for module, names in {
        "accounting": "BudgetExceeded Ledger current_ledger price_table set_prices BATCH_DISCOUNT Prices load_prices "
        "price_source unpriced_models",
        "context": "CallContext call_context current_call_context prompt_scope current_prompt_scope",
        "calls": "ainvoke call_info message_text read_reply usage model_secrets",
        "registry": "sampling_for_role",
        "replay": "ReplayStore StoredResponses UnmatchedReplayError",
        "batch": "batch_model batch_settings check_batch_models",
        "batch_collector": "BatchCollector",
        "cache": "cache_key_for get_cache should_cache",
        "estimate": "APPROXIMATION DEFAULT_TYPICAL_OUTPUT_TOKENS Estimate JUDGE_REPLY_TOKENS Rehearsal RehearsalChat "
        "RoleEstimate TOOL_RESULT_TOKENS TOOL_TURN_TOKENS TYPICAL_OUTPUT_TOKENS priced summarise "
        "token_counter",
        "structured": "StructuredReply ask_structured LATEX_COMMANDS_NRT StructuredMode parse_json_object "
        "protect_latex_escapes schema_instruction sent_prompt",
        "tool_loop": "bind_tools run_tool_loop tool_definitions",
        "base": "repeat_of",
    }.items()
    for name in names.split()
}
"""Public name -> the module of this folder that defines it (loaded on first use)."""

__all__ = sorted([*_PUBLIC, "NamedModel", "Role", "resolve_model", "resolve_replay"])


__getattr__ = lazy_exports(__name__, _PUBLIC)
