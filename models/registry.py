"""Model strings -> NamedModels by role (DESIGN.md "Models and roles").

A model string is parsed once into a :class:`~sgieval.core.ModelRef` and built by its provider's factory
(:mod:`sgieval.models.providers`).
"""

from __future__ import annotations

import difflib
from typing import Any

from ..core import InputError, ModelRef, known_prefixes
from .base import NamedModel, Role
from .providers import Factory, ModelOptions, langchain_provider, provider_for
from .replay import StoredResponses, resolve_replay

__all__ = ["resolve_model", "resolve_replay", "sampling_for_role"]


def sampling_for_role(config: Any, role: Role) -> dict[str, Any]:
    """The sampling keywords of :func:`resolve_model` for ``role`` (agents: temperature 0).

    Args:
        config: the run's config.
        role: ``"target"``, ``"judge"`` or ``"agent"``.

    Returns:
        The keywords.
    """
    t = {"target": config.temperature, "judge": config.judge_temperature}.get(role, 0.0)
    return {"temperature": t, "reasoning_effort": config.reasoning_effort}


def resolve_model(
    spec: str,
    role: Role,
    *,
    base_url: str | None = None,
    stored: StoredResponses | None = None,
    temperature: float | None = 0.0,
    reasoning_effort: str | None = None,
    settings: Any = None,
    batch: bool = False,
    dry_run: bool = False,
) -> NamedModel:
    """Resolve one model string for ``role`` through the provider registry.

    Args:
        spec: a model string (:mod:`sgieval.core.modelref`).
        role: ``target``, ``judge`` or ``agent``.
        base_url: the run's ``--base-url`` for ``openai:`` strings (None: ``OPENAI_BASE_URL``).
        stored: where ``replay:`` strings find stored responses (None: only JSONL replay files).
        temperature: 0-2, None for the provider's default; filtered per model family.
        reasoning_effort: None for not sent; filtered likewise.
        settings: the settings object keys and base URLs come from (None: the current settings).
        batch: the model's calls go through its provider's batch API (``--batch``).
        dry_run: built for ``--dry-run``: no API key needed.

    Returns:
        The NamedModel (``params``: what is sent; ``dropped``: what is not, with the reason).

    Raises:
        InputError: an unknown or unusable model string, naming the fix.
    """
    try:
        ref = ModelRef.parse(spec)
    except ValueError as e:
        raise InputError(str(e), what=spec.strip(), fix="write openai-api:<service>/<model>") from None
    options = ModelOptions(
        base_url=base_url,
        stored=stored,
        temperature=temperature,
        reasoning_effort=reasoning_effort,
        settings=settings,
        dry_run=dry_run,
    )
    entry = provider_for(ref.provider)
    if entry is None and ref.provider not in known_prefixes():
        raise _unknown_provider(ref)
    factory = entry.factory if entry is not None else langchain_provider
    return _batch_model(ref, role, options, factory) if batch else factory(ref, role, options)


def _batch_model(ref: ModelRef, role: Role, options: ModelOptions, factory: Factory) -> NamedModel:
    """The ``--batch`` model of a known provider (batch.py is loaded only by batch runs)."""
    from .batch import anthropic_batch_model, batch_model, refuse_batch

    if ref.provider == "local":  # refused before the embedded model is loaded
        raise refuse_batch(ref.spec, "the embedded model runs on this machine and has no batch API")
    if ref.provider == "anthropic" and factory is langchain_provider:
        return anthropic_batch_model(ref, role, temperature=options.temperature, settings=options.settings)
    return batch_model(factory(ref, role, options))


def _unknown_provider(ref: ModelRef) -> InputError:
    """The error for a model string whose prefix no provider has, with the nearest prefix when it is a typo."""
    head = ref.prefix
    rest = ref.spec[len(head) + 1 :]
    near = difflib.get_close_matches(head, sorted(known_prefixes()), n=1, cutoff=0.75) if head else []
    if near:  # a typo of a provider prefix ("opnai:gpt-4.1")
        return InputError(
            f"unknown provider {head!r}",
            what=ref.spec,
            fix=f"did you mean {near[0]}:{rest}? (prefixes: replay, local, openai, openai-api, or an "
            "init_chat_model provider)",
        )
    return InputError(
        f"unknown provider {head!r}" if head else "unknown model string",
        what=ref.spec,
        fix="use replay:<name>, local:smollm2, openai:<model>, openai-api:<service>/<model> or provider:model "
        "(init_chat_model)",
    )
