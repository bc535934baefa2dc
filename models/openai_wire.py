"""The chat-completions wire format as the openai SDK sends and reads it, without the SDK: request bodies
(:func:`message_dict`, :func:`wire_body`, :func:`compat_payload` for stricter servers), replies
(:func:`chat_result`: ``ChatOpenAI``'s AIMessage), structured-output formats and parsers."""

from __future__ import annotations

import json
from typing import Any, Mapping

from langchain_core.language_models import LanguageModelInput
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
from langchain_core.output_parsers.openai_tools import (
    JsonOutputKeyToolsParser,
    PydanticToolsParser,
    make_invalid_tool_call,
    parse_tool_call,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel


class OpenAIHTTPError(Exception):
    """A non-2xx reply (``body``: parsed JSON or at most 2,000 characters of text)."""

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


def compat_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """Adapt a chat-completions body, in place, for a server stricter than OpenAI's (llama-cpp-python): no null
    assistant content, text-part lists as one string, ``max_completion_tokens`` also as ``max_tokens``."""
    for m in payload.get("messages") or []:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "assistant" and m.get("content") is None:
            m["content"] = ""
        parts = m.get("content")
        if (
            isinstance(parts, list)
            and parts
            and all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in parts)
        ):
            m["content"] = "".join(p["text"] for p in parts)
    if "max_completion_tokens" in payload and "max_tokens" not in payload:
        payload["max_tokens"] = payload["max_completion_tokens"]
    return payload


def json_object_format(response_format: dict[str, Any]) -> dict[str, Any] | None:
    """``{"type": "json_object", "schema": S}`` (llama-cpp-python's form) for a ``json_schema`` format, else None."""
    if response_format.get("type") != "json_schema":
        return None
    schema = (response_format.get("json_schema") or {}).get("schema")
    return {"type": "json_object", "schema": schema} if isinstance(schema, dict) else {"type": "json_object"}


def rejects_json_schema(err: "OpenAIHTTPError") -> bool:
    """Whether ``err`` says the server does not know ``response_format`` type ``json_schema``."""
    text = json.dumps(err.body) if not isinstance(err.body, str) else err.body
    return err.status_code in (400, 422, 500) and "response_format" in text and "json_schema" in text


SDK_BODY_ORDER = tuple(
    "model stream service_tier messages audio frequency_penalty function_call functions logit_bias logprobs "
    "max_completion_tokens max_tokens metadata modalities moderation n parallel_tool_calls prediction "
    "presence_penalty prompt_cache_key prompt_cache_options prompt_cache_retention reasoning_effort "
    "response_format safety_identifier seed stop store stream_options temperature tool_choice tools top_logprobs "
    "top_p user verbosity web_search_options".split()
)
"""Key order of the chat-completions body the openai SDK sends (checked by tests/models/test_openai_contract.py)."""


def wire_body(payload: dict[str, Any]) -> bytes:
    """The request body exactly as the openai SDK sends ``payload`` (``extra_body`` merged at the top level);
    ValueError for NaN or infinite numbers."""
    rank = {k: i for i, k in enumerate(SDK_BODY_ORDER)}
    body = {k: payload[k] for k in sorted(payload, key=lambda k: rank.get(k, len(rank))) if k != "extra_body"}
    body.update(payload.get("extra_body") or {})
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


_SKIPPED_BLOCKS = ("tool_use", "thinking", "reasoning_content", "function_call", "code_interpreter_call")


def _tool_call_dict(tc: Mapping[str, Any], valid: bool) -> dict[str, Any]:
    args = json.dumps(tc["args"], ensure_ascii=False) if valid else tc.get("args")
    return {"type": "function", "id": tc.get("id"), "function": {"name": tc.get("name"), "arguments": args}}


def message_dict(message: BaseMessage) -> dict[str, Any]:
    """One LangChain message as a chat-completions message (the dict ``ChatOpenAI`` sends, key order included).

    Args:
        message: a System, Human, AI, Tool, Function or Chat message.

    Returns:
        ``{"content", ["name"], "role", ...}``.

    Raises:
        TypeError: another message type.
    """
    content = message.content  # block lists without the block types chat completions rejects
    if isinstance(content, list) and content:
        content = [b for b in content if not (isinstance(b, dict) and b.get("type") in _SKIPPED_BLOCKS)]
    out: dict[str, Any] = {"content": content}
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
            text = [b for b in message.content if not (isinstance(b, dict) and b.get("type") == "tool_call")]
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
    return [HumanMessage(input)] if isinstance(input, str) else convert_to_messages(input)  # type: ignore[arg-type]


COMPLETION_FIELDS: dict[str, dict[str, Any]] = {
    part: dict.fromkeys(names.split())
    for part, names in (
        ("completion", "metadata moderation service_tier system_fingerprint usage"),
        ("choice", "logprobs"),
        ("message", "content refusal annotations audio function_call tool_calls"),
        ("usage", "completion_tokens_details prompt_tokens_details"),
    )
}
"""The optional fields the openai SDK's response models add to a reply (a table: importing openai costs about
0.4 s of CPU; tests/models/test_openai_direct.py compares it with the package)."""


def sdk_shape(data: dict[str, Any]) -> dict[str, Any]:
    """The reply ``data`` with the optional fields the openai SDK adds (:data:`COMPLETION_FIELDS`)."""
    f = COMPLETION_FIELDS
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
    """LangChain usage metadata from an OpenAI ``usage`` object (a ``priority``/``flex`` tier prefixes the details)."""
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
    """A chat-completion reply (parsed JSON) as the ``ChatResult`` ``ChatOpenAI`` gives.

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
        info = {"finish_reason": choice.get("finish_reason"), "logprobs": choice["logprobs"]}  # sdk_shape adds it
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


def tool_parser(schema: Any) -> tuple[str, Runnable]:
    """The tool name of ``schema`` and the parser of a reply's first call of it (into a pydantic ``schema``, else
    a dict).

    Args:
        schema: a pydantic class, a JSON schema dict or anything ``convert_to_openai_tool`` takes.

    Returns:
        ``(tool name, parser)``.
    """
    name = convert_to_openai_tool(schema)["function"]["name"]
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return name, PydanticToolsParser(tools=[schema], first_tool_only=True)
    return name, JsonOutputKeyToolsParser(key_name=name, first_tool_only=True)


def structured_runnable(llm: Runnable, parser: Runnable, include_raw: bool) -> Runnable:
    """``llm | parser``, or with ``include_raw`` a runnable giving ``{"raw", "parsed", "parsing_error"}`` (as
    LangChain's chat models do).

    Args:
        llm: the bound chat model.
        parser: the reply's parser.
        include_raw: keep the raw reply and the parse error.

    Returns:
        The runnable.
    """
    if not include_raw:
        return llm | parser
    parsed = RunnablePassthrough.assign(parsed=lambda x: parser.invoke(x["raw"]), parsing_error=lambda _: None)
    failed = RunnablePassthrough.assign(parsed=lambda _: None)
    return RunnableMap(raw=llm) | parsed.with_fallbacks([failed], exception_key="parsing_error")


def json_schema_format(schema: Any, *, strict: bool | None = None) -> dict[str, Any]:
    """The ``response_format`` of type ``json_schema`` for a pydantic class or a JSON schema dict."""
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


def reply_json(status: int, headers: Any, raw: bytes, url: str) -> Any:
    """The parsed reply; OpenAIHTTPError for a non-2xx ``status``, ValueError for a body that is not JSON."""
    if status >= 300:
        text = raw.decode("utf-8", "replace")[:2000]
        try:
            body: Any = json.loads(text)
        except ValueError:
            body = text
        if status == 500 and "validation error" in text:  # llama-cpp-python: a bad request, not a server fault
            status = 400
        raise OpenAIHTTPError(status, headers, body, url)
    try:
        return json.loads(raw)
    except ValueError as e:
        raise ValueError(f"non-JSON reply from {url}: {raw[:200]!r}") from e


REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Message fields in which OpenAI-compatible servers return a reasoning model's thinking apart from its content."""
