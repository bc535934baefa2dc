"""``ChatOpenAIDirect``: LangChain's ``ChatOpenAI`` with a lean HTTP path for
plain chat completions (issue 6, "go as fast as the endpoints allow").

Why: on this project's reference machine (2 cores) one ``ChatOpenAI.ainvoke``
costs about 4-6 ms of CPU, most of it inside the openai SDK (a recursive
TypedDict transform of every request body, httpx request building, pydantic
construction of the response) and a thread-pool hop for parsing.  At 64
concurrent calls of 100 ms that caps one process near 200 calls/s, a third of
what the endpoint allows (``python -m sgieval.bench.throughput`` prints both).

What changes: only the transport.  The request body is still built by
``ChatOpenAI._get_request_payload`` and the reply still becomes an
``AIMessage`` through ``ChatOpenAI._create_chat_result``, so messages, tool
binding, ``tool_choice``, usage metadata and ``response_metadata`` are the
ones ``ChatOpenAI`` gives; the POST goes through one pooled
:class:`aiohttp.ClientSession` per event loop.  The bytes sent are the SDK's
(:func:`wire_body`: its key order, ``extra_body`` merged, compact UTF-8 JSON,
``"stream": false``) and the reply gets the SDK models' None-valued fields
before it becomes an AIMessage (:func:`sdk_shape`), so both transports give
the same message (tests/models/test_openai_contract.py).  For servers other
than api.openai.com the body is first adapted for stricter servers
(:func:`compat_payload`; ``server_compat`` turns that off or on).  A call that nothing observes (no
callback handler, tracer, LLM cache...; :func:`_observed`) also skips LangChain's callback machinery in
``ainvoke`` and gets the same AIMessage.  Requests this path does not
cover fall back to ``ChatOpenAI`` unchanged: streaming, the Responses API,
``response_format`` (structured output parsed by the SDK), the synchronous
``invoke``, ``include_response_headers``, a custom ``http_async_client``,
``openai_proxy`` and an ``api_key`` given as a callable.

Errors: a non-2xx reply raises :class:`OpenAIHTTPError` (``status_code``,
``headers``, ``body``), which :mod:`sgieval.models.calls` classifies like the
SDK's errors (429/408/409/5xx retried, ``Retry-After`` honoured); connection
failures raise ``aiohttp.ClientError`` subclasses, timeouts
``asyncio.TimeoutError``.

Sessions close when their event loop shuts down (``asyncio.run`` closes
async generators; the session lives in one), or explicitly with
:func:`aclose_sessions`.  So one process may run several event loops one
after the other (the CLI's resume, tests, notebooks); ``ChatOpenAI`` keeps one
httpx client per process whose pooled connections belong to the first loop,
and its next call on a later loop fails with "Event loop is closed".
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import weakref
from typing import Any, AsyncIterator, Iterator

from langchain_core.globals import get_debug, get_llm_cache, get_verbose
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables.config import ensure_config
from langchain_core.utils.env import env_var_is_set
from langchain_core.utils.uuid import uuid7
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr, model_validator

try:  # private helpers of BaseChatModel's path, which the unobserved fast path (ChatOpenAIDirect.ainvoke) reuses
    from langchain_core.language_models.chat_models import (
        LC_ID_PREFIX,
        _gen_info_and_msg_metadata,
        _normalize_messages,
    )

    _FAST_PATH = True
except ImportError:  # pragma: no cover - a langchain-core without them: every call takes LangChain's path
    _FAST_PATH = False


class OpenAIHTTPError(Exception):
    """A non-2xx reply from an OpenAI-compatible endpoint.

    Attributes: ``status_code`` (int), ``headers`` (a case-insensitive mapping
    of the reply headers, e.g. ``retry-after``), ``body`` (parsed JSON or the
    text, at most 2,000 characters) and ``url``."""

    def __init__(self, status_code: int, headers: Any, body: Any, url: str):
        self.status_code = status_code
        self.headers = headers
        self.body = body
        self.url = url
        detail = body
        if isinstance(body, dict):
            err = body.get("error")
            detail = err.get("message", err) if isinstance(err, dict) else (err or body)
        super().__init__(f"{status_code} from {url}: {str(detail)[:500]}")


_HOLDERS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[Any, Any]]" = weakref.WeakKeyDictionary()


async def _hold_session(loop: asyncio.AbstractEventLoop, limit: int) -> AsyncIterator[Any]:
    """An async generator that owns one session until the loop closes it
    (``loop.shutdown_asyncgens``, run by ``asyncio.run``) or ``aclose``; then
    it closes the session and forgets the loop."""
    import aiohttp

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=limit, limit_per_host=limit))
    try:
        yield session
    finally:
        if _HOLDERS.get(loop, (None, None))[1] is session:
            del _HOLDERS[loop]
        await session.close()


async def _session() -> Any:
    """The pooled ``aiohttp.ClientSession`` of the running loop (created on first use).
    Concurrency is bounded by :mod:`sgieval.models.calls`' per-provider
    semaphores, not by the pool (limit 1,024 connections)."""
    loop = asyncio.get_running_loop()
    held = _HOLDERS.get(loop)
    if held is None or held[1].closed:
        gen = _hold_session(loop, limit=1024)
        session = await gen.__anext__()
        held = (gen, session)
        _HOLDERS[loop] = held
    return held[1]


async def aclose_sessions() -> None:
    """Close the running loop's pooled session (no-op when none)."""
    held = _HOLDERS.get(asyncio.get_running_loop())
    if held is not None:
        await held[0].aclose()


def _text_parts(content: Any) -> str | None:
    """The text of a content list made only of text parts, else None."""
    if not isinstance(content, list) or not content:
        return None
    if not all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content):
        return None
    return "".join(p["text"] for p in content)


def compat_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """Adapt a chat-completions body for an OpenAI-compatible server that is
    not api.openai.com (issue 16 item 4: what llama-cpp-python's server, whose
    request schema is stricter than OpenAI's, rejects or ignores).  Returns
    the same dict, changed in place:

    - an assistant message with tool calls and ``content: null`` gets
      ``content: ""`` (llama-cpp-python: HTTP 500 "Input should be a valid string");
    - a content list of text parts only becomes one string (its chat template
      fails on lists: HTTP 500 "can only concatenate str (not "list") to str");
    - ``max_completion_tokens`` (what ChatOpenAI sends for ``max_tokens``) is
      also sent as ``max_tokens`` (llama-cpp-python ignores the former
      silently and generates up to the context size).
    """
    for m in payload.get("messages") or []:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "assistant" and m.get("content") is None:
            m["content"] = ""
        text = _text_parts(m.get("content"))
        if text is not None:
            m["content"] = text
    if "max_completion_tokens" in payload and "max_tokens" not in payload:
        payload["max_tokens"] = payload["max_completion_tokens"]
    return payload


def json_object_format(response_format: dict[str, Any]) -> dict[str, Any] | None:
    """``{"type": "json_object", "schema": S}`` for an OpenAI
    ``{"type": "json_schema", "json_schema": {"schema": S, ...}}``, the
    structured-output form llama-cpp-python's server accepts (it constrains
    the reply to S with a grammar); None for any other format."""
    if response_format.get("type") != "json_schema":
        return None
    schema = (response_format.get("json_schema") or {}).get("schema")
    return {"type": "json_object", "schema": schema} if isinstance(schema, dict) else {"type": "json_object"}


def _rejects_json_schema(err: "OpenAIHTTPError") -> bool:
    """Whether ``err`` says the server does not know ``response_format`` type
    ``json_schema`` (llama-cpp-python: 500 "Input should be 'text' or 'json_object'")."""
    text = json.dumps(err.body) if not isinstance(err.body, str) else err.body
    return err.status_code in (400, 422, 500) and "response_format" in text and "json_schema" in text


SDK_BODY_ORDER = (
    "model",
    "stream",
    "service_tier",
    "messages",
    "audio",
    "frequency_penalty",
    "function_call",
    "functions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "metadata",
    "modalities",
    "moderation",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "stop",
    "store",
    "stream_options",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
)
"""Key order of the chat-completions body the openai SDK sends (``AsyncCompletions.create``, openai 3.x);
tests/models/test_openai_contract.py fails when an installed version sends other bytes."""


def wire_body(payload: dict[str, Any]) -> bytes:
    """The request body exactly as the openai SDK sends ``payload`` (``ChatOpenAI._get_request_payload``'s
    dict): known keys in :data:`SDK_BODY_ORDER`, then other keys in their order, then the entries of
    ``extra_body`` merged at the top level (not a literal ``"extra_body"`` key); compact JSON, UTF-8 without
    ASCII escapes (what httpx sends for ``json=``).  Raises ValueError for NaN or infinite numbers."""
    extra = payload.get("extra_body") or {}
    rank = {k: i for i, k in enumerate(SDK_BODY_ORDER)}
    keys = sorted((k for k in payload if k != "extra_body"), key=lambda k: rank.get(k, len(rank)))
    body = {k: payload[k] for k in keys}
    body.update(extra)
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def _optional_fields(cls: Any) -> dict[str, Any]:
    """Fields of an openai response model with a default (name -> default), in declaration order."""
    return {n: f.default for n, f in cls.model_fields.items() if not f.is_required()}


_SHAPES: dict[str, dict[str, Any]] = {}
"""Memo of the SDK response models' optional fields (filled once; derived from the installed openai package)."""


def sdk_shape(data: dict[str, Any]) -> dict[str, Any]:
    """The chat-completion reply ``data`` with the optional fields the SDK's response models add when it
    parses a reply (``ChatCompletion``, ``Choice``, ``ChatCompletionMessage``, ``CompletionUsage``: e.g.
    ``refusal``, ``system_fingerprint``, token details, None when absent), so ``_create_chat_result``
    builds the AIMessage of the SDK path without building the models (about 5x cheaper)."""
    if not _SHAPES:
        from openai.types.chat import ChatCompletion, ChatCompletionMessage
        from openai.types.chat.chat_completion import Choice
        from openai.types.completion_usage import CompletionUsage

        _SHAPES.update(
            completion=_optional_fields(ChatCompletion),
            choice=_optional_fields(Choice),
            message=_optional_fields(ChatCompletionMessage),
            usage=_optional_fields(CompletionUsage),
        )
    out = {**_SHAPES["completion"], **data}
    if isinstance(out.get("choices"), list):
        out["choices"] = [
            {
                **_SHAPES["choice"],
                **c,
                "message": {**_SHAPES["message"], **c["message"]}
                if isinstance(c.get("message"), dict)
                else c.get("message"),
            }
            if isinstance(c, dict)
            else c
            for c in out["choices"]
        ]
    if isinstance(out.get("usage"), dict):
        out["usage"] = {**_SHAPES["usage"], **out["usage"]}
    return out


_SDK_CLIENT_FIELDS = ("client", "async_client", "root_client", "root_async_client")
"""``ChatOpenAI``'s openai SDK clients (built by its ``validate_environment``)."""

_SDK_CLIENT_INPUTS = (*_SDK_CLIENT_FIELDS, "http_client", "http_async_client", "openai_proxy")
"""Constructor arguments that shape those clients: given any, the clients are built at construction as usual."""


class _SDKTwin:
    """The openai SDK clients of one :class:`ChatOpenAIDirect`, built when first needed (issue 13: start fast).

    ``ChatOpenAI`` builds a sync and an async SDK client when it is constructed (two SSL contexts, the SDK's
    chat resources: ~80 ms before a run's first call), but the direct path never uses them.  The twin keeps
    the constructor's arguments and builds a plain ``ChatOpenAI`` from them on first use, so the clients
    are the ones ``ChatOpenAI`` itself builds (base URL, key, organisation, headers, query, timeout,
    retries), and ``stream_usage`` gets the default ``ChatOpenAI`` would have given."""

    def __init__(self, kwargs: dict[str, Any]):
        self.kwargs = kwargs
        self._twin: ChatOpenAI | None = None
        self._lock = threading.Lock()

    def twin(self) -> ChatOpenAI:
        with self._lock:
            if self._twin is None:
                self._twin = ChatOpenAI(**self.kwargs)
            return self._twin

    def __getstate__(self) -> dict[str, Any]:
        return {"kwargs": self.kwargs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["kwargs"])  # type: ignore[misc]


class _DeferredClient:
    """Stands in a ``ChatOpenAI`` client field until :meth:`ChatOpenAIDirect._ensure_sdk` puts the real
    client there; any attribute read builds it first (a path that reads a client without going through
    ``_ensure_sdk`` still gets the real one)."""

    def __init__(self, sdk: _SDKTwin, field: str):
        self.sdk = sdk
        self.field = field

    def __getattr__(self, name: str) -> Any:
        if name in ("sdk", "field") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(getattr(self.sdk.twin(), self.field), name)


class ChatOpenAIDirect(ChatOpenAI):
    """``ChatOpenAI`` whose async chat-completions calls skip the openai SDK
    (see the module docstring for what is covered and what falls back).

    Same constructor as ``ChatOpenAI``; ``max_retries`` is ignored on the
    direct path (retries belong to :func:`sgieval.models.calls.ainvoke`).
    The openai SDK clients ``ChatOpenAI`` builds at construction are built
    here on the first call that goes through the SDK (:class:`_SDKTwin`),
    unless the caller passes a client, an HTTP client or a proxy.

    With a base URL other than api.openai.com (or ``server_compat=True``) the
    body goes through :func:`compat_payload`, and structured output (a ``response_format``
    dict, as ``with_structured_output(method="json_schema")`` binds it) is
    (a pydantic class converted as the openai SDK's ``parse`` converts it)
    sent on the direct path: when the server rejects type ``json_schema``
    the call is repeated once with :func:`json_object_format` (and that form
    is used for later calls of this instance); the reply's JSON goes to
    ``additional_kwargs["parsed"]`` for LangChain's structured-output parser.
    A 500 reply that is a request validation error (llama-cpp-python reports
    those as 500) is raised with status 400, so it is not retried.
    """

    server_compat: bool | None = None
    """Adapt bodies for servers stricter than OpenAI's (:func:`compat_payload`, the ``json_object`` fallback):
    None (default) does it for base URLs other than api.openai.com, True always, False never (then the body
    is byte for byte what ``ChatOpenAI`` sends)."""

    _json_object_only: bool = False

    @model_validator(mode="before")
    @classmethod
    def _defer_sdk_clients(cls, data: Any) -> Any:
        """Construction: unless the caller gives a client, an HTTP client or a proxy, the four SDK client
        fields get :class:`_DeferredClient` placeholders, so ``ChatOpenAI.validate_environment`` does not
        build clients the direct path never uses (:class:`_SDKTwin` builds them on first use)."""
        if not isinstance(data, dict) or any(data.get(k) is not None for k in _SDK_CLIENT_INPUTS):
            return data
        sdk = _SDKTwin({k: v for k, v in data.items() if k != "server_compat"})
        return {**data, **{f: _DeferredClient(sdk, f) for f in _SDK_CLIENT_FIELDS}}

    def _ensure_sdk(self) -> None:
        """Put the real SDK clients in place of the placeholders (and ``ChatOpenAI``'s ``stream_usage``
        default, when the caller gave none) before a path that uses the SDK runs."""
        deferred = self.async_client if isinstance(self.async_client, _DeferredClient) else None
        if deferred is None:
            return
        twin = deferred.sdk.twin()
        for f in _SDK_CLIENT_FIELDS:
            object.__setattr__(self, f, getattr(twin, f))
        if self.stream_usage is None and "stream_usage" not in deferred.sdk.kwargs:
            object.__setattr__(self, "stream_usage", twin.stream_usage)

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        self._ensure_sdk()
        return super()._generate(*args, **kwargs)

    def _stream(self, *args: Any, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        self._ensure_sdk()
        yield from super()._stream(*args, **kwargs)

    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        self._ensure_sdk()
        async for chunk in super()._astream(*args, **kwargs):
            yield chunk

    def _official(self) -> bool:
        base = (self.openai_api_base or "https://api.openai.com/v1").lower()
        return "api.openai.com" in base

    def _compat(self) -> bool:
        return (not self._official()) if self.server_compat is None else self.server_compat

    def _direct_ok(self, payload: dict) -> bool:
        key = self.openai_api_key
        rf = payload.get("response_format")
        structured = isinstance(rf, dict) or (isinstance(rf, type) and issubclass(rf, BaseModel))
        return not (
            payload.get("stream")
            or (rf is not None and not (structured and self._compat()))
            or self._use_responses_api(payload)
            or self.include_response_headers
            or self.http_async_client is not None
            or self.openai_proxy
            or not (key is None or isinstance(key, SecretStr))
        )

    def _direct_url_headers(self) -> tuple[str, dict[str, str]]:
        base = (self.openai_api_base or "https://api.openai.com/v1").rstrip("/")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self.openai_api_key.get_secret_value() if isinstance(self.openai_api_key, SecretStr) else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        if self.openai_organization:
            headers["OpenAI-Organization"] = self.openai_organization
        headers.update({str(k): str(v) for k, v in (self.default_headers or {}).items()})
        url = f"{base}/chat/completions"
        if self.default_query:
            from urllib.parse import urlencode

            url += "?" + urlencode({str(k): str(v) for k, v in self.default_query.items()})
        return url, headers

    def _direct_timeout(self) -> Any:
        import aiohttp

        t = self.request_timeout
        if isinstance(t, (int, float)):
            return aiohttp.ClientTimeout(total=float(t))
        if isinstance(t, tuple) and t:
            return aiohttp.ClientTimeout(total=None, sock_connect=t[0], sock_read=t[-1])
        return aiohttp.ClientTimeout(total=600.0)

    async def ainvoke(self, input: Any, config: Any = None, *, stop: list[str] | None = None, **kwargs: Any) -> Any:
        """``BaseChatModel.ainvoke``'s result, without its callback machinery when nothing observes the call
        (:func:`_observed`: no callback handler, tracer, debug/verbose flag, LLM cache, rate limiter or
        streaming): the same AIMessage (response metadata merged as ``_agenerate_with_cache`` merges it, a
        ``lc_run-`` id) for about a third of the CPU (issue 13; ``python -m sgieval.bench.throughput``).
        Observed calls take LangChain's path unchanged."""
        if not _FAST_PATH or _observed(self, config, kwargs):
            return await super().ainvoke(input, config, stop=stop, **kwargs)
        kwargs.pop("ls_structured_output_format", None)  # tracing metadata only, as BaseChatModel.agenerate pops it
        kwargs.pop("structured_output_format", None)
        messages = _normalize_messages(self._convert_input(input).to_messages())
        result = await self._agenerate(messages, stop=stop, **kwargs)
        gen = result.generations[0]
        msg = gen.message
        if msg.id is None:
            msg.id = f"{LC_ID_PREFIX}-{uuid7()}-0"
        msg.response_metadata = _gen_info_and_msg_metadata(gen)
        if len(result.generations) == 1 and result.llm_output is not None:
            msg.response_metadata = {**result.llm_output, **msg.response_metadata}
        return msg

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        payload = self._get_request_payload(messages, stop=stop, **kwargs)
        if not self._direct_ok(payload):
            self._ensure_sdk()
            return await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)
        url, headers = self._direct_url_headers()
        rf = payload.get("response_format")
        if rf is not None:
            payload.pop("stream", None)  # as the SDK path's parse() (plain create() sends "stream": false)
        if isinstance(rf, type) and issubclass(rf, BaseModel):  # what the SDK's parse() would send for the class
            from openai.lib._parsing._completions import type_to_response_format_param

            rf = payload["response_format"] = dict(type_to_response_format_param(rf))  # type: ignore[arg-type]  # a class gives a dict, never Omit
        if self._compat():
            compat_payload(payload)
            if isinstance(rf, dict) and self._json_object_only and json_object_format(rf) is not None:
                payload["response_format"] = json_object_format(rf)
        try:
            data = await self._post(url, headers, payload)
        except OpenAIHTTPError as e:
            fallback = json_object_format(rf) if isinstance(rf, dict) else None
            if fallback is None or payload.get("response_format") == fallback or not _rejects_json_schema(e):
                raise
            object.__setattr__(self, "_json_object_only", True)
            data = await self._post(url, headers, {**payload, "response_format": fallback})
        if not isinstance(data, dict):
            return self._create_chat_result(data, {})  # LangChain's error for a non-JSON-object reply
        shaped = sdk_shape(data)
        result = self._create_chat_result(shaped, {})
        first = (shaped.get("choices") or [None])[0]
        if result.generations and isinstance(first, dict) and isinstance(first.get("message"), dict):
            # as ChatOpenAI does for the SDK's parsed reply: the message's refusal (None when none)
            result.generations[0].message.additional_kwargs["refusal"] = first["message"].get("refusal")
        keep_separate_reasoning(data, result)
        if isinstance(rf, dict) and rf.get("type") in ("json_schema", "json_object") and result.generations:
            msg = result.generations[0].message
            if isinstance(msg.content, str) and msg.content.strip() and "parsed" not in msg.additional_kwargs:
                try:
                    msg.additional_kwargs["parsed"] = json.loads(msg.content)
                except ValueError:
                    pass  # LangChain's parser reports the reply as unparsable
        return result

    async def _post(self, url: str, headers: dict[str, str], payload: dict) -> Any:
        session = await _session()
        async with session.post(url, data=wire_body(payload), headers=headers, timeout=self._direct_timeout()) as resp:
            raw = await resp.read()
            if resp.status >= 300:
                text = raw.decode("utf-8", "replace")[:2000]
                try:
                    body: Any = json.loads(text)
                except ValueError:
                    body = text
                status = resp.status
                if status == 500 and "validation error" in text:  # llama-cpp-python: a bad request, not a server fault
                    status = 400
                raise OpenAIHTTPError(status, resp.headers, body, url)
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ValueError(f"non-JSON reply from {url}: {raw[:200]!r}") from e


def _observed(chat: ChatOpenAIDirect, config: Any, kwargs: dict[str, Any]) -> bool:
    """Whether LangChain's ``ainvoke`` path must run for this call of ``chat``: a callback handler in the
    (context-merged) ``config`` or on the model, LangSmith tracing (environment, ``tracing_v2_enabled``, a
    ``@traceable`` parent), a registered configure hook, ``set_debug``/``set_verbose``, an LLM cache, a rate
    limiter, streaming, or ``output_version="v1"``."""
    if (
        chat.callbacks
        or chat.verbose
        or chat.rate_limiter is not None
        or chat.streaming
        or kwargs.get("stream")
        or chat.output_version == "v1"
        or get_debug()
        or get_verbose()
        or (chat.cache is not None and chat.cache is not False)  # a cache object, or True (the global one)
        or (chat.cache is None and get_llm_cache() is not None)
    ):
        return True
    cbs = ensure_config(config).get("callbacks")
    if cbs and (isinstance(cbs, list) or getattr(cbs, "handlers", None) or getattr(cbs, "inheritable_handlers", None)):
        return True
    configure_hooks, tracing_v2_is_enabled, get_tracing_context = _tracing_checks()
    if tracing_v2_is_enabled():
        return True
    tracing = get_tracing_context()
    if tracing.get("enabled") or tracing.get("parent") is not None:
        return True
    return any(var.get() is not None or (env and env_var_is_set(env)) for var, _, _, env in configure_hooks)


@functools.lru_cache(maxsize=1)
def _tracing_checks() -> tuple[Any, Any, Any]:
    """LangSmith's tracing switches, imported on the first call (langsmith is heavy; LangGraph has
    usually imported it by then)."""
    from langchain_core.tracers.context import _configure_hooks, _tracing_v2_is_enabled
    from langsmith.run_helpers import get_tracing_context

    return _configure_hooks, _tracing_v2_is_enabled, get_tracing_context


REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Message fields in which OpenAI-compatible servers (vLLM, DeepSeek, llama.cpp,
OpenRouter) return a reasoning model's thinking apart from its content."""


def keep_separate_reasoning(data: dict, result: ChatResult) -> None:
    """Copy the first choice's ``reasoning_content`` (or ``reasoning``) string into
    the AIMessage's ``additional_kwargs["reasoning_content"]`` (``ChatOpenAI``
    drops it; METRICS.md D.8 keeps it on the record, never scored)."""
    try:
        msg = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        return
    for f in REASONING_FIELDS:
        v = msg.get(f) if isinstance(msg, dict) else None
        if isinstance(v, str) and v.strip() and result.generations:
            result.generations[0].message.additional_kwargs["reasoning_content"] = v
            return
