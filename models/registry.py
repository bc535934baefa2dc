"""Model strings -> NamedModels by role (DESIGN.md "Models and roles").

- ``replay:<name or path>``: stored responses.  A name matches a stored
  SciAidanBench model (``o1-mini``, ``phi4`` or ``phi4:latest``, or the file
  stem ``phi4_latest``); a path is a SciAidanBench responses JSON file or a
  JSONL replay file.
- ``local:<name>``: the embedded offline model (``local:smollm2``, extra ``[local]``).
- ``openai:<model>``: any OpenAI-compatible server; base URL from
  ``--base-url`` or ``OPENAI_BASE_URL``.  Plain chat completions go through
  :class:`~sgieval.models.openai_direct.ChatOpenAIDirect` (about 1 ms of CPU a
  call instead of 4-6 ms through the openai SDK); ``SGIEVAL_OPENAI_TRANSPORT=sdk``
  selects LangChain's ``ChatOpenAI`` unchanged.
- anything else: ``langchain.chat_models.init_chat_model``.
"""

from __future__ import annotations

import difflib

import os
from pathlib import Path
from typing import Any

from ..core import InputError, redact_url
from .base import NamedModel, Role
from .params import sampling_params
from .replay import ReplayStore, StoredResponses, load_jsonl_replay

REPLAY_PREFIX = "replay:"


KNOWN_PROVIDERS: tuple[str, ...] = (
    "replay",
    "local",
    "openai",
    "azure_openai",
    "anthropic",
    "google_genai",
    "google_vertexai",
    "bedrock",
    "bedrock_converse",
    "cohere",
    "fireworks",
    "together",
    "mistralai",
    "huggingface",
    "groq",
    "ollama",
    "deepseek",
    "xai",
    "perplexity",
    "ibm",
    "nvidia",
    "azure_ai",
)
"""Model-string prefixes sgieval knows (its own, and LangChain ``init_chat_model``'s providers); a prefix
close to one of them but not equal is taken for a typo."""


def _match(name: str, store: ReplayStore) -> bool:
    n = name.lower()
    cands = {
        store.model.lower(),
        store.model.split(":")[0].lower(),
        store.source.stem.lower(),
        store.model.replace("/", "_").lower(),
    }
    return n in cands


def resolve_replay(
    spec: str, stored: StoredResponses | None = None, _stores: list[ReplayStore] | None = None
) -> NamedModel:
    """A replay target for ``replay:<name or path>``: a JSONL replay file, a stored-answers ``.json`` file
    (read by ``stored.read_file``) or the name of one of ``stored.stores()``.  Raises InputError listing the
    stored models when the name matches none, and for a ``.json`` file that is not one model's answers."""
    ref = spec[len(REPLAY_PREFIX) :]
    p = Path(ref).expanduser()
    if p.suffix in (".json", ".jsonl") and p.is_file():
        if p.suffix == ".jsonl":
            store = load_jsonl_replay(p)
        else:
            if stored is None or stored.read_file is None:
                raise InputError(
                    "no reader for stored-answer .json files was given",
                    what=str(p),
                    fix="resolve it with sgieval.agents.replays.resolve_run_model (it reads "
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
    and ``reasoning_effort`` (every role)."""
    t = {"target": config.temperature, "judge": config.judge_temperature}.get(role, 0.0)
    return {"temperature": t, "reasoning_effort": config.reasoning_effort}


OPENAI_TRANSPORTS = ("direct", "sdk")


def openai_chat_class() -> type:
    """The chat-model class for ``openai:`` strings: ``ChatOpenAIDirect``
    (default) or, with ``SGIEVAL_OPENAI_TRANSPORT=sdk``, ``ChatOpenAI``.
    Raises InputError for another value of that variable."""
    from ..core.settings import current_settings

    transport = current_settings().openai_transport  # validated: one of OPENAI_TRANSPORTS
    if transport == "sdk":
        from langchain_openai import ChatOpenAI

        return ChatOpenAI
    from .openai_direct import ChatOpenAIDirect

    return ChatOpenAIDirect


def resolve_model(
    spec: str,
    role: Role,
    *,
    base_url: str | None = None,
    stored: StoredResponses | None = None,
    temperature: float | None = 0.0,
    reasoning_effort: str | None = None,
) -> NamedModel:
    """Resolve one model string for ``role``.  Raises InputError (exit code 2
    in the CLI) for an unknown or unusable model string, naming the fix.

    ``temperature`` (None: the provider's default) and ``reasoning_effort``
    (None: not sent) are filtered per model family
    (:func:`sgieval.models.params.sampling_params`); ``NamedModel.params``
    holds what is sent and ``NamedModel.dropped`` what was not, with the reason.  ``stored``: where
    ``replay:`` strings find stored responses (:class:`~sgieval.models.replay.StoredResponses`; None: only
    JSONL replay files)."""
    spec = spec.strip()
    if spec.startswith(REPLAY_PREFIX):
        if role != "target":
            raise InputError(
                "replay models can only be target models",
                what=spec,
                fix="use an LLM (openai:..., local:smollm2, ...) for judge and agent roles",
            )
        return resolve_replay(spec, stored)
    if spec.startswith("local:"):
        from .local import load_local_model

        return load_local_model(spec, role)
    if spec.startswith("openai:"):
        url = base_url or os.environ.get("OPENAI_BASE_URL")
        url_key = None
        if url:  # a key embedded in the URL (http://user:sk-...@host/v1) is sent as the API key, never kept in the URL
            from urllib.parse import urlsplit

            parts = urlsplit(url)
            url_key = parts.password or parts.username
            url = redact_url(url)
        key = url_key or os.environ.get("OPENAI_API_KEY") or ("not-needed" if url else None)
        if key is None:
            raise InputError(
                "no OPENAI_API_KEY set and no base URL given",
                what=spec,
                fix="export OPENAI_API_KEY, or pass --base-url for an OpenAI-compatible server",
            )
        sent, dropped = sampling_params(spec, temperature=temperature, reasoning_effort=reasoning_effort)
        chat = openai_chat_class()(
            model=spec.split(":", 1)[1], base_url=url, api_key=key, max_retries=0, timeout=300, **sent
        )
        if "temperature" not in sent and chat.temperature is not None:
            chat.temperature = None  # ChatOpenAI sets 1 for o1 models by itself: send nothing instead
        return NamedModel(name=spec, role=role, chat=chat, provider=url or "openai", params=dict(sent), dropped=dropped)
    if ":" not in spec:
        raise InputError(
            "unknown model string",
            what=spec,
            fix="use replay:<name>, local:smollm2, openai:<model> or provider:model (init_chat_model)",
        )
    provider = spec.split(":", 1)[0]
    near = difflib.get_close_matches(provider, KNOWN_PROVIDERS, n=1, cutoff=0.75)
    if near and provider not in KNOWN_PROVIDERS:  # a typo of a provider prefix ("opnai:gpt-4.1")
        raise InputError(
            f"unknown provider {provider!r}",
            what=spec,
            fix=f"did you mean {near[0]}:{spec.split(':', 1)[1]}? (prefixes: replay, local, openai, or an "
            "init_chat_model provider)",
        )
    sent, dropped = sampling_params(
        spec,
        temperature=temperature,
        reasoning_effort=reasoning_effort,
        openai_compatible=provider in ("openai", "azure_openai"),
    )
    try:
        from langchain.chat_models import init_chat_model

        chat = init_chat_model(spec, **sent)
    except Exception as e:  # noqa: BLE001 - provider packages raise many kinds
        raise InputError(
            f"cannot create chat model: {str(e).splitlines()[0]}",
            what=spec,
            fix="check the provider prefix and install its langchain package (e.g. langchain-anthropic)",
        ) from e
    return NamedModel(name=spec, role=role, chat=chat, provider=provider, params=dict(sent), dropped=dropped)
