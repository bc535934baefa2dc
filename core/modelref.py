"""Model references: a model string parsed once into provider, name, base URL and key variable. Forms (LangChain's
``<provider>:<model>``, DESIGN.md "Models and roles"): ``openai:gpt-4.1`` (``--base-url``, else ``OPENAI_BASE_URL``),
``openai-api:<service>/<model>`` (any OpenAI-compatible server: ``<SERVICE>_BASE_URL`` required, ``<SERVICE>_API_KEY``
optional), ``anthropic:...`` and the other providers, ``replay:``/``local:`` (no service), and a bare stored model name
(``o1-mini``, ``phi4:latest``). :attr:`ModelRef.identity` is what "the same model" means for judge hygiene."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

BUILTIN_PREFIXES: frozenset[str] = frozenset(
    """replay local openai openai-api
    azure_openai anthropic google_genai google_vertexai google_anthropic_vertex bedrock bedrock_converse cohere
    fireworks together mistralai huggingface groq ollama deepseek xai perplexity ibm nvidia azure_ai upstage
    anthropic_bedrock baseten bedrock_mantle_anthropic bedrock_mantle_openai langsmith litellm meta openrouter""".split()
)
"""Prefixes known without any registration: sgieval's own and LangChain ``init_chat_model``'s providers."""

KEY_VARIABLES: dict[str, str] = {
    "google_genai": "GOOGLE_API_KEY",
    "google_vertexai": "GOOGLE_APPLICATION_CREDENTIALS",
    "google_anthropic_vertex": "GOOGLE_APPLICATION_CREDENTIALS",
    "mistralai": "MISTRAL_API_KEY",
    "azure_openai": "AZURE_OPENAI_API_KEY",
    "bedrock": "AWS_ACCESS_KEY_ID",
    "bedrock_converse": "AWS_ACCESS_KEY_ID",
    "huggingface": "HUGGINGFACEHUB_API_TOKEN",
    "ibm": "WATSONX_APIKEY",
    "nvidia": "NVIDIA_API_KEY",
    "perplexity": "PPLX_API_KEY",
}
"""Prefix -> the variable holding its key where it is not ``<PREFIX>_API_KEY`` (the provider packages' own)."""

OFFLINE = ("replay", "local")
"""Providers that call no model service: stored responses and the embedded offline model."""

_prefixes: set[str] = set(BUILTIN_PREFIXES)

_SERVICE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_TAG = re.compile(r"^(latest|\d|q\d)", re.IGNORECASE)
"""An Ollama-style tag after a model name (``phi4:latest``, ``llama3.1:8b``): a stored model name, no provider."""
_PROVIDER_LIKE = re.compile(r"^[a-z][a-z0-9_-]*$")


def add_prefix(prefix: str) -> None:
    """Make ``prefix`` a provider prefix for :meth:`ModelRef.parse` (called by the provider registry).

    Args:
        prefix: the prefix (``"acme"`` for ``acme:<model>``).
    """
    _prefixes.add(prefix)


def known_prefixes() -> frozenset[str]:
    """Every provider prefix :meth:`ModelRef.parse` recognises.

    Returns:
        The prefixes.
    """
    return frozenset(_prefixes)


def _env_name(service: str) -> str:
    return re.sub(r"[^A-Z0-9]", "_", service.upper())


@dataclass(frozen=True)
class ModelRef:
    """One model string, parsed: ``spec`` as given (stripped), ``provider`` the registry prefix (``""`` for a stored
    model name), ``name`` the model id the provider is asked for, ``service`` the server of an ``openai-api:`` string,
    ``base_url`` once resolved, and the variables holding the base URL and the API key (None: not needed)."""

    spec: str
    provider: str
    name: str
    service: str = ""
    base_url: str | None = None
    base_url_var: str | None = None
    key_var: str | None = None

    @classmethod
    def parse(cls, spec: str, *, strict: bool = True) -> "ModelRef":
        """Parse ``spec`` (no environment read, no check that the provider is installed).

        Args:
            spec: a model string (module doc table).
            strict: False: a string that does not parse is a stored model name (provider ``""``), no error.

        Returns:
            The ModelRef (``base_url`` None); an unknown head is an unknown provider unless an Ollama-style tag follows.

        Raises:
            ValueError: an ``openai-api:`` string without ``<service>/<model>`` (with ``strict``).
        """
        s = spec.strip()
        head, sep, rest = s.partition(":")
        if not sep or (head not in _prefixes and (_TAG.match(rest) or not _PROVIDER_LIKE.match(head))):
            return cls(spec=s, provider="", name=s)
        if head == "openai-api":
            service, slash, model = rest.partition("/")
            if not slash or not model.strip() or not _SERVICE.match(service):
                if not strict:
                    return cls(spec=s, provider="", name=s)
                raise ValueError(
                    f"{s!r}: an OpenAI-compatible server is named openai-api:<service>/<model>, "
                    "e.g. openai-api:vllm/Qwen2.5-7B with VLLM_BASE_URL set"
                )
            env = _env_name(service)
            return cls(s, head, model.strip(), service, base_url_var=f"{env}_BASE_URL", key_var=f"{env}_API_KEY")
        return cls(
            spec=s,
            provider=head,
            name=rest.strip(),
            base_url_var="OPENAI_BASE_URL" if head == "openai" else None,
            key_var=None if head in OFFLINE else KEY_VARIABLES.get(head, f"{_env_name(head)}_API_KEY"),
        )

    @staticmethod
    def identity_of(spec: str) -> str:
        """The :attr:`identity` of model string ``spec`` (a string that does not parse: itself, lower case).

        Args:
            spec: a model string.

        Returns:
            The identity.
        """
        try:
            return ModelRef.parse(spec).identity
        except ValueError:
            return spec.strip().lower()

    @property
    def identity(self) -> str:
        """The name, lower case, without router path and ``:latest``; the provider never enters it
        (``replay:llama3.3:latest`` -> ``llama3.3``, ``replay:openai/4o`` -> ``4o``)."""
        return self.name.strip().lower().removesuffix(":latest").rsplit("/", 1)[-1]

    @property
    def bare(self) -> str:
        """The identity without an Ollama-style tag: ``replay:llama3.1:8b`` -> ``llama3.1``."""
        return self.identity.split(":")[0]

    @property
    def untagged(self) -> str:
        """The name without an Ollama-style tag, case and router path kept: ``phi4:latest`` -> ``phi4``."""
        return self.name.split(":")[0]

    @property
    def prefix(self) -> str:
        """The text before the first ``:`` of ``spec`` (``""`` without one): the provider it names, known or not."""
        return self.spec.partition(":")[0] if ":" in self.spec else ""

    @property
    def offline(self) -> bool:
        """Whether the model calls no model service (stored responses, the embedded model)."""
        return self.provider in OFFLINE

    def with_endpoint(
        self, base_url: str | None, *, base_url_var: str | None = None, key_var: str | None = None
    ) -> "ModelRef":
        """A copy with ``base_url`` (and, when given, the variables) filled in.

        Args:
            base_url: the server URL.
            base_url_var: the variable it came from.
            key_var: the API key variable.

        Returns:
            The copy.
        """
        return replace(
            self, base_url=base_url, base_url_var=base_url_var or self.base_url_var, key_var=key_var or self.key_var
        )


def same_model(a: str, b: str) -> bool:
    """Whether model strings ``a`` and ``b`` name the same model (equal :meth:`ModelRef.identity_of`).

    Args:
        a: a model string.
        b: another.

    Returns:
        True for the same model.
    """
    return ModelRef.identity_of(a) == ModelRef.identity_of(b)
