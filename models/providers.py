"""The provider registry: a model-string prefix -> a factory that builds the chat model (DESIGN.md "Adding things").

A model string is parsed once into a :class:`~sgieval.core.ModelRef` (:mod:`sgieval.core.modelref`); its
``provider`` selects the entry here, whose factory gets the reference, the role and the
:class:`ModelOptions` of the run and returns a :class:`~sgieval.models.base.NamedModel`.

Built-in entries: ``replay``, ``local``, ``openai`` (base URL ``--base-url`` / ``OPENAI_BASE_URL``, key
``OPENAI_API_KEY``), ``openai-api`` (``openai-api:<service>/<model>``: base URL ``<SERVICE>_BASE_URL``, key
``<SERVICE>_API_KEY``) and every LangChain ``init_chat_model`` provider (``anthropic``, ``google_genai``...).
A new provider is one line::

    register_provider("together", openai_compatible(base_url_var="TOGETHER_BASE_URL",
                                                    key_var="TOGETHER_API_KEY",
                                                    default_base_url="https://api.together.xyz/v1"))

Keys and base URLs are read through the run's settings object (:meth:`sgieval.core.Settings.env_value`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

from ..core import InputError, ModelRef, add_prefix, current_settings, redact_url
from .base import NamedModel, Role
from .local import load_local_model
from .params import sampling_params
from .replay import resolve_replay

__all__ = [
    "ModelOptions",
    "Provider",
    "PROVIDERS",
    "OFFICIAL_OPENAI_URL",
    "openai_compatible",
    "provider_for",
    "register_provider",
    "resolve_endpoint",
]

OFFICIAL_OPENAI_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class ModelOptions:
    """What a run passes to every provider factory.

    Attributes:
        base_url: the run's ``--base-url`` (used by ``openai:`` strings only; a per-model server is an
            ``openai-api:<service>/<model>`` string), None for none.
        stored: where ``replay:`` strings find stored responses (``StoredResponses``), None for JSONL files only.
        temperature: sampling temperature 0-2 (None: the provider's default).
        reasoning_effort: OpenAI ``reasoning_effort`` (None: not sent).
        settings: the settings object keys and base URLs come from (None: read the environment now).
        dry_run: the model is built for ``--dry-run`` only (its prompts are counted, never sent): a missing
            API key is not an error then.
    """

    base_url: str | None = None
    stored: Any = None
    temperature: float | None = 0.0
    reasoning_effort: str | None = None
    settings: Any = None
    dry_run: bool = False

    def env(self, name: str | None) -> str | None:
        """The value of variable ``name`` through the settings object (None when unset or ``name`` is None)."""
        if not name:
            return None
        return (self.settings if self.settings is not None else current_settings()).env_value(name)


Factory = Callable[[ModelRef, Role, ModelOptions], NamedModel]
"""``(reference, role, options) -> NamedModel``; raises InputError naming the fix when the model cannot be built."""


@dataclass(frozen=True)
class Provider:
    """One registry entry: the prefix and the factory that builds its models."""

    prefix: str
    factory: Factory


def register_provider(prefix: str, factory: Factory) -> Provider:
    """Register ``factory`` for model strings ``<prefix>:<model>`` (replacing an earlier entry of that prefix).

    Args:
        prefix: the model-string prefix, e.g. ``"together"`` (letters, digits, ``_`` and ``-``).
        factory: builds the model (:data:`Factory`); :func:`openai_compatible` makes one for an
            OpenAI-compatible server.

    Returns:
        The registered :class:`Provider`.

    Raises:
        ValueError: a prefix that is empty or holds ``:`` or ``/``.
    """
    if not prefix or any(c in prefix for c in ":/ "):
        raise ValueError(f"bad provider prefix {prefix!r}: use letters, digits, '_' or '-'")
    entry = Provider(prefix, factory)
    PROVIDERS[prefix] = entry
    add_prefix(prefix)
    return entry


def provider_for(prefix: str) -> Provider | None:
    """The registered provider of ``prefix`` (:data:`PROVIDERS`), or None.

    Args:
        prefix: a model-string prefix.

    Returns:
        The provider, or None.
    """
    return PROVIDERS.get(prefix)


def _split_key(url: str) -> tuple[str, str | None]:
    """``(url without credentials, the key in its user-info part or None)``: a key embedded in the URL
    (``http://user:sk-...@host/v1``) is sent as the API key, never kept in the URL."""
    parts = urlsplit(url)
    key = parts.password or parts.username
    return (redact_url(url) or url), key


def resolve_endpoint(
    ref: ModelRef,
    options: ModelOptions,
    *,
    base_url_var: str | None = None,
    key_var: str | None = None,
    default_base_url: str | None = None,
    run_base_url: bool = False,
) -> tuple[ModelRef, str]:
    """The base URL and key of an OpenAI-compatible model.

    Args:
        ref: the parsed model string.
        options: the run's options (its settings object is read for the variables).
        base_url_var: the variable holding the base URL (default ``ref.base_url_var``).
        key_var: the variable holding the key (default ``ref.key_var``).
        default_base_url: the URL when the variable is unset (None: the variable is required).
        run_base_url: whether the run's ``--base-url`` applies (``openai:`` strings only).

    Returns:
        ``(ref with base_url and the variables filled in, key)``; the key is ``"not-needed"`` for a server
        other than api.openai.com when no key is set, and for any server under ``options.dry_run``.

    Raises:
        InputError: no base URL (naming the variable to set), or no key for api.openai.com.
    """
    url_var = base_url_var or ref.base_url_var
    kvar = key_var or ref.key_var
    url = (options.base_url if run_base_url else None) or options.env(url_var) or default_base_url
    if url is None:
        raise InputError(
            f"no base URL for {ref.spec}: {url_var} is not set",
            what=ref.spec,
            fix=f"export {url_var}=http://host:port/v1 (the server's OpenAI-compatible endpoint)",
        )
    url, url_key = _split_key(url)
    official = url.rstrip("/") == OFFICIAL_OPENAI_URL
    key = url_key or options.env(kvar) or (None if official and not options.dry_run else "not-needed")
    if key is None:
        raise InputError(
            f"no {kvar} set and no base URL given",
            what=ref.spec,
            fix=f"export {kvar}, or pass --base-url / set {url_var} for an OpenAI-compatible server",
        )
    return ref.with_endpoint(url, base_url_var=url_var, key_var=kvar), key


def openai_chat_class() -> type:
    """The chat-model class for OpenAI-compatible servers: sgieval's
    :class:`~sgieval.models.openai_direct.ChatOpenAIDirect` (default) or, with ``SGIEVAL_OPENAI_TRANSPORT=sdk``,
    langchain-openai's ``ChatOpenAI`` (each loaded when first asked for)."""
    if current_settings().openai_transport == "sdk":
        from langchain_openai import ChatOpenAI

        return ChatOpenAI
    from .openai_direct import ChatOpenAIDirect

    return ChatOpenAIDirect


def openai_compatible(
    *,
    base_url_var: str | None = None,
    key_var: str | None = None,
    default_base_url: str | None = None,
    run_base_url: bool = False,
) -> Factory:
    """A factory for an OpenAI-compatible chat-completions server.

    Args:
        base_url_var: the variable holding the server's base URL (default: the reference's, e.g.
            ``VLLM_BASE_URL`` for ``openai-api:vllm/<model>``).
        key_var: the variable holding the key (default: ``<PREFIX>_API_KEY`` or ``<SERVICE>_API_KEY``).
        default_base_url: the URL when the variable is unset (None: it must be set).
        run_base_url: whether the run's ``--base-url`` applies to these models.

    Returns:
        A :data:`Factory`; its models' ``provider`` (the concurrency key) is the base URL.
    """

    def factory(ref: ModelRef, role: Role, options: ModelOptions) -> NamedModel:
        ref, key = resolve_endpoint(
            ref,
            options,
            base_url_var=base_url_var,
            key_var=key_var,
            default_base_url=default_base_url,
            run_base_url=run_base_url,
        )
        sent, dropped = sampling_params(
            ref.spec, temperature=options.temperature, reasoning_effort=options.reasoning_effort
        )
        url = ref.base_url
        chat = openai_chat_class()(
            model=ref.name,
            base_url=None if url == OFFICIAL_OPENAI_URL else url,
            api_key=key,
            max_retries=0,
            timeout=300,
            **sent,
        )
        if "temperature" not in sent and getattr(chat, "temperature", None) is not None:
            chat.temperature = None  # ChatOpenAI sets 1 for o1 models by itself: send nothing instead
        provider = "openai" if url == OFFICIAL_OPENAI_URL else str(url)
        return NamedModel(
            name=ref.spec, role=role, chat=chat, provider=provider, params=dict(sent), dropped=dropped, ref=ref
        )

    return factory


def _replay(ref: ModelRef, role: Role, options: ModelOptions) -> NamedModel:
    if role != "target":
        raise InputError(
            "replay models can only be target models",
            what=ref.spec,
            fix="use an LLM (openai:..., local:smollm2, ...) for judge and agent roles",
        )
    return resolve_replay(ref.spec, options.stored)


def _local(ref: ModelRef, role: Role, options: ModelOptions) -> NamedModel:
    return load_local_model(ref.spec, role)


def langchain_provider(ref: ModelRef, role: Role, options: ModelOptions) -> NamedModel:
    """A factory for LangChain ``init_chat_model`` providers (``anthropic:...``, ``google_genai:...``): the
    provider package reads its own key variable (``ref.key_var``)."""
    sent, dropped = sampling_params(
        ref.spec,
        temperature=options.temperature,
        reasoning_effort=options.reasoning_effort,
        openai_compatible=ref.provider in ("openai", "azure_openai"),
    )
    try:
        from langchain.chat_models import init_chat_model

        chat = init_chat_model(f"{ref.provider}:{ref.name}", **sent)
    except Exception as e:  # noqa: BLE001 - provider packages raise many kinds
        raise InputError(
            f"cannot create chat model: {str(e).splitlines()[0]}",
            what=ref.spec,
            fix="check the provider prefix and install its langchain package (e.g. langchain-anthropic)",
        ) from e
    return NamedModel(
        name=ref.spec, role=role, chat=chat, provider=ref.provider, params=dict(sent), dropped=dropped, ref=ref
    )


PROVIDERS: dict[str, Provider] = {
    p.prefix: p
    for p in (
        Provider("replay", _replay),
        Provider("local", _local),
        Provider(
            "openai",
            openai_compatible(
                base_url_var="OPENAI_BASE_URL",
                key_var="OPENAI_API_KEY",
                default_base_url=OFFICIAL_OPENAI_URL,
                run_base_url=True,
            ),
        ),
        Provider("openai-api", openai_compatible()),
    )
}
"""Prefix -> provider: the built-in entries (their prefixes are :data:`sgieval.core.modelref.BUILTIN_PREFIXES`),
then every :func:`register_provider` call."""
