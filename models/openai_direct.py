"""``ChatOpenAIDirect``: sgieval's chat model for OpenAI-compatible chat-completions servers.

A small LangChain chat model built on ``BaseChatModel``'s documented extension points (``_agenerate``,
``_generate``, ``_llm_type``, ``_identifying_params``, ``bind_tools``, ``with_structured_output``) over one
pooled :class:`aiohttp.ClientSession` per event loop (``httpx`` for the synchronous ``invoke``).  It uses the
public APIs of langchain-core only (message classes, ``convert_to_openai_tool``, ``parse_tool_call``, output
parsers, ``AsyncCallbackManager.configure``) and no part of langchain-openai or of the openai SDK, so neither
package's internals can break a call; ``SGIEVAL_OPENAI_TRANSPORT=sdk`` selects langchain-openai's
``ChatOpenAI`` instead.

Why not ``ChatOpenAI``: on this project's reference machine (2 cores) one ``ChatOpenAI.ainvoke`` costs about
4-6 ms of CPU, most of it inside the openai SDK (a recursive TypedDict transform of every request body, httpx
request building, pydantic construction of the response) and a thread-pool hop for parsing; this model takes
well under 1 ms (``python -m sgieval.bench.throughput`` prints both, ``bench/e2e.py`` the end-to-end ratios).

What it sends and returns is what ``ChatOpenAI`` sends and returns (tests/models/test_openai_contract.py
compares both against the mock server, byte for byte and message for message): the request body in the SDK's
key order (:func:`wire_body`: ``extra_body`` merged, compact UTF-8 JSON, ``"stream": false``), messages
converted as ``ChatOpenAI`` converts them (:func:`message_dict`), and an ``AIMessage`` with the same content,
tool calls, usage metadata and response metadata (:func:`chat_result`).  For servers other than
api.openai.com the body is first adapted for stricter servers (:func:`compat_payload`; ``server_compat``
turns that off or on), and a server's separate reasoning text is kept (:func:`keep_separate_reasoning`).

A call that nothing observes (no callback handler, tracer, LLM cache...; :func:`observed`, which asks
LangChain's public ``AsyncCallbackManager.configure``) skips LangChain's callback machinery in ``ainvoke`` and
gets the same AIMessage.

Errors: a non-2xx reply raises :class:`OpenAIHTTPError` (``status_code``, ``headers``, ``body``), which
:mod:`sgieval.models.calls` classifies like the SDK's errors (429/408/409/5xx retried, ``Retry-After``
honoured); connection failures raise ``aiohttp.ClientError`` subclasses, timeouts ``asyncio.TimeoutError``.

Sessions close when their event loop shuts down (``asyncio.run`` closes async generators; the session lives
in one), or explicitly with :func:`aclose_sessions`, so one process may run several event loops one after the
other (the CLI's resume, tests, notebooks).
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
import weakref
from typing import Any, AsyncIterator, Callable, Literal, Mapping, Sequence

from langchain_core.callbacks import AsyncCallbackManager
from langchain_core.globals import get_debug, get_llm_cache, get_verbose
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.messages.ai import InputTokenDetails, OutputTokenDetails, UsageMetadata
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.output_parsers.openai_tools import (
    JsonOutputKeyToolsParser,
    PydanticToolsParser,
    make_invalid_tool_call,
    parse_tool_call,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough, ensure_config
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field, SecretStr

OFFICIAL_BASE = "https://api.openai.com/v1"


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
    not api.openai.com (what llama-cpp-python's server, whose
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


# ------------------------------------------------------------------ request
_SKIPPED_BLOCKS = ("tool_use", "thinking", "reasoning_content", "function_call", "code_interpreter_call")


def _content(content: Any) -> Any:
    """Message content as chat completions takes it: block lists without the block types it rejects."""
    if isinstance(content, list) and content:
        return [b for b in content if not (isinstance(b, dict) and b.get("type") in _SKIPPED_BLOCKS)]
    return content


def _tool_call_dict(tc: Mapping[str, Any], valid: bool) -> dict[str, Any]:
    args = json.dumps(tc["args"], ensure_ascii=False) if valid else tc.get("args")
    return {"type": "function", "id": tc.get("id"), "function": {"name": tc.get("name"), "arguments": args}}


def message_dict(message: BaseMessage) -> dict[str, Any]:
    """One LangChain message as a chat-completions message (the dict ``ChatOpenAI`` sends, key order included).

    Args:
        message: a System, Human, AI (with or without tool calls), Tool, Function or Chat message.

    Returns:
        ``{"content", ["name"], "role", ...}``: an AI message with tool calls carries ``tool_calls`` and
        ``content`` None when it has no text; a tool message is ``{"content", "role": "tool", "tool_call_id"}``.

    Raises:
        TypeError: another message type.
    """
    out: dict[str, Any] = {"content": _content(message.content)}
    name = message.name or message.additional_kwargs.get("name")
    if name is not None:
        out["name"] = name
    if isinstance(message, ChatMessage):
        out["role"] = message.role
    elif isinstance(message, HumanMessage):
        out["role"] = "user"
    elif isinstance(message, AIMessage):
        out["role"] = "assistant"
        if message.tool_calls or message.invalid_tool_calls:
            out["tool_calls"] = [_tool_call_dict(tc, True) for tc in message.tool_calls] + [
                _tool_call_dict(tc, False) for tc in message.invalid_tool_calls
            ]
        elif "tool_calls" in message.additional_kwargs:
            out["tool_calls"] = [
                {k: v for k, v in tc.items() if k in ("id", "type", "function")}
                for tc in message.additional_kwargs["tool_calls"]
            ]
        elif "function_call" in message.additional_kwargs:
            out["function_call"] = message.additional_kwargs["function_call"]
        if "tool_calls" in out or "function_call" in out:
            out["content"] = out["content"] or None
        if isinstance(message.content, list):
            text = [b for b in message.content if not (isinstance(b, dict) and b.get("type") in ("tool_call",))]
            out["content"] = text or out["content"]
    elif isinstance(message, SystemMessage):
        out["role"] = message.additional_kwargs.get("__openai_role__", "system")
    elif isinstance(message, FunctionMessage):
        out["role"] = "function"
    elif isinstance(message, ToolMessage):
        content = out["content"]
        if isinstance(content, list):
            content = [
                {"type": "text", "text": b["text"]} if isinstance(b, dict) and b.get("type") == "text" else b
                for b in content
            ]
        out = {"content": content, "role": "tool", "tool_call_id": message.tool_call_id}
    else:
        raise TypeError(f"cannot send a {type(message).__name__} to a chat-completions server")
    return out


def to_messages(input: LanguageModelInput) -> list[BaseMessage]:
    """A chat model's input (a string, a prompt value or a message sequence) as a message list."""
    if isinstance(input, str):
        return [HumanMessage(input)]
    if isinstance(input, PromptValue):
        return input.to_messages()
    return convert_to_messages(input)  # type: ignore[arg-type]


# ------------------------------------------------------------------ reply
COMPLETION_FIELDS: dict[str, dict[str, Any]] = {
    "completion": {
        "metadata": None,
        "moderation": None,
        "service_tier": None,
        "system_fingerprint": None,
        "usage": None,
    },
    "choice": {"logprobs": None},
    "message": {
        "content": None,
        "refusal": None,
        "annotations": None,
        "audio": None,
        "function_call": None,
        "tool_calls": None,
    },
    "usage": {"completion_tokens_details": None, "prompt_tokens_details": None},
}
"""The optional fields (and their defaults) the openai SDK's response models (``ChatCompletion``, ``Choice``,
``ChatCompletionMessage``, ``CompletionUsage``) add to a reply, so :func:`chat_result` gives ``ChatOpenAI``'s
message (``response_metadata["token_usage"]`` included).  A table, not read from the openai package at run time:
importing openai's ~500 type modules costs about 0.4 s of CPU on the event loop while the first replies wait;
a test compares it with the pinned package's declarations (:func:`installed_completion_fields`)."""


def completion_fields() -> dict[str, dict[str, Any]]:
    """The optional reply fields the openai SDK adds (:data:`COMPLETION_FIELDS`).

    Returns:
        ``{"completion" | "choice" | "message" | "usage": {field name: default}}``.
    """
    return COMPLETION_FIELDS


def installed_completion_fields() -> dict[str, dict[str, Any]]:
    """The optional reply fields as the installed openai package's public response types declare them (the
    check of :data:`COMPLETION_FIELDS`; the transport never calls it).

    Returns:
        The same shape as :func:`completion_fields`.

    Raises:
        ImportError: openai is not installed.
    """
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletion, ChatCompletionMessage
    from openai.types.chat.chat_completion import Choice

    def optional(cls: Any) -> dict[str, Any]:
        return {n: f.default for n, f in cls.model_fields.items() if not f.is_required()}

    return {
        "completion": optional(ChatCompletion),
        "choice": optional(Choice),
        "message": optional(ChatCompletionMessage),
        "usage": optional(CompletionUsage),
    }


def sdk_shape(data: dict[str, Any]) -> dict[str, Any]:
    """The chat-completion reply ``data`` with the optional fields the openai SDK adds when it parses a reply
    (:func:`completion_fields`: ``refusal``, ``system_fingerprint``, token details..., None when absent)."""
    f = completion_fields()
    out = {**f["completion"], **data}
    if isinstance(out.get("choices"), list):
        out["choices"] = [
            {
                **f["choice"],
                **c,
                "message": {**f["message"], **c["message"]} if isinstance(c.get("message"), dict) else c.get("message"),
            }
            if isinstance(c, dict)
            else c
            for c in out["choices"]
        ]
    if isinstance(out.get("usage"), dict):
        out["usage"] = {**f["usage"], **out["usage"]}
    return out


def usage_metadata(usage: Mapping[str, Any], service_tier: str | None = None) -> UsageMetadata:
    """LangChain usage metadata from an OpenAI ``usage`` object (tokens; cached input and reasoning output
    tokens in the details; a ``priority``/``flex`` service tier prefixes those keys as OpenAI prices them)."""
    inp = usage.get("prompt_tokens") or 0
    outp = usage.get("completion_tokens") or 0
    total = usage.get("total_tokens")
    tier = service_tier if service_tier in ("priority", "flex") else None
    pre = f"{tier}_" if tier else ""
    pd = usage.get("prompt_tokens_details") or {}
    cd = usage.get("completion_tokens_details") or {}
    ind: dict[str, Any] = {
        "audio": pd.get("audio_tokens"),
        f"{pre}cache_read": pd.get("cached_tokens"),
        f"{pre}cache_creation": pd.get("cache_write_tokens"),
    }
    outd: dict[str, Any] = {"audio": cd.get("audio_tokens"), f"{pre}reasoning": cd.get("reasoning_tokens")}
    if tier is not None:
        ind[tier] = inp - (ind.get(f"{pre}cache_read") or 0)
        outd[tier] = outp - (outd.get(f"{pre}reasoning") or 0)
    return UsageMetadata(
        input_tokens=inp,
        output_tokens=outp,
        total_tokens=total if total is not None else inp + outp,
        input_token_details=InputTokenDetails(**{k: v for k, v in ind.items() if v is not None}),  # type: ignore[typeddict-item]
        output_token_details=OutputTokenDetails(**{k: v for k, v in outd.items() if v is not None}),  # type: ignore[typeddict-item]
    )


def _ai_message(d: Mapping[str, Any]) -> AIMessage:
    extra: dict[str, Any] = {}
    if d.get("function_call"):
        extra["function_call"] = dict(d["function_call"])
    calls, invalid = [], []
    for raw in d.get("tool_calls") or []:
        try:
            calls.append(parse_tool_call(raw, return_id=True))
        except Exception as e:  # noqa: BLE001 - a malformed call is kept as an invalid tool call
            invalid.append(make_invalid_tool_call(raw, str(e)))
    if d.get("audio"):
        extra["audio"] = d["audio"]
    extra["refusal"] = d.get("refusal")
    return AIMessage(
        content=d.get("content") or "",
        additional_kwargs=extra,
        name=d.get("name"),
        id=d.get("id"),
        tool_calls=[c for c in calls if c is not None],
        invalid_tool_calls=invalid,
    )


def chat_result(data: Any, model_name: str) -> ChatResult:
    """A chat-completion reply (parsed JSON) as a LangChain ``ChatResult``: one generation per choice, its
    ``generation_info`` holding ``finish_reason`` (and ``logprobs``), ``llm_output`` the usage, model, system
    fingerprint, id and service tier (what ``ChatOpenAI`` gives).

    Raises:
        ValueError: a reply that is not a JSON object, or that reports an error.
        KeyError: a reply without ``choices``.
        TypeError: ``choices`` null (some servers' malformed reply).
    """
    if not isinstance(data, dict):
        raise ValueError(f"Unexpected response type from OpenAI-compatible endpoint: {str(data)[:200]!r}")
    data = sdk_shape(data)
    if data.get("error"):
        raise ValueError(data.get("error"))
    if "choices" not in data:
        raise KeyError(f"Response missing 'choices' key: {data.keys()}")
    if data["choices"] is None:
        raise TypeError(f"Received response with null value for 'choices'; keys: {list(data)}")
    usage = data.get("usage")
    tier = data.get("service_tier")
    gens = []
    for choice in data["choices"]:
        msg = _ai_message(choice.get("message") or {})
        if usage:
            msg.usage_metadata = usage_metadata(usage, tier)
        info: dict[str, Any] = {"finish_reason": choice.get("finish_reason")}
        if "logprobs" in choice:
            info["logprobs"] = choice["logprobs"]
        gens.append(ChatGeneration(message=msg, generation_info=info))
    llm_output: dict[str, Any] = {
        "token_usage": usage,
        "model_provider": "openai",
        "model_name": data.get("model", model_name),
        "system_fingerprint": data.get("system_fingerprint", ""),
    }
    if "id" in data:
        llm_output["id"] = data["id"]
    if tier:
        llm_output["service_tier"] = tier
    return ChatResult(generations=gens, llm_output=llm_output)


# ------------------------------------------------------------------ observation
def observed(chat: BaseChatModel, config: Any, kwargs: Mapping[str, Any]) -> bool:
    """Whether LangChain's own ``ainvoke`` path must run for this call of ``chat``: a callback handler or tracer
    (in the config, on the model, from a configure hook, LangSmith tracing by environment or context: whatever
    ``AsyncCallbackManager.configure`` finds), ``set_debug``/``set_verbose``, an LLM cache, a rate limiter or
    streaming."""
    if (
        chat.callbacks
        or chat.verbose
        or chat.rate_limiter is not None
        or kwargs.get("stream")
        or get_debug()
        or get_verbose()
        or (chat.cache is not None and chat.cache is not False)  # a cache object, or True (the global one)
        or (chat.cache is None and get_llm_cache() is not None)
    ):
        return True
    c = ensure_config(config)
    manager = AsyncCallbackManager.configure(
        c.get("callbacks"), None, False, c.get("tags"), chat.tags, c.get("metadata"), chat.metadata
    )
    return bool(manager.handlers)


RUN_ID_PREFIX = "lc_run-"
"""The prefix of the id LangChain gives a message it generated (``lc_run--<uuid>-0``)."""


# ------------------------------------------------------------------ the model
class ChatOpenAIDirect(BaseChatModel):
    """A chat model for any OpenAI-compatible chat-completions endpoint (module doc).

    Takes ``ChatOpenAI``'s constructor arguments for what it supports: ``model``, ``base_url``, ``api_key``,
    ``organization``, ``timeout`` (s), ``temperature`` (0-2), ``max_tokens`` (alias ``max_completion_tokens``),
    ``top_p``, ``seed``, ``stop``, ``presence_penalty``, ``frequency_penalty``, ``n``, ``logprobs``,
    ``top_logprobs``, ``reasoning_effort``, ``model_kwargs`` (sent as they are), ``extra_body`` (merged into the
    body), ``default_headers``, ``default_query``; ``max_retries`` is kept but not used (retries belong to
    :func:`sgieval.models.calls.ainvoke`).

    With a base URL other than api.openai.com (or ``server_compat=True``) the body goes through
    :func:`compat_payload`, and when the server rejects ``response_format`` type ``json_schema`` the call is
    repeated once with :func:`json_object_format` (that form is kept for later calls of this instance); a
    structured reply's JSON is put in ``additional_kwargs["parsed"]``.  A 500 reply that is a request
    validation error (llama-cpp-python reports those as 500) is raised with status 400, so it is not retried.
    """

    model_config = ConfigDict(populate_by_name=True, arbitrary_types_allowed=True)

    model_name: str = Field(default="gpt-4o-mini", alias="model")
    openai_api_base: str | None = Field(default=None, alias="base_url")
    openai_api_key: SecretStr | None = Field(default=None, alias="api_key")
    openai_organization: str | None = Field(default=None, alias="organization")
    request_timeout: float | tuple[float, float] | None = Field(default=None, alias="timeout")
    max_retries: int | None = None
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, alias="max_completion_tokens")
    top_p: float | None = None
    seed: int | None = None
    stop: list[str] | str | None = Field(default=None, alias="stop_sequences")
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    n: int | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    reasoning_effort: str | None = None
    model_kwargs: dict[str, Any] = Field(default_factory=dict)
    extra_body: dict[str, Any] | None = None
    default_headers: dict[str, str] | None = None
    default_query: dict[str, Any] | None = None
    server_compat: bool | None = None
    """Adapt bodies for servers stricter than OpenAI's (:func:`compat_payload`, the ``json_object`` fallback):
    None (default) does it for base URLs other than api.openai.com, True always, False never."""
    json_object_only: bool = False
    """Set once the server rejected ``json_schema``: structured output is sent as ``json_object`` from then on."""

    @property
    def _llm_type(self) -> str:
        return "openai-compatible"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, **self.default_params()}

    # -------------------------------------------------------------- request
    def default_params(self) -> dict[str, Any]:
        """The body's parameters before the messages (``ChatOpenAI``'s defaults: None values are not sent,
        ``max_tokens`` goes as ``max_completion_tokens``, then ``model_kwargs``)."""
        optional = {
            "presence_penalty": self.presence_penalty,
            "frequency_penalty": self.frequency_penalty,
            "seed": self.seed,
            "top_p": self.top_p,
            "logprobs": self.logprobs,
            "top_logprobs": self.top_logprobs,
            "stop": self.stop or None,
            "max_completion_tokens": self.max_tokens,
            "extra_body": self.extra_body,
            "n": self.n,
            "temperature": self.temperature,
            "reasoning_effort": self.reasoning_effort,
        }
        return {
            "model": self.model_name,
            "stream": False,
            **{k: v for k, v in optional.items() if v is not None},
            **self.model_kwargs,
        }

    def request_payload(self, messages: Sequence[BaseMessage], stop: list[str] | None = None, **kwargs: Any) -> dict:
        """The request body (a dict, before :func:`wire_body`) for ``messages`` and the call's keywords (bound
        tools, ``tool_choice``, ``response_format``, ``max_tokens``...)."""
        if stop is not None:
            kwargs["stop"] = stop
        if "max_tokens" in kwargs:
            kwargs["max_completion_tokens"] = kwargs.pop("max_tokens")
        payload = {**self.default_params(), **kwargs}
        if "max_tokens" in payload:
            payload["max_completion_tokens"] = payload.pop("max_tokens")
        msgs = [message_dict(m) for m in messages]
        if re.match(r"^o\d", self.model_name or ""):  # o-series models take the system prompt as "developer"
            for m in msgs:
                if m["role"] == "system":
                    m["role"] = "developer"
        payload["messages"] = msgs
        return payload

    def sent_payload(self, messages: Sequence[BaseMessage], **kwargs: Any) -> dict:
        """The request body this model sends for ``messages`` and the call's keywords (bound tools,
        ``tool_choice``, ``response_format``...), as a dict: :meth:`request_payload` with a pydantic
        ``response_format`` made a JSON schema and, for a server other than api.openai.com, the adaptations of
        :func:`compat_payload`; what :func:`wire_body` serialises.  Sends nothing.

        Args:
            messages: the messages.
            **kwargs: the call's keywords, as bound to the model.

        Returns:
            The body as a dict (``messages`` as chat-completions messages, ``tools`` as bound...).
        """
        return self._prepare(list(messages), None, dict(kwargs))

    def _official(self) -> bool:
        return "api.openai.com" in (self.openai_api_base or OFFICIAL_BASE).lower()

    def _compat(self) -> bool:
        return (not self._official()) if self.server_compat is None else self.server_compat

    def url_and_headers(self) -> tuple[str, dict[str, str]]:
        """The chat-completions URL and the request headers (key, organisation, the caller's headers)."""
        base = (self.openai_api_base or OFFICIAL_BASE).rstrip("/")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self.openai_api_key.get_secret_value() if self.openai_api_key is not None else None
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

    def _timeout_s(self) -> tuple[float | None, float | None, float | None]:
        """(total, connect, read) seconds."""
        t = self.request_timeout
        if isinstance(t, (int, float)):
            return float(t), None, None
        if isinstance(t, tuple) and t:
            return None, float(t[0]), float(t[-1])
        return 600.0, None, None

    def _prepare(self, messages: Sequence[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> dict:
        kwargs.pop("ls_structured_output_format", None)  # tracing metadata only, never sent
        kwargs.pop("structured_output_format", None)
        payload = self.request_payload(messages, stop=stop, **kwargs)
        rf = payload.get("response_format")
        if isinstance(rf, type) and issubclass(rf, BaseModel):
            rf = payload["response_format"] = json_schema_format(rf)
        if rf is not None:
            payload["stream"] = False  # the openai SDK's parse() sends "stream": false with a response_format
        if self._compat():
            compat_payload(payload)
            if isinstance(rf, dict) and self.json_object_only and json_object_format(rf) is not None:
                payload["response_format"] = json_object_format(rf)
        return payload

    def _finish(self, data: Any, rf: Any) -> ChatResult:
        result = chat_result(data, self.model_name)
        keep_separate_reasoning(data, result)
        if isinstance(rf, dict) and rf.get("type") in ("json_schema", "json_object") and result.generations:
            msg = result.generations[0].message
            if isinstance(msg.content, str) and msg.content.strip():
                try:
                    msg.additional_kwargs["parsed"] = json.loads(msg.content)
                except ValueError:
                    pass  # the structured-output parser reports the reply as unparsable
        return result

    # -------------------------------------------------------------- BaseChatModel extension points
    async def _agenerate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        payload = self._prepare(messages, stop, kwargs)
        rf = payload.get("response_format")
        url, headers = self.url_and_headers()
        try:
            data = await self._apost(url, headers, payload)
        except OpenAIHTTPError as e:
            fallback = json_object_format(rf) if isinstance(rf, dict) else None
            if fallback is None or rf == fallback or not self._compat() or not _rejects_json_schema(e):
                raise
            self.json_object_only = True
            data = await self._apost(url, headers, {**payload, "response_format": fallback})
        return self._finish(data, rf)

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        payload = self._prepare(messages, stop, kwargs)
        rf = payload.get("response_format")
        url, headers = self.url_and_headers()
        try:
            data = self._post(url, headers, payload)
        except OpenAIHTTPError as e:
            fallback = json_object_format(rf) if isinstance(rf, dict) else None
            if fallback is None or rf == fallback or not self._compat() or not _rejects_json_schema(e):
                raise
            self.json_object_only = True
            data = self._post(url, headers, {**payload, "response_format": fallback})
        return self._finish(data, rf)

    async def ainvoke(self, input: Any, config: Any = None, *, stop: list[str] | None = None, **kwargs: Any) -> Any:
        """``BaseChatModel.ainvoke``'s result; without LangChain's callback machinery when nothing observes the
        call (:func:`observed`): the same AIMessage (response metadata merged as LangChain merges it, a
        ``lc_run-`` id) for about half the CPU (``python -m sgieval.bench.throughput``)."""
        if observed(self, config, kwargs):
            return await super().ainvoke(input, config, stop=stop, **kwargs)
        result = await self._agenerate(to_messages(input), stop=stop, **kwargs)
        gen = result.generations[0]
        msg = gen.message
        if msg.id is None:
            msg.id = f"{RUN_ID_PREFIX}-{uuid.uuid4()}-0"
        meta = {**(gen.generation_info or {}), **msg.response_metadata}
        if len(result.generations) == 1 and result.llm_output is not None:
            meta = {**result.llm_output, **meta}
        msg.response_metadata = meta
        return msg

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable | Any],
        *,
        tool_choice: dict | str | bool | None = None,
        strict: bool | None = None,
        parallel_tool_calls: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """This model with ``tools`` bound (``convert_to_openai_tool`` for each).

        Args:
            tools: LangChain tools, pydantic classes, functions or OpenAI tool dicts.
            tool_choice: a tool's name (that tool), ``"auto"``, ``"none"``, ``"required"``/``"any"``/True (some
                tool), an OpenAI ``tool_choice`` dict, or None/False (the server's default).
            strict: sent as each function's ``strict`` when not None.
            parallel_tool_calls: sent when not None.
            **kwargs: further request keywords.

        Returns:
            A runnable that sends the tools with every call.

        Raises:
            ValueError: a ``tool_choice`` of another type.
        """
        formatted = [convert_to_openai_tool(t, strict=strict) for t in tools]
        names = [t["function"]["name"] for t in formatted if "function" in t]
        if parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = parallel_tool_calls
        if tool_choice:
            if isinstance(tool_choice, bool) or tool_choice == "any":
                tool_choice = "required"
            elif isinstance(tool_choice, str) and tool_choice in names:
                tool_choice = {"type": "function", "function": {"name": tool_choice}}
            elif not isinstance(tool_choice, (str, dict)):
                raise ValueError(f"Unrecognized tool_choice type {type(tool_choice).__name__}: {tool_choice!r}")
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def with_structured_output(
        self,
        schema: dict | type | None = None,
        *,
        method: Literal["json_schema", "function_calling", "json_mode"] = "json_schema",
        include_raw: bool = False,
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, Any]:
        """This model answering in ``schema``'s shape.

        Args:
            schema: a pydantic class (replies parse into it) or a JSON schema dict (replies parse into a dict);
                None only with ``method="json_mode"``.
            method: ``"json_schema"`` (``response_format`` type ``json_schema``), ``"function_calling"`` (one
                forced tool call) or ``"json_mode"`` (``response_format`` type ``json_object``).
            include_raw: return ``{"raw", "parsed", "parsing_error"}`` instead of the parsed value.
            strict: the schema's ``strict`` flag, sent when not None.
            **kwargs: further request keywords.

        Returns:
            A runnable: the bound model piped into the parser.

        Raises:
            ValueError: an unknown ``method``, or no ``schema`` for a method that needs one.
        """
        is_model = isinstance(schema, type) and issubclass(schema, BaseModel)
        llm: Runnable
        if method == "json_mode":
            llm = self.bind(response_format={"type": "json_object"}, **kwargs)
            parser: Runnable = PydanticOutputParser(pydantic_object=schema) if is_model else JsonOutputParser()  # type: ignore[arg-type]
        elif schema is None:
            raise ValueError(f"with_structured_output(method={method!r}) needs a schema")
        elif method == "json_schema":
            llm = self.bind(response_format=json_schema_format(schema, strict=strict), **kwargs)
            parser = PydanticOutputParser(pydantic_object=schema) if is_model else JsonOutputParser()  # type: ignore[arg-type]
        elif method == "function_calling":
            tool = convert_to_openai_tool(schema, strict=strict)
            name = tool["function"]["name"]
            llm = self.bind_tools([schema], tool_choice=name, parallel_tool_calls=False, strict=strict, **kwargs)
            parser = (
                PydanticToolsParser(tools=[schema], first_tool_only=True)  # type: ignore[list-item]
                if is_model
                else JsonOutputKeyToolsParser(key_name=name, first_tool_only=True)
            )
        else:
            raise ValueError(f"unknown structured-output method {method!r}: json_schema, function_calling or json_mode")
        if not include_raw:
            return llm | parser
        parsed = RunnablePassthrough.assign(parsed=lambda x: parser.invoke(x["raw"]), parsing_error=lambda _: None)
        failed = RunnablePassthrough.assign(parsed=lambda _: None)
        with_fallback = parsed.with_fallbacks([failed], exception_key="parsing_error")
        return RunnableMap(raw=llm) | with_fallback

    # -------------------------------------------------------------- HTTP
    async def _apost(self, url: str, headers: dict[str, str], payload: dict) -> Any:
        import aiohttp

        total, connect, read = self._timeout_s()
        session = await _session()
        timeout = aiohttp.ClientTimeout(total=total, sock_connect=connect, sock_read=read)
        async with session.post(url, data=wire_body(payload), headers=headers, timeout=timeout) as resp:
            raw = await resp.read()
            if resp.status >= 300:
                raise _http_error(resp.status, resp.headers, raw, url)
        return _json_reply(raw, url)

    def _post(self, url: str, headers: dict[str, str], payload: dict) -> Any:
        import httpx

        total, connect, read = self._timeout_s()
        timeout = httpx.Timeout(total, connect=connect, read=read) if total is None else httpx.Timeout(total)
        resp = httpx.post(url, content=wire_body(payload), headers=headers, timeout=timeout)
        if resp.status_code >= 300:
            raise _http_error(resp.status_code, resp.headers, resp.content, url)
        return _json_reply(resp.content, url)


def json_schema_format(schema: Any, *, strict: bool | None = None) -> dict[str, Any]:
    """The ``response_format`` of type ``json_schema`` for a pydantic class or a JSON schema dict: ``{"type":
    "json_schema", "json_schema": {"name", "schema"[, "description"][, "strict"]}}``."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        spec: dict[str, Any] = {"name": schema.__name__, "schema": schema.model_json_schema()}
        doc = " ".join((schema.__doc__ or "").split())
        if doc:
            spec["description"] = doc[:500]
    elif isinstance(schema, dict):
        if schema.get("type") == "json_schema" and "json_schema" in schema:
            return schema
        spec = {"name": schema.get("title", "response"), "schema": schema}
        if schema.get("description"):
            spec["description"] = schema["description"]
    else:
        tool = convert_to_openai_tool(schema)["function"]
        spec = {"name": tool["name"], "schema": tool.get("parameters", {})}
    if strict is not None:
        spec["strict"] = strict
    return {"type": "json_schema", "json_schema": spec}


def _http_error(status: int, headers: Any, raw: bytes, url: str) -> "OpenAIHTTPError":
    text = raw.decode("utf-8", "replace")[:2000]
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = text
    if status == 500 and "validation error" in text:  # llama-cpp-python: a bad request, not a server fault
        status = 400
    return OpenAIHTTPError(status, headers, body, url)


def _json_reply(raw: bytes, url: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError as e:
        raise ValueError(f"non-JSON reply from {url}: {raw[:200]!r}") from e


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
