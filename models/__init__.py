"""Model strings -> chat models by role; replay of stored responses; model calls (cache, retries, ledger,
run-scoped call context).

What other folders may use (DESIGN.md "Adding things"); names beyond ``NamedModel``, ``Role`` and the
registry load lazily from their modules on first use.
"""

from __future__ import annotations

from ..core.lazy import lazy_exports

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
}
"""Public name -> the module of this folder that defines it (loaded on first use)."""

__all__ = sorted([*_PUBLIC, "NamedModel", "Role", "resolve_model", "resolve_replay"])


__getattr__ = lazy_exports(__name__, _PUBLIC)
