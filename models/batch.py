"""Batch mode (``--batch``): target and judge calls go through the provider's batch API (OpenAI and compatible
servers with ``/v1/batches``, Anthropic) at the batch price.  Batch chat models send the body a direct call sends
through the run's :class:`BatchCollector` and get the reply body a direct call gets.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Sequence

import httpx
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.messages.ai import InputTokenDetails, UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, SecretStr

from ..core import InputError, ModelRef, current_settings
from .base import NamedModel
from .batch_collector import ANTHROPIC_BASE, Endpoint, current_collector
from .calls import message_text as _text
from .openai_direct import OFFICIAL_BASE, ChatOpenAIDirect
from .openai_wire import structured_runnable, tool_parser, wire_body

__all__ = ["BatchChatOpenAI", "ChatAnthropicBatch", "batch_model", "batch_settings", "check_batch_models", "is_batched"]

DEFAULT_ANTHROPIC_MAX_TOKENS = 4096
"""``max_tokens`` of an Anthropic request (the Messages API requires one) when the run sets none."""


class BatchChatOpenAI(ChatOpenAIDirect):
    """:class:`~sgieval.models.openai_direct.ChatOpenAIDirect` whose requests go in OpenAI batches (async only)."""

    @property
    def _llm_type(self) -> str:
        return "openai-compatible-batch"

    def endpoint(self) -> Endpoint:
        key = self.openai_api_key.get_secret_value() if self.openai_api_key is not None else ""
        return Endpoint("openai", (self.openai_api_base or OFFICIAL_BASE).rstrip("/"), key)

    async def _apost(self, url: str, headers: dict[str, str], payload: dict) -> Any:
        body = json.loads(wire_body(payload))  # exactly what a direct call sends (extra_body merged)
        body.pop("stream", None)
        return await current_collector().request(self.endpoint(), body)

    def _post(self, url: str, headers: dict[str, str], payload: dict) -> Any:
        raise NotImplementedError("batch mode calls are asynchronous only (use ainvoke)")


def _blocks(content: Any) -> list[dict[str, Any]]:
    """Message content as Anthropic text blocks (with their ``cache_control``)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    out: list[dict[str, Any]] = []
    for b in content if isinstance(content, list) else [content]:
        if isinstance(b, dict) and b.get("type") == "text":
            block: dict[str, Any] = {"type": "text", "text": str(b.get("text", ""))}
            if isinstance(b.get("cache_control"), dict):
                block["cache_control"] = dict(b["cache_control"])
            out.append(block)
        elif isinstance(b, str):
            out.append({"type": "text", "text": b})
    return out


def anthropic_messages(
    messages: Sequence[BaseMessage],
) -> tuple[str | list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """LangChain messages as the Messages API takes them: (system, messages), one role's consecutive messages
    merged; the system prompt stays blocks when one carries ``cache_control``."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        if isinstance(m, SystemMessage):
            system += _blocks(m.content)
        elif isinstance(m, ToolMessage):
            add("user", [{"type": "tool_result", "tool_use_id": m.tool_call_id, "content": _text(m.content)}])
        elif isinstance(m, AIMessage):
            blocks: list[dict[str, Any]] = []
            if _text(m.content).strip():
                blocks.append({"type": "text", "text": _text(m.content)})
            for tc in m.tool_calls:
                blocks.append(
                    {"type": "tool_use", "id": tc.get("id"), "name": tc["name"], "input": tc.get("args") or {}}
                )
            add("assistant", blocks or [{"type": "text", "text": ""}])
        elif m.type == "human":
            add("user", _blocks(m.content))
        else:
            raise TypeError(f"cannot send a {type(m).__name__} to the Anthropic Messages API")
    if not system:
        return None, out
    if any("cache_control" in b for b in system):
        return system, out
    return "\n\n".join(b["text"] for b in system), out


def anthropic_result(message: dict[str, Any], model_name: str) -> ChatResult:
    """An Anthropic message (a batch result) as a LangChain ChatResult."""
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        raise ValueError(f"Unexpected Anthropic message: {str(message)[:200]!r}")
    text = "".join(b.get("text", "") for b in message["content"] if isinstance(b, dict) and b.get("type") == "text")
    calls = [
        {"name": b.get("name"), "args": b.get("input") or {}, "id": b.get("id"), "type": "tool_call"}
        for b in message["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]
    u = message.get("usage") or {}
    read, write = int(u.get("cache_read_input_tokens") or 0), int(u.get("cache_creation_input_tokens") or 0)
    inp = int(u.get("input_tokens") or 0) + read + write  # LangChain's convention: input counts cached tokens too
    outp = int(u.get("output_tokens") or 0)
    details = {k: v for k, v in (("cache_read", read), ("cache_creation", write)) if v}
    usage = UsageMetadata(
        input_tokens=inp,
        output_tokens=outp,
        total_tokens=inp + outp,
        input_token_details=InputTokenDetails(**details),  # type: ignore[typeddict-item]
    )
    stop = message.get("stop_reason")
    meta = {"model_name": message.get("model", model_name), "stop_reason": stop, "id": message.get("id")}
    msg = AIMessage(content=text, tool_calls=calls, usage_metadata=usage, response_metadata=meta, id=message.get("id"))
    return ChatResult(generations=[ChatGeneration(message=msg, generation_info={"finish_reason": stop})])


class ChatAnthropicBatch(BaseChatModel):
    """A chat model for Anthropic's Messages API whose requests go in message batches (async only)."""

    model_config = ConfigDict(populate_by_name=True)

    model_name: str = Field(alias="model")
    anthropic_api_key: SecretStr | None = Field(default=None, alias="api_key")
    anthropic_api_url: str = Field(default=ANTHROPIC_BASE, alias="base_url")
    temperature: float | None = None
    max_tokens: int = DEFAULT_ANTHROPIC_MAX_TOKENS

    @property
    def _llm_type(self) -> str:
        return "anthropic-batch"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "temperature": self.temperature, "max_tokens": self.max_tokens}

    def endpoint(self) -> Endpoint:
        key = self.anthropic_api_key.get_secret_value() if self.anthropic_api_key is not None else ""
        return Endpoint("anthropic", self.anthropic_api_url.rstrip("/"), key)

    def request_params(self, messages: Sequence[BaseMessage], stop: list[str] | None = None, **kw: Any) -> dict:
        """The Messages API request body for ``messages`` and the call's keywords."""
        system, msgs = anthropic_messages(messages)
        params: dict[str, Any] = {"model": self.model_name, "max_tokens": int(kw.pop("max_tokens", self.max_tokens))}
        if system is not None:
            params["system"] = system
        params["messages"] = msgs
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if stop:
            params["stop_sequences"] = list(stop)
        for k in ("tools", "tool_choice"):
            if kw.get(k) is not None:
                params[k] = kw[k]
        return params

    async def _agenerate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        kwargs.pop("ls_structured_output_format", None)
        params = self.request_params(messages, stop, **kwargs)
        reply = await current_collector().request(self.endpoint(), params)
        return anthropic_result(reply, self.model_name)

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        raise NotImplementedError("batch mode calls are asynchronous only (use ainvoke)")

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: dict | str | bool | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """This model with ``tools`` bound as Anthropic tools; ``tool_choice``: a name, "any"/True/"required",
        "auto", or None."""
        fns = [convert_to_openai_tool(t)["function"] for t in tools]
        formatted = [
            {
                "name": fn["name"],
                "description": fn.get("description", ""),
                "input_schema": fn.get("parameters") or {"type": "object", "properties": {}},
            }
            for fn in fns
        ]
        names = [t["name"] for t in formatted]
        if tool_choice:
            if tool_choice is True or tool_choice in ("any", "required"):
                kwargs["tool_choice"] = {"type": "any"}
            elif tool_choice == "auto":
                kwargs["tool_choice"] = {"type": "auto"}
            elif isinstance(tool_choice, str) and tool_choice in names:
                kwargs["tool_choice"] = {"type": "tool", "name": tool_choice}
            elif isinstance(tool_choice, dict):
                kwargs["tool_choice"] = tool_choice
            else:
                raise ValueError(f"Unrecognized tool_choice {tool_choice!r}")
        return self.bind(tools=formatted, **kwargs)

    def with_structured_output(
        self, schema: dict | type, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, Any]:
        """This model answering in ``schema``'s shape through one forced tool call."""
        kwargs.pop("method", None)
        kwargs.pop("strict", None)
        name, parser = tool_parser(schema)
        return structured_runnable(self.bind_tools([schema], tool_choice=name, **kwargs), parser, include_raw)


def _batch_chat(model: NamedModel) -> BatchChatOpenAI | ChatAnthropicBatch | None:
    """``model``'s batch chat model (its chat model, or the model a binding wraps), else None."""
    chat = model.chat
    for _ in range(4):
        if isinstance(chat, (BatchChatOpenAI, ChatAnthropicBatch)):
            return chat
        chat = getattr(chat, "bound", None)
    return None


def is_batched(model: NamedModel) -> bool:
    """Whether ``model``'s calls go through the batch collector."""
    return _batch_chat(model) is not None


def refuse_batch(model: str, why: str) -> InputError:
    """The error for a ``--batch`` run with a model whose provider has no batch API."""
    return InputError(
        f"--batch: {why}, so its calls cannot go through a batch API (batch mode supports OpenAI and "
        "OpenAI-compatible servers with /v1/batches, and Anthropic)",
        what=model,
        fix="drop --batch (the calls are then made directly), or use an openai: or anthropic: model",
    )


def batch_model(model: NamedModel, *, settings: Any = None) -> NamedModel:
    """``model`` with a batch chat model (a replay as it is).

    Args:
        model: a resolved target or judge.
        settings: the run's settings object; None: the current ones.

    Returns:
        The NamedModel whose calls go in batches.

    Raises:
        InputError: the model's provider has no batch API.
    """
    if model.is_replay or is_batched(model):
        return model
    chat = model.chat
    if isinstance(chat, ChatOpenAIDirect):
        fields = {k: getattr(chat, k) for k in type(chat).model_fields}
        return dataclasses.replace(model, chat=BatchChatOpenAI(**fields))
    ref = model.ref
    provider = ref.provider if ref is not None else ""
    if provider in ("openai", "openai-api") and type(chat).__name__ == "ChatOpenAI":  # the sdk transport
        key = getattr(chat, "openai_api_key", None)
        same: dict[str, Any] = {
            "model_name": getattr(chat, "model_name", ref.name if ref else model.name),
            "openai_api_base": getattr(chat, "openai_api_base", None),
            "openai_api_key": key.get_secret_value() if key is not None else None,
            "temperature": getattr(chat, "temperature", None),
            "max_tokens": getattr(chat, "max_tokens", None),
            "reasoning_effort": getattr(chat, "reasoning_effort", None),
        }
        return dataclasses.replace(model, chat=BatchChatOpenAI(**same))
    if provider == "local":
        raise refuse_batch(model.name, "the embedded model runs on this machine and has no batch API")
    raise refuse_batch(
        model.name, f"this model ({type(chat).__name__ if chat is not None else 'no chat model'}) has no batch API"
    )


def anthropic_batch_model(ref: ModelRef, role: Any, *, temperature: float | None, settings: Any = None) -> NamedModel:
    """An ``anthropic:<model>`` NamedModel for a ``--batch`` run (InputError without ``ANTHROPIC_API_KEY``)."""
    settings = settings if settings is not None else current_settings()
    key = settings.env_value("ANTHROPIC_API_KEY")
    if not key:
        raise InputError("no ANTHROPIC_API_KEY set", what=ref.spec, fix="export ANTHROPIC_API_KEY=<your key>")
    url = settings.env_value("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE
    params = {"temperature": temperature} if temperature is not None else {}
    chat = ChatAnthropicBatch(model=ref.name, api_key=key, base_url=url, temperature=temperature)
    return NamedModel(name=ref.spec, role=role, chat=chat, provider="anthropic", params=params, ref=ref)


def check_batch_models(models: Sequence[NamedModel]) -> None:
    """Check before any call of a ``--batch`` run that every model is a batch model and every server other than
    api.openai.com answers ``GET /v1/batches``.

    Args:
        models: the run's models that make calls.

    Raises:
        InputError: naming the model whose server has no batch endpoints.
    """
    seen: dict[str, str | None] = {}
    for m in models:
        if m.is_replay:
            continue
        chat = _batch_chat(m)
        if chat is None:
            raise refuse_batch(m.name, "its chat model has no batch API")
        if not isinstance(chat, BatchChatOpenAI) or "api.openai.com" in (chat.openai_api_base or OFFICIAL_BASE):
            continue
        ep = chat.endpoint()
        if ep.base_url not in seen:
            try:
                r = httpx.get(
                    ep.base_url + "/batches",
                    params={"limit": 1},
                    headers={"Authorization": f"Bearer {ep.key}"},
                    timeout=30,
                )
                seen[ep.base_url] = None if r.status_code < 300 else f"HTTP {r.status_code}"
            except httpx.HTTPError as e:
                seen[ep.base_url] = f"{type(e).__name__}: {e}"
        why = seen[ep.base_url]
        if why is not None:
            raise refuse_batch(m.name, f"its server {ep.shown} does not serve /v1/batches ({why})")


def batch_settings(settings: Any) -> dict[str, Any]:
    """The collector's timing from the run's settings (``SGIEVAL_BATCH_WINDOW``, ``SGIEVAL_BATCH_POLL``).

    Args:
        settings: the run's settings object.

    Returns:
        ``{"window_s", "poll_s"}`` in seconds.
    """
    return {
        "window_s": float(getattr(settings, "batch_window", 2.0)),
        "poll_s": float(getattr(settings, "batch_poll", 30.0)),
    }
