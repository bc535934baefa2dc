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
    "BudgetExceeded": "accounting",
    "Ledger": "accounting",
    "current_ledger": "accounting",
    "price_table": "accounting",
    "set_prices": "accounting",
    "CallContext": "context",
    "call_context": "context",
    "current_call_context": "context",
    "prompt_scope": "context",
    "current_prompt_scope": "context",
    "ainvoke": "calls",
    "call_info": "calls",
    "message_text": "calls",
    "read_reply": "calls",
    "sampling_for_role": "registry",
    "ReplayStore": "replay",
    "StoredResponses": "replay",
    "usage": "calls",
    "BATCH_DISCOUNT": "accounting",
    "Prices": "accounting",
    "load_prices": "accounting",
    "price_source": "accounting",
    "unpriced_models": "accounting",
    "BatchCollector": "batch",
    "batch_model": "batch",
    "batch_settings": "batch",
    "check_batch_models": "batch",
    "cache_key_for": "cache",
    "get_cache": "cache",
    "should_cache": "cache",
    "model_secrets": "calls",
    "APPROXIMATION": "estimate",
    "DEFAULT_TYPICAL_OUTPUT_TOKENS": "estimate",
    "Estimate": "estimate",
    "JUDGE_REPLY_TOKENS": "estimate",
    "Rehearsal": "estimate",
    "RehearsalChat": "estimate",
    "RoleEstimate": "estimate",
    "TOOL_RESULT_TOKENS": "estimate",
    "TOOL_TURN_TOKENS": "estimate",
    "TYPICAL_OUTPUT_TOKENS": "estimate",
    "priced": "estimate",
    "summarise": "estimate",
    "token_counter": "estimate",
    "UnmatchedReplayError": "replay",
    "StructuredReply": "structured",
    "ask_structured": "structured",
    "bind_tools": "tool_loop",
    "run_tool_loop": "tool_loop",
    "tool_definitions": "tool_loop",
    "repeat_of": "base",
    "LATEX_COMMANDS_NRT": "structured",
    "StructuredMode": "structured",
    "parse_json_object": "structured",
    "protect_latex_escapes": "structured",
    "schema_instruction": "structured",
    "sent_prompt": "structured",
}
"""Public name -> the module of this folder that defines it (loaded on first use)."""

__all__ = sorted([*_PUBLIC, "NamedModel", "Role", "resolve_model", "resolve_replay"])


__getattr__ = lazy_exports(__name__, _PUBLIC)
