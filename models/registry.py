"""Model strings -> NamedModels by role (DESIGN.md "Models and roles").

A model string is parsed once into a :class:`~sgieval.core.ModelRef` and built by its provider's factory
(:mod:`sgieval.models.providers`, the registry):

- ``replay:<name or path>``: stored responses.  A name matches a stored
  SciAidanBench model (``o1-mini``, ``phi4`` or ``phi4:latest``, or the file
  stem ``phi4_latest``); a path is a SciAidanBench responses JSON file or a
  JSONL replay file.
- ``local:<name>``: the embedded offline model (``local:smollm2``, extra ``[local]``).
- ``openai:<model>``: OpenAI, or any OpenAI-compatible server given by ``--base-url`` or ``OPENAI_BASE_URL``.
- ``openai-api:<service>/<model>``: an OpenAI-compatible server of its own, base URL ``<SERVICE>_BASE_URL``,
  key ``<SERVICE>_API_KEY`` (so a vLLM target and an OpenAI judge run side by side).
- any other registered prefix; else an ``init_chat_model`` provider (``anthropic:...``).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from ..core import InputError, ModelRef
from ..core import known_prefixes
from .base import NamedModel, Role
from .replay import ReplayStore, StoredResponses, load_jsonl_replay


def _match(name: str, store: ReplayStore) -> bool:
    n = name.lower()
    cands = {
        store.model.lower(),
        ModelRef(spec=store.model, provider="", name=store.model).untagged.lower(),
        store.source.stem.lower(),
        store.model.replace("/", "_").lower(),
    }
    return n in cands


def resolve_replay(
    spec: str, stored: StoredResponses | None = None, _stores: list[ReplayStore] | None = None
) -> NamedModel:
    """A replay target for ``replay:<name or path>``: a JSONL replay file, a stored-answers ``.json`` file
    (read by ``stored.read_file``) or the name of one of ``stored.stores()``.  Raises InputError listing the
    stored models when the name matches none, and for a ``.json`` file that is not one model's answers.

    Args:
        spec: ``replay:<name or path>``.
        stored: the stored responses the run can serve.
        _stores: the stored models already read (internal).

    Returns:
        The replay model.

    Raises:
        InputError: as above.
    """
    ref = ModelRef.parse(spec).name
    p = Path(ref).expanduser()
    if p.suffix in (".json", ".jsonl") and p.is_file():
        if p.suffix == ".jsonl":
            store = load_jsonl_replay(p)
        else:
            if stored is None or stored.read_file is None:
                raise InputError(
                    "no reader for stored-answer .json files was given",
                    what=str(p),
                    fix="resolve it with sgieval.agents.stored_responses.resolve_run_model (it reads "
                    "SciAidanBench responses files), or give a JSONL replay file",
                )
            stores = stored.read_file(p)
            if not stores:
                raise InputError("holds no models", what=str(p), fix="use a SciAidanBench responses file")
            if len(stores) > 1:
                raise InputError(
                    f"holds the answers of {len(stores)} models ({', '.join(s.model for s in stores)}); "
                    "replay:<file> serves one model",
                    what=str(p),
                    fix="split the file by model, or put it in <data>/sciaidanbench/responses/ and "
                    "name the models (replay:<name>)",
                )
            store = stores[0]
        return NamedModel(name=f"replay:{store.model}", role="target", replay=store, provider="replay")
    if p.suffix in (".json", ".jsonl"):
        raise InputError("replay file not found", what=str(p), fix="give an existing file after replay:")
    stores = _stores if _stores is not None else (stored.stores() if stored is not None else [])
    for s in stores:
        if _match(ref, s):
            return NamedModel(name=f"replay:{s.model}", role="target", replay=s, provider="replay")
    known = ", ".join(s.model for s in stores) or "none found"
    raise InputError(
        f"no stored responses named {ref!r}",
        what=spec,
        fix=f"use one of: {known}, or replay:<path to a .json/.jsonl file>",
    )


def sampling_for_role(config: Any, role: Role) -> dict[str, Any]:
    """The sampling keywords of :func:`resolve_model` for ``role`` from a
    :class:`~sgieval.core.RunConfig`: ``temperature`` (targets:
    ``config.temperature``; judges: ``config.judge_temperature``; agents: 0)
    and ``reasoning_effort`` (every role).

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
        temperature: 0-2, None for the provider's default; filtered per model family
            (:func:`sgieval.models.params.sampling_params`).
        reasoning_effort: None for not sent; filtered likewise.
        settings: the settings object keys and base URLs come from (None: the current settings).
        batch: the model's calls go through its provider's batch API (``--batch``,
            :func:`sgieval.models.batch.batch_model`; ``anthropic:`` models need no langchain-anthropic then).
        dry_run: the model is built for ``--dry-run`` (its prompts are counted, never sent): an OpenAI-compatible
            model needs no API key then.

    Returns:
        The NamedModel; ``params`` holds what is sent, ``dropped`` what was not with the reason, ``ref`` the
        parsed reference with its base URL.

    Raises:
        InputError: an unknown or unusable model string (exit code 2 in the CLI), naming the fix.
    """
    from .providers import PROVIDERS, ModelOptions, langchain_provider

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
    entry = PROVIDERS.get(ref.provider)
    if batch:
        from .batch import anthropic_batch_model, batch_model, refuse_batch

        if ref.provider == "local":  # refused before the embedded model is loaded
            raise refuse_batch(ref.spec, "the embedded model runs on this machine and has no batch API")
        if ref.provider == "anthropic" and entry is None:
            return anthropic_batch_model(ref, role, temperature=temperature, settings=settings)
        if entry is not None:
            return batch_model(entry.factory(ref, role, options))
        if ref.provider in known_prefixes():
            return batch_model(langchain_provider(ref, role, options))
    if entry is not None:
        return entry.factory(ref, role, options)
    if ref.provider in known_prefixes():
        return langchain_provider(ref, role, options)
    head = ref.prefix
    rest = ref.spec[len(head) + 1 :]
    near = difflib.get_close_matches(head, sorted(known_prefixes()), n=1, cutoff=0.75) if head else []
    if near:  # a typo of a provider prefix ("opnai:gpt-4.1")
        raise InputError(
            f"unknown provider {head!r}",
            what=ref.spec,
            fix=f"did you mean {near[0]}:{rest}? (prefixes: replay, local, openai, openai-api, or an "
            "init_chat_model provider)",
        )
    raise InputError(
        f"unknown provider {head!r}" if head else "unknown model string",
        what=ref.spec,
        fix="use replay:<name>, local:smollm2, openai:<model>, openai-api:<service>/<model> or provider:model "
        "(init_chat_model)",
    )
