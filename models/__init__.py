"""Model strings -> chat models by role; replay of stored responses; model calls."""

from .base import NamedModel, Role  # noqa: F401
from .registry import resolve_model, resolve_replay, stored_models  # noqa: F401
