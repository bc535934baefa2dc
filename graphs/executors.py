"""Compatibility: the executors moved to :mod:`sgieval.agents.executors` (graphs/ is wiring only)."""

from ..agents import (  # noqa: F401
    EXECUTORS,
    ensure_ray,
    evaluate_with_executor,
    pack_models,
    run_units,
    shard,
    unpack_models,
)

__all__ = ["EXECUTORS", "ensure_ray", "evaluate_with_executor", "pack_models", "run_units", "shard", "unpack_models"]
