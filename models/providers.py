"""The provider registry: a model-string prefix -> a factory that builds the chat model (DESIGN.md "Adding things").

Built-in entries: ``replay``, ``local``, ``openai``, ``openai-api`` (``openai-api:<service>/<model>``), then every
LangChain ``init_chat_model`` provider; docs/models.md shows how to register another.
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


OFFICIAL_OPENAI_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class ModelOptions:
    """What a run passes to every provider factory; ``base_url`` applies to ``openai:`` strings only, ``dry_run``
    accepts a missing API key, ``temperature`` 0-2 (None: the provider's default)."""

    base_url: str | None = None
    stored: Any = None
    temperature: float | None = 0.0
    reasoning_effort: str | None = None
    settings: Any = None
    dry_run: bool = False

    def env(self, name: str | None) -> str | None:
        """The value of variable ``name`` through the settings object, or None."""
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
        factory: builds the model, e.g. :func:`openai_compatible`'s.

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
    """The registered provider of ``prefix``.

    Args:
        prefix: a model-string prefix.

    Returns:
        The provider, or None.
    """
    return PROVIDERS.get(prefix)


def openai_chat_class() -> type:
    """``ChatOpenAIDirect``, or ``ChatOpenAI`` with ``SGIEVAL_OPENAI_TRANSPORT=sdk``."""
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
        base_url_var: the variable holding the server's base URL (default: the reference's).
        key_var: the variable holding the key (default: the reference's).
        default_base_url: the URL when the variable is unset (None: it must be set).
        run_base_url: whether the run's ``--base-url`` applies to these models.

    Returns:
        A :data:`Factory`; its models' ``provider`` (the concurrency key) is the base URL.
    """

    def factory(ref: ModelRef, role: Role, options: ModelOptions) -> NamedModel:
        url_var = base_url_var or ref.base_url_var
        kvar = key_var or ref.key_var
        url = (options.base_url if run_base_url else None) or options.env(url_var) or default_base_url
        if url is None:
            raise InputError(
                f"no base URL for {ref.spec}: {url_var} is not set",
                what=ref.spec,
                fix=f"export {url_var}=http://host:port/v1 (the server's OpenAI-compatible endpoint)",
            )
        parts = urlsplit(url)
        url_key = parts.password or parts.username  # sent as the key, never kept in the URL
        url = redact_url(url) or url
        official = url.rstrip("/") == OFFICIAL_OPENAI_URL
        key = url_key or options.env(kvar) or (None if official and not options.dry_run else "not-needed")
        if key is None:
            raise InputError(
                f"no {kvar} set and no base URL given",
                what=ref.spec,
                fix=f"export {kvar}, or pass --base-url / set {url_var} for an OpenAI-compatible server",
            )
        ref = ref.with_endpoint(url, base_url_var=url_var, key_var=kvar)
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


def langchain_provider(ref: ModelRef, role: Role, options: ModelOptions) -> NamedModel:
    """A factory for LangChain ``init_chat_model`` providers (``anthropic:...``, ``google_genai:...``)."""
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
        Provider("local", lambda ref, role, options: load_local_model(ref.spec, role)),
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
"""Prefix -> provider: the built-in entries, then every :func:`register_provider` call."""
