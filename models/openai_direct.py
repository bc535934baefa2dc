"""``ChatOpenAIDirect``: sgieval's chat model for OpenAI-compatible chat-completions servers.

One pooled ``aiohttp.ClientSession`` per event loop (``httpx`` for the synchronous ``invoke``); it sends the bytes
and returns the AIMessage ``ChatOpenAI`` does (tests/models/test_openai_contract.py) for well under 1 ms of CPU a
call where ``ChatOpenAI`` takes 4-6 ms (``python -m sgieval.bench.throughput``).  ``SGIEVAL_OPENAI_TRANSPORT=sdk``
selects ``ChatOpenAI`` instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
import weakref
from urllib.parse import urlencode
from typing import Any, AsyncIterator, Callable, Literal, Mapping, Sequence

from langchain_core.callbacks import AsyncCallbackManager
from langchain_core.globals import get_debug, get_llm_cache, get_verbose
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import LC_ID_PREFIX, AIMessage, BaseMessage
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable, ensure_config
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from .openai_wire import (
    REASONING_FIELDS,
    OpenAIHTTPError,
    chat_result,
    compat_payload,
    json_object_format,
    json_schema_format,
    message_dict,
    rejects_json_schema,
    reply_json,
    structured_runnable,
    to_messages,
    tool_parser,
    wire_body,
)

__all__ = [
    "OFFICIAL_BASE",
    "ChatOpenAIDirect",
    "OpenAIHTTPError",
    "aclose_sessions",
    "compat_payload",
    "json_object_format",
    "observed",
    "wire_body",
]

OFFICIAL_BASE = "https://api.openai.com/v1"


_HOLDERS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[Any, Any]]" = weakref.WeakKeyDictionary()


async def _hold_session(loop: asyncio.AbstractEventLoop) -> AsyncIterator[Any]:
    """Owns one session (1,024 connections: calls.py's semaphores bound concurrency) until the loop closes it
    (``asyncio.run``'s ``shutdown_asyncgens``) or ``aclose``."""
    import aiohttp

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1024, limit_per_host=1024))
    try:
        yield session
    finally:
        if _HOLDERS.get(loop, (None, None))[1] is session:
            del _HOLDERS[loop]
        await session.close()


async def _session() -> Any:
    """The running loop's pooled session."""
    loop = asyncio.get_running_loop()
    held = _HOLDERS.get(loop)
    if held is None or held[1].closed:
        gen = _hold_session(loop)
        held = _HOLDERS[loop] = (gen, await gen.__anext__())
    return held[1]


async def aclose_sessions() -> None:
    """Close the running loop's pooled session (no-op when none)."""
    held = _HOLDERS.get(asyncio.get_running_loop())
    if held is not None:
        await held[0].aclose()


def observed(chat: BaseChatModel, config: Any, kwargs: Mapping[str, Any]) -> bool:
    """Whether LangChain's own ``ainvoke`` path must run for this call of ``chat``: a callback handler or tracer,
    debug/verbose, an LLM cache, a rate limiter or streaming."""
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


class ChatOpenAIDirect(BaseChatModel):
    """A chat model for any OpenAI-compatible chat-completions endpoint, taking ``ChatOpenAI``'s constructor
    arguments for what it supports (``max_retries`` unused: :func:`sgieval.models.calls.ainvoke` retries)."""

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
    """Adapt bodies for stricter servers (:func:`compat_payload`); None: for base URLs other than api.openai.com."""
    json_object_only: bool = False
    """Set once the server rejected ``json_schema``."""

    @property
    def _llm_type(self) -> str:
        return "openai-compatible"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, **self.default_params()}

    def default_params(self) -> dict[str, Any]:
        """The body's parameters before the messages (as ``ChatOpenAI``'s: None values are not sent)."""
        names = "presence_penalty frequency_penalty seed top_p logprobs top_logprobs n temperature reasoning_effort"
        optional = {k: getattr(self, k) for k in names.split()}
        optional |= {"stop": self.stop or None, "max_completion_tokens": self.max_tokens, "extra_body": self.extra_body}
        return {
            "model": self.model_name,
            "stream": False,
            **{k: v for k, v in optional.items() if v is not None},
            **self.model_kwargs,
        }

    def request_payload(self, messages: Sequence[BaseMessage], stop: list[str] | None = None, **kwargs: Any) -> dict:
        """The request body (a dict, before :func:`wire_body`) for ``messages`` and the call's keywords."""
        if stop is not None:
            kwargs["stop"] = stop
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
        """The request body this model sends (what :func:`wire_body` serialises); sends nothing.

        Args:
            messages: the messages.
            **kwargs: the call's keywords, as bound to the model.

        Returns:
            The body as a dict.
        """
        kwargs.pop("ls_structured_output_format", None)  # tracing metadata only, never sent
        kwargs.pop("structured_output_format", None)
        payload = self.request_payload(messages, **kwargs)
        rf = payload.get("response_format")
        if isinstance(rf, type) and issubclass(rf, BaseModel):
            rf = payload["response_format"] = json_schema_format(rf)
        if rf is not None:
            payload["stream"] = False  # the openai SDK's parse() sends "stream": false with a response_format
        if self._compat():
            compat_payload(payload)
            if isinstance(rf, dict) and self.json_object_only:
                payload["response_format"] = json_object_format(rf) or rf
        return payload

    def _compat(self) -> bool:
        official = "api.openai.com" in (self.openai_api_base or OFFICIAL_BASE).lower()
        return not official if self.server_compat is None else self.server_compat

    def url_and_headers(self) -> tuple[str, dict[str, str]]:
        """The chat-completions URL and the request headers."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self.openai_api_key.get_secret_value() if self.openai_api_key is not None else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        if self.openai_organization:
            headers["OpenAI-Organization"] = self.openai_organization
        headers.update({str(k): str(v) for k, v in (self.default_headers or {}).items()})
        url = f"{(self.openai_api_base or OFFICIAL_BASE).rstrip('/')}/chat/completions"
        if self.default_query:
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

    def _finish(self, data: Any, rf: Any) -> ChatResult:
        result = chat_result(data, self.model_name)
        first = (data["choices"][0].get("message") or {}) if result.generations else {}  # a dict: chat_result read it
        text = [v for f in REASONING_FIELDS if isinstance(v := first.get(f), str) and v.strip()]
        if text:  # the first choice's reasoning apart from its content (METRICS.md D.8)
            result.generations[0].message.additional_kwargs["reasoning_content"] = text[0]
        if isinstance(rf, dict) and rf.get("type") in ("json_schema", "json_object") and result.generations:
            msg = result.generations[0].message
            with contextlib.suppress(ValueError, TypeError):  # the structured-output parser reports it unparsable
                msg.additional_kwargs["parsed"] = json.loads(msg.content)  # type: ignore[arg-type]
        return result

    def _fallback(self, payload: dict, err: OpenAIHTTPError) -> dict:
        """``payload`` in the ``json_object`` format when a stricter server rejected ``json_schema``, else ``err``."""
        rf = payload.get("response_format")
        fallback = json_object_format(rf) if isinstance(rf, dict) else None
        if fallback is None or rf == fallback or not self._compat() or not rejects_json_schema(err):
            raise err
        self.json_object_only = True
        return {**payload, "response_format": fallback}

    async def _agenerate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        payload = self.sent_payload(messages, stop=stop, **kwargs)
        url, headers = self.url_and_headers()
        try:
            data = await self._apost(url, headers, payload)
        except OpenAIHTTPError as e:
            data = await self._apost(url, headers, self._fallback(payload, e))
        return self._finish(data, payload.get("response_format"))

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        payload = self.sent_payload(messages, stop=stop, **kwargs)
        url, headers = self.url_and_headers()
        try:
            data = self._post(url, headers, payload)
        except OpenAIHTTPError as e:
            data = self._post(url, headers, self._fallback(payload, e))
        return self._finish(data, payload.get("response_format"))

    async def ainvoke(self, input: Any, config: Any = None, *, stop: list[str] | None = None, **kwargs: Any) -> Any:
        """``BaseChatModel.ainvoke``'s result, without LangChain's callbacks when nothing observes the call."""
        if observed(self, config, kwargs):
            return await super().ainvoke(input, config, stop=stop, **kwargs)
        result = await self._agenerate(to_messages(input), stop=stop, **kwargs)
        gen = result.generations[0]
        msg = gen.message
        if msg.id is None:
            msg.id = f"{LC_ID_PREFIX}-{uuid.uuid4()}-0"
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
            tool_choice: a tool's name, ``"auto"``, ``"none"``, ``"required"``/``"any"``/True, a dict, or None.
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
            schema: a pydantic class or a JSON schema dict; None only with ``method="json_mode"``.
            method: ``"json_schema"``, ``"function_calling"`` (one forced tool call) or ``"json_mode"``.
            include_raw: return ``{"raw", "parsed", "parsing_error"}`` instead of the parsed value.
            strict: the schema's ``strict`` flag, sent when not None.
            **kwargs: further request keywords.

        Returns:
            A runnable: the bound model piped into the parser.

        Raises:
            ValueError: an unknown ``method``, or no ``schema`` for a method that needs one.
        """
        is_model = isinstance(schema, type) and issubclass(schema, BaseModel)
        parser: Runnable = PydanticOutputParser(pydantic_object=schema) if is_model else JsonOutputParser()  # type: ignore[arg-type]
        llm: Runnable
        if method == "json_mode":
            llm = self.bind(response_format={"type": "json_object"}, **kwargs)
        elif schema is None:
            raise ValueError(f"with_structured_output(method={method!r}) needs a schema")
        elif method == "json_schema":
            llm = self.bind(response_format=json_schema_format(schema, strict=strict), **kwargs)
        elif method == "function_calling":
            name, parser = tool_parser(schema)
            llm = self.bind_tools([schema], tool_choice=name, parallel_tool_calls=False, strict=strict, **kwargs)
        else:
            raise ValueError(f"unknown structured-output method {method!r}: json_schema, function_calling or json_mode")
        return structured_runnable(llm, parser, include_raw)

    async def _apost(self, url: str, headers: dict[str, str], payload: dict) -> Any:
        import aiohttp

        total, connect, read = self._timeout_s()
        session = await _session()
        timeout = aiohttp.ClientTimeout(total=total, sock_connect=connect, sock_read=read)
        async with session.post(url, data=wire_body(payload), headers=headers, timeout=timeout) as resp:
            return reply_json(resp.status, resp.headers, await resp.read(), url)

    def _post(self, url: str, headers: dict[str, str], payload: dict) -> Any:
        import httpx

        total, connect, read = self._timeout_s()
        timeout = httpx.Timeout(total, connect=connect, read=read) if total is None else httpx.Timeout(total)
        resp = httpx.post(url, content=wire_body(payload), headers=headers, timeout=timeout)
        return reply_json(resp.status_code, resp.headers, resp.content, url)
